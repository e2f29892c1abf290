#pragma once
// DLPack interop: hand kiln arrays to other libraries (PyTorch, CuPy, JAX) and take theirs,
// without copying. Uses Debian's libdlpack-dev header (DLPack 0.6 ABI: DLManagedTensor).
//
//   DLManagedTensor* t = kiln::to_dlpack(x);   // x's buffer stays alive until t->deleter(t)
//   // ... wrap `t` in a PyCapsule named "dltensor" and give it to torch.utils.dlpack.from_dlpack
//   kiln::ndarray y = kiln::from_dlpack(other);  // takes ownership: calls other->deleter once,
//                                                // when the last array viewing it goes away
//
// Conversion: device kDLCUDA with kiln's device id; dtype codes kDLInt/kDLUInt/kDLFloat/
// kDLBfloat/kDLComplex with their bit widths, and bool as kDLBool (code 6, 8 bits, as DLPack
// 0.8+ and PyTorch use; code 6 is not named in the 0.6 header); shape; strides in elements
// (kiln keeps bytes). Export points `data` at the first element with byte_offset 0; arrays with
// negative strides are exported as a C-contiguous copy (DLPack consumers such as PyTorch do not
// take negative strides). Import accepts kDLCUDA and kDLCUDAManaged tensors with lanes == 1,
// NULL strides meaning C order, and adds byte_offset to data. Errors: ValueError (device,
// lanes, negative sizes), TypeError (dtype), ShapeError (more than 32 dimensions).
#include <dlpack/dlpack.h>

#include "kiln/runtime/ndarray.hpp"

namespace kiln {

/// Exports `a` (no copy unless it has negative strides). The caller owns the result and must
/// call its deleter exactly once.
DLManagedTensor* to_dlpack(const ndarray& a);
/// Imports `t`, taking ownership of it (its deleter runs when the array's buffer dies; also
/// when this throws).
ndarray from_dlpack(DLManagedTensor* t);

namespace detail {
inline constexpr std::uint8_t kDLBoolCode = 6;  // kDLBool in DLPack >= 0.8
DLDataType to_dl_dtype(dtype t);
/// TypeError naming the code, bits and lanes when kiln has no such dtype.
dtype from_dl_dtype(DLDataType t);
}  // namespace detail

}  // namespace kiln
