#pragma once
// kiln's one 128-bit hash (xxHash3-128), used for kernel definitions, loaded-kernel keys and
// on-disk cache keys alike.
//
//   kiln::Hasher128 h;
//   h.str("kiln.elementwise");  // strings are length-prefixed: ("ab", "c") != ("a", "bc")
//   h.u32(90);
//   kiln::Hash128 key = h.digest();
//   key.hex();                  // "3f9c...": 32 lowercase hex digits
//   kiln::Hash128 k2 = kiln::hash128(&pod, sizeof pod);  // one shot over raw bytes (hot path)
//
// Integers are hashed as little-endian bytes, so a hash is the same on every host.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

struct Hash128 {
  std::uint64_t hi = 0, lo = 0;
  /// 32 lowercase hex digits, hi first.
  std::string hex() const;
  /// Inverse of hex(); nullopt unless `s` is exactly 32 hex digits.
  static std::optional<Hash128> from_hex(std::string_view s);
  friend bool operator==(const Hash128&, const Hash128&) = default;
};

/// For unordered containers: the hash is already uniform.
struct Hash128Hash {
  std::size_t operator()(const Hash128& k) const noexcept {
    return static_cast<std::size_t>(k.lo ^ (k.hi * 0x9e3779b97f4a7c15ull));
  }
};

/// One shot over raw bytes. No allocation: used on the kernel-call hit path.
Hash128 hash128(const void* data, std::size_t size) noexcept;

/// Streams fields into one hash. Each field's framing (length prefixes, fixed-width
/// little-endian integers) makes every field boundary part of the input.
class Hasher128 {
 public:
  Hasher128();
  Hasher128(const Hasher128&) = delete;
  Hasher128& operator=(const Hasher128&) = delete;
  ~Hasher128();
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void str(std::string_view s);
  void hash(const Hash128& h) { u64(h.hi), u64(h.lo); }
  Hash128 digest() const;

 private:
  void bytes(const void* p, std::size_t n);
  void* state_;  // XXH3_state_t, kept out of this header
};

}  // namespace kiln
