#include "kiln/cache/cache_key.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kiln/cache/nvrtc_compiler.hpp"
#include "le_bytes.hpp"

namespace kiln::cache {
namespace {

// Streams length-prefixed fields into XXH3-128. Without the prefixes, ("-Da", "b") and
// ("-D", "ab") would hash alike; with them, every field boundary is part of the input.
class KeyHasher {
 public:
  KeyHasher() { XXH3_128bits_reset(&state_); }
  void u32(std::uint32_t v) { raw(v); }
  void u64(std::uint64_t v) { raw(v); }
  void str(std::string_view s) {
    u64(s.size());
    XXH3_128bits_update(&state_, s.data(), s.size());
  }
  Key digest() {
    const XXH128_hash_t h = XXH3_128bits_digest(&state_);
    return Key{h.high64, h.low64};
  }

 private:
  template <class U>
  void raw(U v) {
    buf_.clear();
    detail::put_le(buf_, v);
    XXH3_128bits_update(&state_, buf_.data(), buf_.size());
  }
  XXH3_state_t state_;
  std::string buf_;
};

}  // namespace

std::string Key::hex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = digits[(hi >> (4 * i)) & 0xf];
    s[31 - i] = digits[(lo >> (4 * i)) & 0xf];
  }
  return s;
}

std::optional<Key> Key::from_hex(std::string_view s) {
  if (s.size() != 32) return std::nullopt;
  Key k;
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = s[i];
    std::uint64_t d;
    if (c >= '0' && c <= '9') d = static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') d = static_cast<std::uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = static_cast<std::uint64_t>(c - 'A' + 10);
    else return std::nullopt;
    std::uint64_t& half = i < 16 ? k.hi : k.lo;
    half = (half << 4) | d;
  }
  return k;
}

Key cache_key(const CompileRequest& req, std::string_view nvrtc_full_version) {
  KeyHasher h;
  h.str("kiln-cache-key");
  h.u32(kCacheFormatVersion);
  h.str(req.source);
  h.u64(req.options.size());
  for (const auto& o : req.options) h.str(o);
  h.u32(static_cast<std::uint32_t>(req.arch));
  h.u64(req.name_expressions.size());
  for (const auto& n : req.name_expressions) h.str(n);
  h.str(nvrtc_full_version);
  return h.digest();
}

Key cache_key(const CompileRequest& req) { return cache_key(req, nvrtc_version().full); }

}  // namespace kiln::cache
