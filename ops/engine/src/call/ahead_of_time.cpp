// What every generated kind's ahead-of-time methods share (kernel_aot in ahead_of_time.hpp).
#include "kiln/engine/ahead_of_time.hpp"

namespace kiln::detail {

cache::CompileRequest make_compile_request(const codegen::KernelDefinition& def, std::string_view kind,
                                           std::string source, int arch) {
  cache::CompileRequest req;
  req.source = std::move(source);
  req.kernel_name = def.name;
  req.options = def.nvrtc_options;
  req.arch = arch;
  req.kind = std::string(kind);
  return req;
}

}  // namespace kiln::detail
