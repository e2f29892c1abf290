#include "kiln/cache/entry_format.hpp"

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "le_bytes.hpp"

namespace kiln::cache {

using detail::get_le;
using detail::put_le;

std::string encode_entry(const Key& key, const Binary& bin) {
  std::string payload;
  payload.reserve(8 + bin.cubin.size() + 4 + 32 * bin.lowered_names.size());
  put_le<std::uint64_t>(payload, bin.cubin.size());
  payload += bin.cubin;
  put_le<std::uint32_t>(payload, static_cast<std::uint32_t>(bin.lowered_names.size()));
  for (const auto& n : bin.lowered_names) {
    put_le<std::uint32_t>(payload, static_cast<std::uint32_t>(n.size()));
    payload += n;
  }

  std::string out;
  out.reserve(kEntryHeaderSize + payload.size());
  out.append(kEntryMagic, sizeof kEntryMagic);
  put_le<std::uint32_t>(out, kCacheFormatVersion);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(kEntryHeaderSize));
  put_le<std::uint64_t>(out, key.hi);
  put_le<std::uint64_t>(out, key.lo);
  put_le<std::uint64_t>(out, payload.size());
  put_le<std::uint64_t>(out, XXH3_64bits(payload.data(), payload.size()));
  out += payload;
  return out;
}

std::optional<Binary> decode_entry(std::string_view bytes, const Key& expected, std::string* why) {
  auto bad = [&](const char* reason) -> std::optional<Binary> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (bytes.size() < kEntryHeaderSize) return bad("file shorter than the header (truncated)");
  if (std::memcmp(bytes.data(), kEntryMagic, sizeof kEntryMagic) != 0) return bad("wrong magic");
  if (get_le<std::uint32_t>(bytes, 8) != kCacheFormatVersion) return bad("unknown format version");
  if (get_le<std::uint32_t>(bytes, 12) != kEntryHeaderSize) return bad("unexpected header size");
  const Key key{get_le<std::uint64_t>(bytes, 16), get_le<std::uint64_t>(bytes, 24)};
  if (!(key == expected)) return bad("key in header does not match the file name");
  const std::uint64_t payload_size = get_le<std::uint64_t>(bytes, 32);
  if (payload_size != bytes.size() - kEntryHeaderSize)
    return bad(payload_size > bytes.size() - kEntryHeaderSize ? "payload truncated"
                                                              : "trailing bytes after payload");
  const std::string_view payload = bytes.substr(kEntryHeaderSize);
  if (XXH3_64bits(payload.data(), payload.size()) != get_le<std::uint64_t>(bytes, 40))
    return bad("payload checksum mismatch");

  // The checksum passed, so the payload is what was written; bounds are still checked so a
  // crafted file with a valid checksum cannot make us read out of range.
  Binary bin;
  std::size_t at = 0;
  auto remaining = [&] { return payload.size() - at; };
  if (remaining() < 8) return bad("payload too short for cubin size");
  const std::uint64_t cubin_size = get_le<std::uint64_t>(payload, at);
  at += 8;
  if (cubin_size > remaining()) return bad("cubin size exceeds payload");
  bin.cubin.assign(payload.substr(at, cubin_size));
  at += cubin_size;
  if (remaining() < 4) return bad("payload too short for name count");
  const std::uint32_t count = get_le<std::uint32_t>(payload, at);
  at += 4;
  if (count > remaining() / 4) return bad("name count exceeds payload");
  bin.lowered_names.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    if (remaining() < 4) return bad("payload too short for name size");
    const std::uint32_t n = get_le<std::uint32_t>(payload, at);
    at += 4;
    if (n > remaining()) return bad("name size exceeds payload");
    bin.lowered_names.emplace_back(payload.substr(at, n));
    at += n;
  }
  if (remaining() != 0) return bad("unused bytes at the end of the payload");
  return bin;
}

}  // namespace kiln::cache
