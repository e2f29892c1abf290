#include "kernel_args.hpp"

#include <fmt/format.h>

#include <cstring>

#include "kiln/codegen/loop_layout.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::detail {

using codegen::AbiArg;
using codegen::AbiKind;
using codegen::AbiLayout;

std::byte* KernelArgs::begin(const AbiArg& a, AbiLayout& l) {
  l = codegen::abi_layout(a, index_bits_);
  used_ = (used_ + l.align - 1) / l.align * l.align;
  if (used_ + l.size > kCapacity || count_ == kMaxArgs)
    throw ValueError(fmt::format("kernel arguments need more than {} bytes", kCapacity));
  std::byte* p = buffer_ + used_;
  std::memset(p, 0, l.size);  // padding bytes are defined
  args_[count_++] = p;
  used_ += l.size;
  return p;
}

void KernelArgs::put_indices(std::byte*& p, std::int64_t v) noexcept {
  if (index_bits_ == 64) {
    std::memcpy(p, &v, 8);
    p += 8;
  } else {
    const auto x = static_cast<std::int32_t>(v);
    std::memcpy(p, &x, 4);
    p += 4;
  }
}

void KernelArgs::put_value(dtype t, const void* bytes) {
  AbiLayout l;
  std::byte* out = begin({.kind = AbiKind::value, .type = t}, l);
  std::memcpy(out, bytes, l.value_size);
}

void KernelArgs::put_pointer(const void* p) {
  AbiLayout l;
  std::byte* out = begin({.kind = AbiKind::pointer}, l);
  std::memcpy(out, &p, 8);
}

void KernelArgs::put_strided(const void* p, const std::int64_t* strides, int ndim) {
  AbiLayout l;
  std::byte* out = begin({.kind = AbiKind::strided, .ndim = ndim}, l);
  std::memcpy(out, &p, 8);
  out += 8;
  for (std::uint32_t d = 0; d < l.indices; ++d) put_indices(out, strides[d]);
}

void KernelArgs::put_raw_array(const void* p, std::int64_t size, const std::int64_t* shape,
                               const std::int64_t* strides, int ndim) {
  AbiLayout l;
  std::byte* out = begin({.kind = AbiKind::raw_array, .ndim = ndim}, l);
  std::memcpy(out, &p, 8);
  out += 8;
  put_indices(out, size);
  const int n = (int(l.indices) - 1) / 2;  // max(ndim, 1)
  for (int d = 0; d < n; ++d) put_indices(out, ndim ? shape[d] : 1);
  for (int d = 0; d < n; ++d) put_indices(out, ndim ? strides[d] : 0);
}

void KernelArgs::put_index(std::int64_t v) {
  AbiLayout l;
  std::byte* out = begin({.kind = AbiKind::index}, l);
  put_indices(out, v);
}

void KernelArgs::put_dims(const std::int64_t* dims, int ndim) {
  AbiLayout l;
  std::byte* out = begin({.kind = AbiKind::dims, .ndim = ndim}, l);
  for (std::uint32_t d = 0; d < l.indices; ++d) put_indices(out, dims[d]);
}

void KernelArgs::put_loop_dims(const std::int64_t* extents, const std::int64_t* steps,
                               const std::int64_t* divisors, int ndim, std::int64_t tile) {
  AbiLayout l;
  std::byte* out = begin({.kind = AbiKind::loop_dims, .ndim = ndim}, l);
  for (int d = 0; d < ndim; ++d) put_indices(out, extents[d]);
  for (int d = 0; d < ndim; ++d) put_indices(out, steps[d]);
  // Then three arrays of ndim: divisors, multipliers, shifts.
  const std::size_t width = std::size_t(index_bits_ / 8), row = width * std::size_t(ndim);
  for (int d = 0; d < ndim; ++d) {
    const auto f = codegen::fast_divisor(divisors[d], index_bits_);
    std::byte* p = out + width * std::size_t(d);
    put_indices(p, f.divisor);
    p += row - width;
    put_indices(p, f.multiplier);
    p += row - width;
    put_indices(p, f.shift);
  }
  out += 3 * row;
  put_indices(out, tile);
}

}  // namespace kiln::detail
