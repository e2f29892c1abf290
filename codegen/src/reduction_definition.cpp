#include "kiln/codegen/reduction_definition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "kiln/runtime/error.hpp"

namespace kiln::codegen {
namespace {

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

}  // namespace

ReductionDefinition make_reduction_definition(std::string_view in_params,
                                              std::string_view out_params, ReductionCode code,
                                              std::string_view name,
                                              const std::vector<std::string>& options) {
  if (blank(code.map_expr))
    throw SignatureError(fmt::format("reduction '{}': map_expr is empty", name), 0);
  if (blank(code.reduce_expr))
    throw SignatureError(
        fmt::format("reduction '{}': reduce_expr is empty (an expression of a and b)", name), 0);
  ReductionDefinition def;
  static_cast<KernelDefinition&>(def) =
      make_kernel_definition({.kind = "reduction",
                              .in_params = in_params,
                              .out_params = out_params,
                              .name = name,
                              .code = {code.map_expr, code.reduce_expr, code.post_map_expr,
                                       code.identity, code.reduce_type},
                              .preamble = code.preamble,
                              .options = &options});
  if (def.nout == 0)
    throw SignatureError(fmt::format("reduction '{}' needs at least one output", name), 0);
  for (const auto& p : def.params)
    if (p.name == "a" || p.name == "b")
      throw SignatureError(fmt::format("reduction '{}': a parameter may not be named '{}' (the "
                                       "reduce expression's operands)",
                                       name, p.name),
                           std::size_t(p.position));
  def.map_expr = std::move(code.map_expr);
  def.reduce_expr = std::move(code.reduce_expr);
  def.post_map_expr = std::move(code.post_map_expr);
  def.identity = std::move(code.identity);
  dtype t;
  if (blank(code.reduce_type))
    def.reduce_type = "";
  else if (dtype::try_from_name(code.reduce_type, t))
    def.reduce_type = std::string(t.device_type());
  else
    def.reduce_type = std::move(code.reduce_type);
  return def;
}

}  // namespace kiln::codegen
