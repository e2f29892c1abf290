#pragma once
// Host-side storage types for float16 and bfloat16, bit-compatible with CUDA's __half and
// __nv_bfloat16, so device buffers round-trip through std::vector<kiln::half>.
//
//   std::vector<kiln::half> h = {kiln::half(1.5f)};
//   float f = static_cast<float>(h[0]);
#include <bit>
#include <cstdint>

namespace kiln {

struct half {
  std::uint16_t bits = 0;
  half() = default;
  explicit half(float f) noexcept : bits(from_float(f)) {}
  explicit operator float() const noexcept { return to_float(bits); }
  static half from_bits(std::uint16_t b) noexcept {
    half h;
    h.bits = b;
    return h;
  }
  friend bool operator==(half a, half b) noexcept { return a.bits == b.bits; }

  static std::uint16_t from_float(float f) noexcept;  // round to nearest even
  static float to_float(std::uint16_t h) noexcept;
};

struct bf16 {
  std::uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float f) noexcept : bits(from_float(f)) {}
  explicit operator float() const noexcept {
    return std::bit_cast<float>(std::uint32_t(bits) << 16);
  }
  static bf16 from_bits(std::uint16_t b) noexcept {
    bf16 h;
    h.bits = b;
    return h;
  }
  friend bool operator==(bf16 a, bf16 b) noexcept { return a.bits == b.bits; }

  static std::uint16_t from_float(float f) noexcept {
    std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    return std::uint16_t(u >> 16);
  }
};

inline float half::to_float(std::uint16_t h) noexcept {
  std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return std::bit_cast<float>(sign);
    float v = float(man) * (1.0f / 16777216.0f);  // subnormal: man * 2^-24
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

inline std::uint16_t half::from_float(float f) noexcept {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // overflow (>= 65520) -> inf
  if (a < 0x38800000u) {                        // subnormal or zero in half
    if (a < 0x33000000u) return sign;           // < 2^-25 rounds to zero
    std::uint32_t man = (a & 0x7fffffu) | 0x800000u;
    int shift = 126 - int(a >> 23);  // bits to drop: value / 2^-24 = man * 2^(e - 126)
    std::uint32_t r = man >> shift, rem = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return std::uint16_t(sign | r);
  }
  std::uint32_t r = a + 0xfffu + ((a >> 13) & 1u);  // round mantissa to 10 bits
  return std::uint16_t(sign | ((r - 0x38000000u) >> 13));
}

}  // namespace kiln
