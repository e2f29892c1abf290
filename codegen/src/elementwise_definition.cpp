#include "kiln/codegen/elementwise_definition.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "kiln/runtime/error.hpp"

namespace kiln::codegen {

ElementwiseDefinition make_elementwise_definition(std::string_view in_params,
                                                  std::string_view out_params,
                                                  ElementwiseCode code, std::string_view name,
                                                  const std::vector<std::string>& options) {
  if (std::all_of(code.operation.begin(), code.operation.end(),
                  [](unsigned char c) { return std::isspace(c); }))
    throw SignatureError(fmt::format("kernel '{}': the operation is empty; it must assign the "
                                     "outputs ({})",
                                     name, out_params),
                         0);
  ElementwiseDefinition def;
  static_cast<KernelDefinition&>(def) = make_kernel_definition(
      {.kind = "elementwise",
       .in_params = in_params,
       .out_params = out_params,
       .name = name,
       .code = {code.operation, code.loop_prep, code.after_loop},
       .preamble = code.preamble,
       .options = &options});
  def.operation = std::move(code.operation);
  def.loop_prep = std::move(code.loop_prep);
  def.after_loop = std::move(code.after_loop);
  return def;
}

}  // namespace kiln::codegen
