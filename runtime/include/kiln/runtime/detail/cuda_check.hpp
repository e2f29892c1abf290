#pragma once
// Internal: turns CUDA runtime/driver status codes into kiln exceptions.
#include <cuda_runtime_api.h>

namespace kiln::detail {

/// Throws NoDeviceError for "no driver / no device" codes, CudaError otherwise.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call);
inline void check_cuda(cudaError_t code, const char* call) {
  if (code != cudaSuccess) throw_cuda_error(code, call);
}

}  // namespace kiln::detail

#define KILN_CUDA(call) ::kiln::detail::check_cuda((call), #call)
