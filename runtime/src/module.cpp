#include "kiln/runtime/module.hpp"

#include <fmt/format.h>

#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/detail/driver_api.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {

using detail::driver;

namespace {

// During a capture the legacy null stream is not the capturing stream, and work on it would
// break a capture of a blocking stream: refused before the launch.
[[noreturn]] void refuse_null_stream_launch(CUfunction f) {
  const char* name = nullptr;
  if (!driver().cuFuncGetName || driver().cuFuncGetName(&name, f) != CUDA_SUCCESS) name = nullptr;
  detail::throw_capture_refusal(
      fmt::format("a launch of kernel '{}' on the legacy null stream", name ? name : "?"),
      "the capture records the work of its own stream (which kiln::capture makes current), and "
      "work on the null stream would break a capture of a blocking stream; launch on the "
      "current stream (no launch_options::stream) or on the capturing one");
}

}  // namespace

void Function::launch(dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
                      cudaStream_t stream) const {
  if (!stream && detail::thread_capture()) [[unlikely]]
    refuse_null_stream_launch(f_);
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

void Function::launch_cooperative(dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
                                  cudaStream_t stream) const {
  if (!stream && detail::thread_capture()) [[unlikely]]
    refuse_null_stream_launch(f_);
  auto go = [&] {
    return driver().cuLaunchCooperativeKernel(f_, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                              unsigned(shared_bytes), stream, args);
  };
  CUresult r = go();
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    KILN_CUDA(cudaFree(nullptr));
    r = go();
  }
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuLaunchCooperativeKernel");
}

int Function::attribute(int attr) const {
  int v = 0;
  CUresult r = driver().cuFuncGetAttribute(&v, CUfunction_attribute(attr), f_);
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuFuncGetAttribute");
  return v;
}

void Function::set_attribute(int attr, int value) const {
  CUresult r = driver().cuFuncSetAttribute(f_, CUfunction_attribute(attr), value);
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuFuncSetAttribute");
}

std::optional<std::vector<ParamSlot>> Function::param_layout() const {
  if (!driver().cuFuncGetParamInfo) return std::nullopt;
  std::vector<ParamSlot> out;
  for (std::size_t k = 0;; ++k) {
    std::size_t offset = 0, size = 0;
    const CUresult r = driver().cuFuncGetParamInfo(f_, k, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuFuncGetParamInfo");
    out.push_back({std::uint32_t(offset), std::uint32_t(size)});
  }
  return out;
}

std::optional<std::vector<ParamSlot>> Function::param_layout(std::size_t count) const {
  if (!driver().cuFuncGetParamInfo) return std::nullopt;
  std::vector<ParamSlot> out(count);
  for (std::size_t k = 0; k < count; ++k) {
    std::size_t offset = 0, size = 0;
    const CUresult r = driver().cuFuncGetParamInfo(f_, k, &offset, &size);
    if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuFuncGetParamInfo");
    out[k] = {std::uint32_t(offset), std::uint32_t(size)};
  }
  return out;
}

int Function::max_active_blocks_per_multiprocessor(int block_threads,
                                                   std::size_t shared_bytes) const {
  int n = 0;
  CUresult r =
      driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f_, block_threads, shared_bytes);
  if (r != CUDA_SUCCESS)
    detail::throw_driver_result(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return n;
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
  // A kernel first seen during a capture loads then: loading touches no stream, but a
  // thread-local capture would refuse the context call below.
  detail::RelaxedCaptureMode relaxed;
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

Function Module::find_function(const std::string& name) const {
  CUfunction f = nullptr;
  CUresult r = driver().cuModuleGetFunction(&f, m_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return Function();
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuModuleGetFunction");
  return Function(f);
}

std::optional<std::pair<void*, std::size_t>> Module::global(const std::string& name) const {
  CUdeviceptr p = 0;
  std::size_t bytes = 0;
  CUresult r = driver().cuModuleGetGlobal(&p, &bytes, m_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return std::nullopt;
  if (r != CUDA_SUCCESS) detail::throw_driver_result(r, "cuModuleGetGlobal");
  return std::pair<void*, std::size_t>(reinterpret_cast<void*>(p), bytes);
}

std::vector<std::string> Module::function_names() const {
  const auto& d = driver();
  std::vector<std::string> out;
  unsigned count = 0;
  if (!d.cuModuleGetFunctionCount || !d.cuModuleEnumerateFunctions || !d.cuFuncGetName ||
      d.cuModuleGetFunctionCount(&count, m_) != CUDA_SUCCESS)
    return out;
  std::vector<CUfunction> fs(count);
  if (count == 0 || d.cuModuleEnumerateFunctions(fs.data(), count, m_) != CUDA_SUCCESS) return out;
  for (CUfunction f : fs) {
    const char* n = nullptr;
    if (d.cuFuncGetName(&n, f) == CUDA_SUCCESS && n) out.emplace_back(n);
  }
  return out;
}

}  // namespace kiln
