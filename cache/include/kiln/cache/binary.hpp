#pragma once
// The result of a compile: a cubin for one architecture, plus the mangled names NVRTC
// gave the requested name expressions.
//
//   Binary bin = nvrtc_compile(req);   // req.name_expressions = {"f<float>"}
//   bin.lowered_names[0];              // "_Z1fIfEvPT_", the symbol to load from bin.cubin
#include <string>
#include <vector>

namespace kiln::cache {

struct Binary {
  /// ELF cubin bytes (binary data held in a string).
  std::string cubin;
  /// Parallel to CompileRequest::name_expressions.
  std::vector<std::string> lowered_names;

  friend bool operator==(const Binary&, const Binary&) = default;
};

}  // namespace kiln::cache
