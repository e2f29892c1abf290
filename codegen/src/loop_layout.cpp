#include "kiln/codegen/loop_layout.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>

namespace kiln::codegen {

namespace {

// Stable insertion sort of the axes by descending |key stride| (a few axes: no allocation).
void sort_axes(Shape& shape, std::span<Shape> strides, int by) {
  auto key = [&](int d) { return std::abs(strides[std::size_t(by)][d]); };
  for (int d = 1; d < shape.size(); ++d)
    for (int e = d; e > 0 && key(e - 1) < key(e); --e) {
      std::swap(shape[e - 1], shape[e]);
      for (auto& s : strides) std::swap(s[e - 1], s[e]);
    }
}

}  // namespace

void collapse_dims(Shape& shape, std::span<Shape> strides, int order_by) {
  for (auto d : shape)
    if (d == 0) return;  // nothing runs; keep the shape for messages
  for (int d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] != 1) continue;
    shape.erase(d);
    for (auto& s : strides) s.erase(d);
  }
  if (order_by >= 0) sort_axes(shape, strides, order_by);
  for (int d = shape.size() - 2; d >= 0; --d) {
    bool mergeable = std::all_of(strides.begin(), strides.end(),
                                 [&](const Shape& s) { return s[d] == s[d + 1] * shape[d + 1]; });
    if (!mergeable) continue;
    shape[d] *= shape[d + 1];
    shape.erase(d + 1);
    for (auto& s : strides) {
      s[d] = s[d + 1];
      s.erase(d + 1);
    }
  }
}

bool is_contiguous_over(const Shape& shape, const Shape& strides, std::int64_t itemsize) {
  std::int64_t expected = itemsize;
  for (int d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

bool is_uniform(const Shape& strides) {
  return std::all_of(strides.begin(), strides.end(), [](std::int64_t s) { return s == 0; });
}

std::int64_t byte_span(const Shape& shape, const Shape& strides, std::int64_t itemsize) {
  std::int64_t span = itemsize;
  for (int d = 0; d < shape.size(); ++d)
    if (shape[d] > 0) span += std::abs(strides[d]) * (shape[d] - 1);
  return span;
}

int choose_index_bits(std::int64_t loop_size, std::int64_t widest_byte_span) {
  constexpr std::int64_t kLimit = std::numeric_limits<std::int32_t>::max();
  return loop_size <= kLimit && widest_byte_span <= kLimit ? 32 : 64;
}

FastDivisor fast_divisor(std::int64_t divisor, int index_bits) {
  const auto d = static_cast<std::uint64_t>(divisor);
  const int shift = std::bit_width(d - 1);       // smallest s with 2^s >= d
  __extension__ typedef unsigned __int128 u128;  // GCC and Clang: the 128-bit product
  std::uint64_t m;
  if (index_bits == 64) {
    m = std::uint64_t((u128(1) << 64) * ((u128(1) << shift) - d) / d + 1);
  } else {
    m = ((std::uint64_t(1) << 32) * ((std::uint64_t(1) << shift) - d)) / d + 1;
  }
  return {divisor, static_cast<std::int64_t>(m), shift};
}

int choose_vector_width(std::span<const VectorOperand> operands) {
  std::int64_t widest = 0;
  for (const auto& o : operands) widest = std::max(widest, o.itemsize);
  if (widest == 0 || widest >= 16) return 1;
  int width = int(16 / widest);
  auto aligned = [&](int w) {
    return std::all_of(operands.begin(), operands.end(), [&](const VectorOperand& o) {
      return o.address % std::uintptr_t(w * o.itemsize) == 0;
    });
  };
  while (width > 1 && !aligned(width)) width /= 2;
  return width;
}

}  // namespace kiln::codegen
