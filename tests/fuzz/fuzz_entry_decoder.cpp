// libFuzzer target: the cache entry decoder (cache::decode_entry) and the cubin reader
// (cache::inspect_cubin), on any bytes, plus the file-name rules of a cache folder. Neither may
// read out of bounds or throw; a decoded entry must re-encode to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "kiln/cache/cache_layout.hpp"
#include "kiln/cache/cubin_info.hpp"
#include "kiln/cache/entry_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The key the header claims, so inputs get past the key check and reach the payload.
  kiln::cache::Key key{0, 0};
  if (size >= 32) {
    std::memcpy(&key.hi, data + 16, 8);
    std::memcpy(&key.lo, data + 24, 8);
  }
  std::string why;
  if (auto bin = kiln::cache::decode_entry(bytes, key, &why)) {
    if (kiln::cache::encode_entry(key, *bin) != bytes) __builtin_trap();
    (void)kiln::cache::inspect_cubin(bin->cubin);
  } else if (why.empty()) {
    __builtin_trap();  // a refusal always says why
  }
  const auto info = kiln::cache::inspect_cubin(bytes);
  for (const auto& k : info.kernels)
    if (k.size() > size) __builtin_trap();
  // The same bytes as a file name in a fan-out folder.
  const auto name = kiln::cache::CacheLayout::classify(bytes.substr(0, 2), bytes);
  if (name.type != kiln::cache::CacheFileType::stray && !name.key) __builtin_trap();
  (void)kiln::cache::CacheLayout::temp_writer(std::string(bytes.substr(0, 255)));
  return 0;
}
