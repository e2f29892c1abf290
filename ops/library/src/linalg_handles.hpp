#pragma once
// Internal: cuBLAS / cuSOLVER handles per device and host thread (made on first use, set to the
// current stream on every call), library status codes turned into kiln exceptions, and the
// layout helpers the linalg files share.
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <cstdint>

#include "kiln/runtime/ndarray.hpp"

namespace kiln::linalg::detail {

/// The calling thread's cuBLAS handle for the current device, bound to the current stream.
cublasHandle_t blas_handle();
/// The same for cuSOLVER (dense), plus the params object its 64-bit API takes.
cusolverDnHandle_t solver_handle();
cusolverDnParams_t solver_params();

void check_blas(cublasStatus_t s, const char* call);
/// CaptureError during a graph capture: the cuSOLVER-based functions read the solver's status
/// on the host (LinAlgError), which waits for the device.
void refuse_solver_in_capture(const char* op);
void check_solver(cusolverStatus_t s, const char* call);

/// Device scratch of `bytes` (at least 1) from the memory pool, on the current stream.
ndarray scratch(std::size_t bytes);
/// A C-contiguous view of the first shape_size(shape) elements of `a`'s buffer (a contiguous).
ndarray leading_view(const ndarray& a, const Shape& shape);
/// The dtype decompositions compute in: float32/float64 as is, bool/integers as float64;
/// TypeError for the rest. `op` names the function in the message.
dtype solver_dtype(const char* op, dtype t);
/// ShapeError unless `a` is 2-D (and square when asked).
void require_matrix(const char* op, const ndarray& a, bool square);
/// The n x n identity matrix.
ndarray eye(std::int64_t n, dtype t);
/// Reads int32 info values back (synchronizes the current stream).
std::vector<std::int32_t> read_info(const ndarray& info);
/// Calls f(float{}) for float32 and f(double{}) otherwise (a solver_dtype result).
template <class F>
decltype(auto) with_type(dtype t, F&& f) {
  return t == float32 ? f(float{}) : f(double{});
}

}  // namespace kiln::linalg::detail

#define KILN_CUBLAS(call) ::kiln::linalg::detail::check_blas((call), #call)
#define KILN_CUSOLVER(call) ::kiln::linalg::detail::check_solver((call), #call)
