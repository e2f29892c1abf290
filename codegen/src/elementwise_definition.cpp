#include "kiln/codegen/elementwise_definition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "kiln/codegen/operation_analysis.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::codegen {

namespace {

// The preprocessor lines of `code` (with their backslash continuations).
std::string directive_lines(std::string_view code) {
  std::string out;
  bool in_directive = false;
  while (!code.empty()) {
    const std::size_t end = std::min(code.find('\n'), code.size());
    const std::string_view line = code.substr(0, end);
    const std::size_t first = line.find_first_not_of(" \t");
    if (!in_directive) in_directive = first != std::string_view::npos && line[first] == '#';
    if (in_directive) {
      out.append(line).push_back('\n');
      in_directive = !line.empty() && line.back() == '\\';
    }
    code.remove_prefix(std::min(end + 1, code.size()));
  }
  return out;
}

}  // namespace

ElementwiseDefinition make_elementwise_definition(std::string_view in_params,
                                                  std::string_view out_params, ElementwiseCode code,
                                                  std::string_view name,
                                                  const std::vector<std::string>& options) {
  if (std::all_of(code.operation.begin(), code.operation.end(),
                  [](unsigned char c) { return std::isspace(c); }))
    throw SignatureError(fmt::format("kernel '{}': the operation is empty; it must assign the "
                                     "outputs ({})",
                                     name, out_params),
                         0);
  ElementwiseDefinition def;
  static_cast<KernelDefinition&>(def) =
      make_kernel_definition({.kind = "elementwise",
                              .in_params = in_params,
                              .out_params = out_params,
                              .name = name,
                              .code = {code.operation, code.loop_prep, code.after_loop},
                              .preamble = code.preamble,
                              .options = &options});
  // A macro defined elsewhere may expand to i in the operation; functions elsewhere cannot
  // see it.
  const std::string macros =
      directive_lines(code.preamble) + directive_lines(code.loop_prep) + def.macros.lines;
  def.uses_index = false;
  for (std::string_view text : {std::string_view(code.operation), std::string_view(macros)})
    def.uses_index |= mentions_identifier(text, "i") || mentions_identifier(text, "_ind");
  def.operation = std::move(code.operation);
  def.loop_prep = std::move(code.loop_prep);
  def.after_loop = std::move(code.after_loop);
  return def;
}

}  // namespace kiln::codegen
