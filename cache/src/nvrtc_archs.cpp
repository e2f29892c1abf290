#include "kiln/cache/nvrtc_archs.hpp"

#include <nvrtc.h>

#include <algorithm>

#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::cache {

const std::vector<int>& nvrtc_supported_archs() {
  static const std::vector<int> archs = [] {
    int n = 0;
    std::vector<int> out;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return out;
    out.resize(std::size_t(n));
    if (nvrtcGetSupportedArchs(out.data()) != NVRTC_SUCCESS) out.clear();
    std::sort(out.begin(), out.end());
    return out;
  }();
  return archs;
}

std::string supported_archs_text() {
  std::string s;
  for (int a : nvrtc_supported_archs()) s += (s.empty() ? "" : ", ") + std::to_string(a);
  return s;
}

void check_arch(int arch) {
  const auto& archs = nvrtc_supported_archs();
  if (std::find(archs.begin(), archs.end(), arch) != archs.end()) return;
  throw kiln::ValueError("sm_" + std::to_string(arch) + " is not an architecture NVRTC " +
                         nvrtc_version().full +
                         " can compile for; supported: " + supported_archs_text());
}

}  // namespace kiln::cache
