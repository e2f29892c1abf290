#pragma once
// GPU architectures: which ones the NVRTC loaded in this process can compile for, how kiln
// names them, and the one check every entry point makes, so a bad arch is a ValueError naming
// the good ones instead of an NVRTC failure later on.
//
// An arch is an int, major*10+minor (90 for sm_90). Arch-specific targets (sm_90a, sm_100a, ...)
// are for kernels that use features of exactly one architecture (wgmma, setmaxnreg, ...): written
// "90a", held as arch_specific(90), so every API that takes an arch (CompileRequest::arch,
// compile_for, compile_requests, --arch, manifests) takes them too, and their cache keys differ
// from sm_90's. A 9.0 device loads an sm_90a binary; no other device does.
//
//   nvrtc_supported_archs();        // {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121}
//   check_arch(52);                 // throws kiln::ValueError listing them
//   parse_arch("sm_90a");           // arch_specific(90)
//   arch_name(arch_specific(90));   // "sm_90a"
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache {

/// Ascending, as NVRTC reports them (nvrtcGetSupportedArchs); computed once. NVRTC does not
/// list arch-specific targets: it has one for each of its archs from 90 on.
const std::vector<int>& nvrtc_supported_archs();

inline constexpr int kArchSpecificFlag = 1 << 16;
constexpr int arch_specific(int arch) noexcept { return arch | kArchSpecificFlag; }
constexpr bool is_arch_specific(int arch) noexcept { return (arch & kArchSpecificFlag) != 0; }
/// The compute capability of an arch: 90 for both sm_90 and sm_90a.
constexpr int base_arch(int arch) noexcept { return arch & ~kArchSpecificFlag; }

/// "sm_90", "sm_90a": the -arch value NVRTC is given.
std::string arch_name(int arch);
/// "90", "90a": how --arch and manifests write it.
std::string arch_text(int arch);

/// "75, 80, ..., 90, 90a, 100, 100a, ...", for messages.
std::string supported_archs_text();

/// Throws kiln::ValueError ("sm_52 is not an architecture NVRTC 13.0.88 can compile for;
/// supported: 75, 80, ...") unless NVRTC can compile for `arch`.
void check_arch(int arch);

/// "90", "sm_90", "90a" or "sm_90a" -> the arch, checked with check_arch; kiln::ValueError for
/// anything else (naming the text and the supported archs).
int parse_arch(std::string_view text);

/// Whether a binary compiled for `binary_arch` loads on a device of compute capability
/// `device_arch` (e.g. 86): a generic cubin on any device of its major version and an equal or
/// higher minor; an arch-specific one on its own compute capability only.
bool arch_loads_on(int binary_arch, int device_arch) noexcept;

}  // namespace kiln::cache
