#pragma once
// Internal: the few driver API functions kiln needs, fetched at run time through the CUDA
// runtime (cudaGetDriverEntryPointByVersion), so no kiln binary links libcuda and every one of
// them starts on a machine with no driver.
#include <cuda.h>

namespace kiln::detail {

struct DriverApi {
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr*, size_t*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*cuLaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t);
  // Kernel nodes of captured graphs (kiln::graph reads them at capture, updates them later).
  CUresult (*cuGraphKernelNodeGetParams)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*);
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
                                             const CUDA_KERNEL_NODE_PARAMS*);
  // Newer entry points (driver >= 12.4): nullptr when the driver lacks them.
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*);
  CUresult (*cuModuleGetFunctionCount)(unsigned*, CUmodule);
  CUresult (*cuModuleEnumerateFunctions)(CUfunction*, unsigned, CUmodule);
  CUresult (*cuFuncGetName)(const char**, CUfunction);
};

/// Loaded once; throws NoDeviceError when there is no driver.
const DriverApi& driver();
/// Throws CudaError "call failed: CUDA_ERROR_X (code): description".
[[noreturn]] void throw_driver_result(CUresult r, const char* call);

}  // namespace kiln::detail
