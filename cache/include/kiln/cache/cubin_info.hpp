#pragma once
// What a cubin says about itself, read from its ELF headers without a GPU or the driver: the
// SM architecture it targets, its kernel entry points, and the compiler that made it. kiln-cache
// uses it to describe cache entries that carry no other metadata.
//
//   CubinInfo info = inspect_cubin(bin.cubin);
//   info.arch;          // 90 for an sm_90 cubin, arch_specific(90) for sm_90a, 0 if not CUDA ELF
//   info.kernels;       // {"my_kernel"} (mangled names for C++ kernels)
//   info.tool_version;  // "13.0.88": the ptxas inside the NVRTC that compiled it ("" unknown)
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache {

struct CubinInfo {
  int arch = 0;
  std::vector<std::string> kernels;
  std::string tool_version;
};

/// Never throws and never reads out of bounds, whatever the bytes.
CubinInfo inspect_cubin(std::string_view cubin);

}  // namespace kiln::cache
