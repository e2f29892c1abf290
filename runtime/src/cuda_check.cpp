#include "kiln/runtime/detail/cuda_check.hpp"

#include <fmt/format.h>

#include "kiln/runtime/error.hpp"

namespace kiln::detail {

void throw_cuda_error(cudaError_t code, const char* call) {
  // Clear the sticky-free error state so later calls are not blamed for this one.
  cudaGetLastError();
  std::string what = fmt::format("{} failed: {} ({}): {}", call, cudaGetErrorName(code), int(code),
                                 cudaGetErrorString(code));
  if (code == cudaErrorNoDevice || code == cudaErrorInsufficientDriver ||
      code == cudaErrorStubLibrary || code == cudaErrorSystemDriverMismatch)
    throw NoDeviceError(what +
                        " — kiln needs an NVIDIA GPU and driver for this; work that "
                        "needs no GPU (codegen, NVRTC, the kernel cache) still runs");
  throw CudaError(what, int(code));
}

}  // namespace kiln::detail
