#pragma once
// What a cubin says about itself, read from its ELF headers without a GPU or the driver: the
// SM architecture it targets and its kernel entry points. kiln-cache uses it to describe
// cache entries that carry no other metadata.
//
//   CubinInfo info = inspect_cubin(bin.cubin);
//   info.arch;          // 90 for an sm_90 cubin, 0 if the bytes are not a CUDA ELF image
//   info.kernels;       // {"my_kernel"} (mangled names for C++ kernels)
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache {

struct CubinInfo {
  int arch = 0;
  std::vector<std::string> kernels;
};

/// Never throws and never reads out of bounds, whatever the bytes.
CubinInfo inspect_cubin(std::string_view cubin);

}  // namespace kiln::cache
