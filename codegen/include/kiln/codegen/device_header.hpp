#pragma once
// The device-side support code kiln puts at the top of every generated kernel. Every name in
// it starts with `kiln_` (template parameters too), and user -D macros are defined after it,
// so no user macro can break it. The CUDA headers are included only when a kernel's dtypes
// need them: <cuda/std/complex> alone costs NVRTC about a second.
//
// What user code may use (documented API):
//   kiln_cast<To>(x)      NumPy's cast between any two kiln device types: bool, signed char,
//                         short, int, long long, unsigned variants, __half, __nv_bfloat16,
//                         float, double, complex<float>, complex<double>. complex -> real drops
//                         the imaginary part; x -> bool is x != 0; float -> int truncates.
//   complex<T>            cuda::std::complex<T> (when a complex dtype is in the kernel).
//   raw parameters        x[i] (flat C-order index), x[{i0, i1}], x.size(), x.shape()[d],
//                         x.strides()[d] (bytes), x.data().
//   i, _ind.size(), _ind.get()   the loop index and size.
//
//   DeviceHeaderNeeds needs{.fp16 = true};
//   std::string src = device_header(needs);   // includes cuda_fp16.h, then kiln's code
#include <string>

namespace kiln::codegen {

struct DeviceHeaderNeeds {
  bool fp16 = false;     // __half
  bool bf16 = false;     // __nv_bfloat16
  bool complex = false;  // complex<float>, complex<double>
};

/// Includes and kiln's device code, for the dtypes in `needs`.
std::string device_header(const DeviceHeaderNeeds& needs);

}  // namespace kiln::codegen
