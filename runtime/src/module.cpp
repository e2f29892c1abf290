#include "kiln/runtime/module.hpp"

#include <fmt/format.h>

#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/detail/driver_api.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {

using detail::driver;

void Function::launch(dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
                      cudaStream_t stream) const {
  CUresult r = driver().cuLaunchKernel(f_, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                       unsigned(shared_bytes), stream, args, nullptr);
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    // A thread that never touched the runtime has no current context yet: bind the primary
    // context of its current device and try once more.
    KILN_CUDA(cudaFree(nullptr));
    r = driver().cuLaunchKernel(f_, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                unsigned(shared_bytes), stream, args, nullptr);
  }
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuLaunchKernel");
}

int Function::max_threads_per_block() const {
  int v = 0;
  CUresult r = driver().cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f_);
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuFuncGetAttribute");
  return v;
}

int Function::num_registers() const {
  int v = 0;
  CUresult r = driver().cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f_);
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuFuncGetAttribute");
  return v;
}

std::shared_ptr<Module> Module::load(std::string_view image, int device) {
  DeviceGuard on(device);
  KILN_CUDA(cudaFree(nullptr));  // makes the device's primary context current on this thread
  CUmodule m = nullptr;
  CUresult r = driver().cuModuleLoadData(&m, image.data());
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuModuleLoadData");
  return std::shared_ptr<Module>(new Module(m, device));
}

Module::~Module() {
  if (m_) driver().cuModuleUnload(m_);
}

Function Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  CUresult r = driver().cuModuleGetFunction(&f, m_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    throw CudaError(fmt::format("the loaded module has no kernel named '{}'", name), int(r));
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuModuleGetFunction");
  return Function(f);
}

std::size_t Module::global_size(const std::string& name) const {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  CUresult r = driver().cuModuleGetGlobal(&p, &bytes, m_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return 0;
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuModuleGetGlobal");
  return bytes;
}

}  // namespace kiln
