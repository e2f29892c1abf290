#pragma once
// Which architectures the NVRTC loaded in this process can compile for, so a bad --arch is
// one line naming the good ones instead of an NVRTC failure.
//
//   nvrtc_supported_archs();        // {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121}
//   check_arch(52);                 // throws kiln::ValueError listing them
#include <string>
#include <vector>

namespace kiln::cache {

/// Ascending, as NVRTC reports them (nvrtcGetSupportedArchs); computed once.
const std::vector<int>& nvrtc_supported_archs();

/// "75, 80, 86, ..." for messages.
std::string supported_archs_text();

/// Throws kiln::ValueError ("sm_52 is not an architecture this NVRTC (13.0) can compile for;
/// supported: 75, 80, ...") unless `arch` is supported.
void check_arch(int arch);

}  // namespace kiln::cache
