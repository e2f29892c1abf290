#include "kiln/runtime/detail/driver_api.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::detail {
namespace {

// An entry point added after CUDA 12.0: nullptr (not an error) when the driver is older.
template <class Fn>
void fetch_optional(Fn& fn, const char* symbol, unsigned version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(symbol, &p, version, cudaEnableDefault, &status);
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    p = nullptr;
  }
  fn = reinterpret_cast<Fn>(p);
}

template <class Fn>
void fetch(Fn& fn, const char* symbol) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &status);
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || !p) {
    cudaGetLastError();
    throw CudaError(fmt::format("the NVIDIA driver does not provide {} (entry point lookup "
                                "failed: {})",
                                symbol, cudaGetErrorName(e)),
                    int(e));
  }
  fn = reinterpret_cast<Fn>(p);
}

}  // namespace

const DriverApi& driver() {
  static const DriverApi api = [] {
    require_device();
    DriverApi d{};
    fetch(d.cuModuleLoadData, "cuModuleLoadData");
    fetch(d.cuModuleUnload, "cuModuleUnload");
    fetch(d.cuModuleGetFunction, "cuModuleGetFunction");
    fetch(d.cuModuleGetGlobal, "cuModuleGetGlobal");
    fetch(d.cuLaunchKernel, "cuLaunchKernel");
    fetch(d.cuFuncGetAttribute, "cuFuncGetAttribute");
    fetch(d.cuGetErrorName, "cuGetErrorName");
    fetch(d.cuGetErrorString, "cuGetErrorString");
    fetch(d.cuFuncSetAttribute, "cuFuncSetAttribute");
    fetch(d.cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel");
    fetch(d.cuOccupancyMaxActiveBlocksPerMultiprocessor,
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    fetch(d.cuGraphKernelNodeGetParams, "cuGraphKernelNodeGetParams");
    fetch(d.cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams");
    fetch_optional(d.cuFuncGetParamInfo, "cuFuncGetParamInfo", 12040);
    fetch_optional(d.cuModuleGetFunctionCount, "cuModuleGetFunctionCount", 12040);
    fetch_optional(d.cuModuleEnumerateFunctions, "cuModuleEnumerateFunctions", 12040);
    fetch_optional(d.cuFuncGetName, "cuFuncGetName", 12030);
    return d;
  }();
  return api;
}

void throw_driver_result(CUresult r, const char* call) {
  const char *name = "?", *text = "?";
  driver().cuGetErrorName(r, &name);
  driver().cuGetErrorString(r, &text);
  throw CudaError(fmt::format("{} failed: {} ({}): {}", call, name, int(r), text), int(r));
}

}  // namespace kiln::detail
