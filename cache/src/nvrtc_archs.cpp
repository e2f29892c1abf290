#include "kiln/cache/nvrtc_archs.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <charconv>

#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::cache {

namespace {
// The first compute capability with arch-specific targets (sm_90a, CUDA 12.0).
constexpr int kFirstArchSpecific = 90;
}  // namespace

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

std::string arch_text(int arch) {
  return std::to_string(base_arch(arch)) + (is_arch_specific(arch) ? "a" : "");
}

std::string arch_name(int arch) { return "sm_" + arch_text(arch); }

std::string supported_archs_text() {
  std::string s;
  for (int a : nvrtc_supported_archs()) {
    s += (s.empty() ? "" : ", ") + std::to_string(a);
    if (a >= kFirstArchSpecific) s += ", " + arch_text(arch_specific(a));
  }
  return s;
}

void check_arch(int arch) {
  const auto& archs = nvrtc_supported_archs();
  const int base = base_arch(arch);
  const bool known = arch >= 0 && std::find(archs.begin(), archs.end(), base) != archs.end() &&
                     (!is_arch_specific(arch) || base >= kFirstArchSpecific);
  if (known) return;
  const std::string name = arch >= 0 && (arch & ~(kArchSpecificFlag | 0xffff)) == 0
                               ? arch_name(arch)
                               : "arch " + std::to_string(arch);
  throw kiln::ValueError(name + " is not an architecture NVRTC " + nvrtc_version().full +
                         " can compile for; supported: " + supported_archs_text());
}

int parse_arch(std::string_view text) {
  std::string_view t = text;
  if (t.starts_with("sm_")) t.remove_prefix(3);
  const bool specific = t.ends_with('a');
  if (specific) t.remove_suffix(1);
  int v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < 0 ||
      v >= kArchSpecificFlag) {
    std::string msg(1, '\'');  // built by appends: GCC 12 -Wrestrict misfires on "'" + s
    msg += text;
    msg += "' is not an architecture (e.g. 90 for sm_90, 90a for sm_90a); supported: ";
    msg += supported_archs_text();
    throw kiln::ValueError(msg);
  }
  const int arch = specific ? arch_specific(v) : v;
  check_arch(arch);
  return arch;
}

bool arch_loads_on(int binary_arch, int device_arch) noexcept {
  const int base = base_arch(binary_arch);
  if (is_arch_specific(binary_arch)) return base == device_arch;
  return base / 10 == device_arch / 10 && base % 10 <= device_arch % 10;
}

}  // namespace kiln::cache
