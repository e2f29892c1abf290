#pragma once
// The device-side support code kiln puts at the top of every generated kernel. Every name in
// it starts with `kiln_` (template parameters too), and user -D macros are defined after it,
// so no user macro can break it. The CUDA headers are included only when a kernel's dtypes
// need them (cuda_fp16.h, cuda_bf16.h); complex is kiln's own type, since <cuda/std/complex>
// alone cost NVRTC over a second per kernel.
//
// What user code may use (documented API):
//   kiln_cast<To>(x)      NumPy's cast between any two kiln device types: bool, signed char,
//                         short, int, long long, unsigned variants, __half, __nv_bfloat16,
//                         float, double, complex<float>, complex<double>. complex -> real drops
//                         the imaginary part; x -> bool is x != 0; float -> int truncates.
//   complex<T>            complex<float>, complex<double> (when a complex dtype is in the
//                         kernel): std::complex's layout; z.real(), z.imag(), + - * / ==
//                         != with complex or real operands, real imag conj abs norm arg
//                         polar proj exp log log10 sqrt pow sin cos tan sinh cosh tanh asin
//                         acos atan asinh acosh atanh. NumPy's arithmetic (Smith's division).
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
