#include "kiln/runtime/hash128.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <new>

namespace kiln {
namespace {
XXH3_state_t* state(void* p) { return static_cast<XXH3_state_t*>(p); }

template <class U>
void put_le(unsigned char* out, U v) {
  for (unsigned i = 0; i < sizeof(U); ++i)
    out[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
}
}  // namespace

std::string Hash128::hex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[std::size_t(15 - i)] = digits[(hi >> (4 * i)) & 0xf];
    s[std::size_t(31 - i)] = digits[(lo >> (4 * i)) & 0xf];
  }
  return s;
}

std::optional<Hash128> Hash128::from_hex(std::string_view s) {
  if (s.size() != 32) return std::nullopt;
  Hash128 k;
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = s[i];
    std::uint64_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<std::uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<std::uint64_t>(c - 'A' + 10);
    else
      return std::nullopt;
    std::uint64_t& half = i < 16 ? k.hi : k.lo;
    half = (half << 4) | d;
  }
  return k;
}

Hash128 hash128(const void* data, std::size_t size) noexcept {
  const XXH128_hash_t h = XXH3_128bits(data, size);
  return {h.high64, h.low64};
}

Hasher128::Hasher128() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH3_128bits_reset(state(state_));
}
Hasher128::~Hasher128() { XXH3_freeState(state(state_)); }

void Hasher128::bytes(const void* p, std::size_t n) { XXH3_128bits_update(state(state_), p, n); }

void Hasher128::u32(std::uint32_t v) {
  unsigned char b[4];
  put_le(b, v);
  bytes(b, sizeof b);
}

void Hasher128::u64(std::uint64_t v) {
  unsigned char b[8];
  put_le(b, v);
  bytes(b, sizeof b);
}

void Hasher128::str(std::string_view s) {
  u64(s.size());
  bytes(s.data(), s.size());
}

Hash128 Hasher128::digest() const {
  const XXH128_hash_t h = XXH3_128bits_digest(state(state_));
  return {h.high64, h.low64};
}

}  // namespace kiln
