// libFuzzer target: NVRTC option handling. The input is a list of options separated by NUL
// bytes: kiln's defaults (codegen::with_nvrtc_defaults), the -D/-U split into #define lines
// (codegen::split_user_macros), the architecture rule every compile applies
// (cache::check_request), and arch parsing (cache::parse_arch, on each option's text). Each
// either succeeds or raises the kiln::Error subclass it documents.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/cache/compile_request.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/codegen/nvrtc_defaults.hpp"
#include "kiln/codegen/user_macros.hpp"
#include "kiln/runtime/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> options;
  std::string cur;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      options.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += char(data[i]);
    }
  }
  options.push_back(std::move(cur));

  try {
    const auto with_defaults = kiln::codegen::with_nvrtc_defaults(options);
    if (with_defaults.size() < options.size()) __builtin_trap();
  } catch (const kiln::ValueError&) {
  }
  try {
    const auto split = kiln::codegen::split_user_macros(options);
    // Every macro line is one line: a -D value holding a newline would inject source.
    std::size_t lines = 0;
    for (char c : split.macros.lines) lines += c == '\n';
    if (split.nvrtc_options.size() + lines > options.size()) __builtin_trap();
  } catch (const kiln::SignatureError&) {
  }
  kiln::cache::CompileRequest req;
  req.options = options;
  req.arch = 90;
  try {
    kiln::cache::check_request(req);
  } catch (const kiln::ValueError&) {
  }
  for (const auto& o : options) {
    try {
      const int arch = kiln::cache::parse_arch(o);
      if (kiln::cache::parse_arch(kiln::cache::arch_name(arch)) != arch) __builtin_trap();
    } catch (const kiln::ValueError&) {
    }
  }
  return 0;
}
