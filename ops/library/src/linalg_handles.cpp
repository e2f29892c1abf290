// cuBLAS / cuSOLVER handles and status translation for kiln::linalg.
#include "linalg_handles.hpp"

#include <fmt/format.h>

#include <map>

#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/library/linalg.hpp"
#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln::linalg::detail {
namespace {

const char* solver_status_name(cusolverStatus_t s) {
  switch (s) {
    case CUSOLVER_STATUS_NOT_INITIALIZED:
      return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED:
      return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE:
      return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH:
      return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED:
      return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR:
      return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    default:
      return "unknown cuSOLVER status";
  }
}

// Handles live as long as the process: destroying them from thread-exit destructors can run
// after the CUDA runtime has shut down. One per device per host thread that uses linalg.
struct Handles {
  std::map<int, cublasHandle_t> blas;
  std::map<int, cusolverDnHandle_t> solver;
  std::map<int, cusolverDnParams_t> params;
};
Handles& handles() {
  thread_local Handles h;
  return h;
}

}  // namespace

void check_blas(cublasStatus_t s, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::string what = fmt::format("{} failed: {} ({})", call, cublasGetStatusName(s), int(s));
  if (s == CUBLAS_STATUS_ALLOC_FAILED)
    throw OutOfMemoryError(what + " — cuBLAS could not allocate its workspace", 0);
  throw CudaError(what, int(s));
}

void refuse_solver_in_capture(const char* op) {
  if (!kiln::detail::thread_capture()) return;
  kiln::detail::throw_capture_refusal(
      fmt::format("linalg.{}", op),
      "it reads cuSOLVER's status back to the host (to raise LinAlgError), which waits for the "
      "device");
}

void check_solver(cusolverStatus_t s, const char* call) {
  if (s == CUSOLVER_STATUS_SUCCESS) return;
  std::string what = fmt::format("{} failed: {} ({})", call, solver_status_name(s), int(s));
  if (s == CUSOLVER_STATUS_ALLOC_FAILED)
    throw OutOfMemoryError(what + " — cuSOLVER could not allocate its workspace", 0);
  throw CudaError(what, int(s));
}

cublasHandle_t blas_handle() {
  const int device = current_device();  // NoDeviceError without a GPU
  auto& map = handles().blas;
  auto it = map.find(device);
  if (it == map.end()) {
    cublasHandle_t h = nullptr;
    kiln::detail::RelaxedCaptureMode relaxed;  // a first use inside a graph capture
    KILN_CUBLAS(cublasCreate(&h));
    // Compute types are chosen per call (FP32 exact unless TF32 is asked for).
    KILN_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    it = map.emplace(device, h).first;
  }
  KILN_CUBLAS(cublasSetStream(it->second, current_stream_handle()));
  return it->second;
}

cusolverDnHandle_t solver_handle() {
  const int device = current_device();
  auto& map = handles().solver;
  auto it = map.find(device);
  if (it == map.end()) {
    cusolverDnHandle_t h = nullptr;
    kiln::detail::RelaxedCaptureMode relaxed;
    KILN_CUSOLVER(cusolverDnCreate(&h));
    it = map.emplace(device, h).first;
  }
  KILN_CUSOLVER(cusolverDnSetStream(it->second, current_stream_handle()));
  return it->second;
}

cusolverDnParams_t solver_params() {
  const int device = current_device();
  auto& map = handles().params;
  auto it = map.find(device);
  if (it == map.end()) {
    cusolverDnParams_t p = nullptr;
    KILN_CUSOLVER(cusolverDnCreateParams(&p));
    it = map.emplace(device, p).first;
  }
  return it->second;
}

ndarray scratch(std::size_t bytes) { return empty({std::int64_t(bytes ? bytes : 1)}, uint8); }

ndarray leading_view(const ndarray& a, const Shape& shape) {
  return ndarray(a.buffer(), shape, c_strides(shape, std::int64_t(a.itemsize())), a.offset(),
                 a.dtype());
}

dtype solver_dtype(const char* op, dtype t) {
  if (t == float32 || t == float64) return t;
  if (t == bool_ || t.is_integer()) return float64;
  throw TypeError(fmt::format("linalg.{}: array type {} is unsupported (use float32 or float64)",
                              op, t.name()));
}

void require_matrix(const char* op, const ndarray& a, bool square) {
  if (!a.defined()) throw ValueError(fmt::format("linalg.{}: the array is empty (no buffer)", op));
  if (a.ndim() != 2)
    throw ShapeError(fmt::format(
        "linalg.{}: expected a 2-D matrix, got shape {}{}", op, a.shape().str(),
        a.ndim() > 2 ? " (stacks of matrices are not supported yet; loop over the first axes)"
                     : ""));
  if (square && a.shape()[0] != a.shape()[1])
    throw ShapeError(
        fmt::format("linalg.{}: the matrix must be square, got shape {}", op, a.shape().str()));
}

ndarray eye(std::int64_t n, dtype t) {
  ndarray out({n, n}, t);
  if (n == 0) return out;
  static const ElementwiseKernel& k =
      *new ElementwiseKernel("int64 n", "T z", "z = (i / n == i % n) ? T(1) : T(0)", "kiln_eye");
  k(n, out);
  return out;
}

std::vector<std::int32_t> read_info(const ndarray& info) { return info.get<std::int32_t>(); }

}  // namespace kiln::linalg::detail
