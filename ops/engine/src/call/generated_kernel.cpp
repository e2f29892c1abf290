// The non-template part of generated_kernel's ahead-of-time methods.
#include "kiln/engine/generated_kernel.hpp"

namespace kiln::detail {

cache::CompileRequest make_compile_request(const codegen::KernelDefinition& def,
                                           std::string_view kind, std::string source, int arch) {
  cache::CompileRequest req;
  req.source = std::move(source);
  req.kernel_name = def.name;
  req.options = def.nvrtc_options;
  req.arch = arch;
  req.kind = std::string(kind);
  return req;
}

}  // namespace kiln::detail
