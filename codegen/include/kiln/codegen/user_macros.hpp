#pragma once
// User -D/-U options become #define/#undef lines in the generated source, placed after kiln's
// device code and the CUDA headers and before the user's preamble. Passed to NVRTC they
// would reach NVRTC's own builtin header (which has `template <typename T>`): `-DT=1` breaks
// every compile that way, CuPy's included. As source lines they only reach user code.
//
//   auto m = split_user_macros({"-DX=1", "--std=c++17", "-D", "N", "-UFOO"});
//   m.nvrtc_options;  // {"--std=c++17"}
//   m.macros.lines;   // "#define X 1\n#define N 1\n#undef FOO\n"
//   m.macros.names;   // {"X", "N"}
#include <string>
#include <vector>

namespace kiln::codegen {

struct UserMacros {
  std::string lines;               // "#define X 1\n..."
  std::vector<std::string> names;  // the names -D defines, in order
};

struct SplitOptions {
  std::vector<std::string> nvrtc_options;
  UserMacros macros;
};

/// Accepts -DNAME, -DNAME=V, -D NAME[=V], --define-macro=NAME[=V], --define-macro NAME[=V]
/// and the -U / --undefine-macro forms. Throws SignatureError for a malformed macro name, or a
/// value that would not stay one #define line (a line break, a trailing backslash).
SplitOptions split_user_macros(const std::vector<std::string>& options);

}  // namespace kiln::codegen
