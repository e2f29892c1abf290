// DLPack export and import (see kiln/library/dlpack.hpp).
#include "kiln/library/dlpack.hpp"

#include <fmt/format.h>

#include "kiln/library/copying.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {
namespace detail {

DLDataType to_dl_dtype(dtype t) {
  const auto bits = std::uint8_t(t.itemsize() * 8);
  switch (t.kind()) {
    case 'b':
      return {kDLBoolCode, 8, 1};
    case 'i':
      return {kDLInt, bits, 1};
    case 'u':
      return {kDLUInt, bits, 1};
    case 'c':
      return {kDLComplex, bits, 1};
    default:
      return {std::uint8_t(t == bfloat16 ? kDLBfloat : kDLFloat), bits, 1};
  }
}

dtype from_dl_dtype(DLDataType t) {
  auto fail = [&]() -> dtype {
    throw TypeError(fmt::format(
        "from_dlpack: no kiln dtype for DLPack dtype code {} with {} bits and {} lanes (kiln "
        "takes bool, int/uint 8-64, float 16/32/64, bfloat16, complex 64/128, one lane)",
        int(t.code), int(t.bits), int(t.lanes)));
  };
  if (t.lanes != 1) return fail();
  switch (t.code) {
    case kDLInt:
      switch (t.bits) {
        case 8:
          return int8;
        case 16:
          return int16;
        case 32:
          return int32;
        case 64:
          return int64;
      }
      break;
    case kDLUInt:
      switch (t.bits) {
        case 8:
          return uint8;
        case 16:
          return uint16;
        case 32:
          return uint32;
        case 64:
          return uint64;
      }
      break;
    case kDLFloat:
      switch (t.bits) {
        case 16:
          return float16;
        case 32:
          return float32;
        case 64:
          return float64;
      }
      break;
    case kDLBfloat:
      if (t.bits == 16) return bfloat16;
      break;
    case kDLComplex:
      if (t.bits == 64) return complex64;
      if (t.bits == 128) return complex128;
      break;
    case kDLBoolCode:
      if (t.bits == 8) return bool_;
      break;
  }
  return fail();
}

}  // namespace detail

namespace {

// What a kiln export owns: the array (keeping its buffer alive) and the shape/stride storage.
struct Export {
  DLManagedTensor managed{};
  ndarray array;
  std::int64_t shape[kMaxNdim] = {}, strides[kMaxNdim] = {};
};

}  // namespace

DLManagedTensor* to_dlpack(const ndarray& a_in) {
  if (!a_in.defined()) throw ValueError("to_dlpack: the array is empty (no buffer)");
  bool negative = false;
  for (auto s : a_in.strides()) negative |= s < 0;
  auto* e = new Export;
  try {
    e->array = negative ? a_in.copy() : a_in;
  } catch (...) {
    delete e;
    throw;
  }
  const ndarray& a = e->array;
  const auto isz = std::int64_t(a.itemsize());
  for (int d = 0; d < a.ndim(); ++d) {
    e->shape[d] = a.shape()[d];
    e->strides[d] = a.strides()[d] / isz;  // views keep strides a multiple of the itemsize
  }
  DLTensor& t = e->managed.dl_tensor;
  t.data = a.data();
  t.device = {kDLCUDA, a.device()};
  t.ndim = a.ndim();
  t.dtype = detail::to_dl_dtype(a.dtype());
  t.shape = e->shape;
  t.strides = e->strides;
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<Export*>(self->manager_ctx);
  };
  return &e->managed;
}

ndarray from_dlpack(DLManagedTensor* m) {
  if (!m) throw ValueError("from_dlpack: null DLManagedTensor");
  // Owned from here on: release it on every path.
  auto release = [m] {
    if (m->deleter) m->deleter(m);
  };
  Shape shape, strides;
  dtype dt;
  void* first = nullptr;
  std::int64_t extent = 0;
  try {
    const DLTensor& t = m->dl_tensor;
    if (t.device.device_type != kDLCUDA && t.device.device_type != kDLCUDAManaged)
      throw ValueError(fmt::format(
          "from_dlpack: the tensor is on DLPack device type {} (kDLCPU is 1); kiln takes CUDA "
          "device memory (kDLCUDA = 2) or managed memory (kDLCUDAManaged = 13)",
          int(t.device.device_type)));
    if (t.ndim < 0 || t.ndim > kMaxNdim)
      throw ShapeError(
          fmt::format("from_dlpack: {} dimensions (kiln takes 0 to {})", t.ndim, kMaxNdim));
    dt = detail::from_dl_dtype(t.dtype);
    const auto isz = std::int64_t(dt.itemsize());
    for (int d = 0; d < t.ndim; ++d) {
      if (t.shape[d] < 0)
        throw ValueError(
            fmt::format("from_dlpack: negative dimension {} at axis {}", t.shape[d], d));
      shape.push_back(t.shape[d]);
    }
    if (t.strides) {
      for (int d = 0; d < t.ndim; ++d) strides.push_back(t.strides[d] * isz);
    } else {
      strides = c_strides(shape, isz);
    }
    // The bytes from the first element to one past the farthest, for the Buffer's size.
    extent = shape_size(shape) ? isz : 0;
    for (int d = 0; d < t.ndim; ++d)
      if (strides[d] > 0 && shape[d] > 0) extent += strides[d] * (shape[d] - 1);
    first = static_cast<char*>(t.data) + t.byte_offset;
  } catch (...) {
    release();
    throw;
  }
  // From here the Buffer owns `m` and runs its deleter.
  auto buffer = std::make_shared<Buffer>(first, std::size_t(extent),
                                         int(m->dl_tensor.device.device_id), release);
  return ndarray(std::move(buffer), shape, strides, 0, dt);
}

}  // namespace kiln
