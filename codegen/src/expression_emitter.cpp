#include "kiln/codegen/expression_emitter.hpp"

#include <fmt/format.h>

#include <iterator>

#include "kiln/codegen/op_table.hpp"

namespace kiln::codegen {
namespace {

void emit(std::span<const ExpressionNode> nodes, int at, std::string& out, std::uint32_t& helpers) {
  const ExpressionNode& n = nodes[std::size_t(at)];
  if (n.leaf >= 0) {
    fmt::format_to(std::back_inserter(out), "in{}", n.leaf);
    return;
  }
  const op_row& row = op_info(n.op);
  helpers |= row.helpers;
  fmt::format_to(std::back_inserter(out), "kiln_cast<{}>(", n.type.device_type());
  const std::string_view dev = row.device;
  for (std::size_t p = 0; p < dev.size(); ++p) {
    if (dev[p] == '$' && p + 1 < dev.size()) {
      const int k = dev[++p] - '0';
      // where's condition is made bool; every other operand becomes the compute dtype.
      const dtype to = (n.op == op_id::where && k == 0) ? bool_ : n.compute;
      fmt::format_to(std::back_inserter(out), "kiln_cast<{}>(", to.device_type());
      emit(nodes, n.child[std::size_t(k)], out, helpers);
      out += ')';
    } else {
      out += dev[p];
    }
  }
  out += ')';
}

std::string params_text(std::span<const dtype> leaf_types, std::uint64_t raw_leaves = 0) {
  std::string s;
  for (std::size_t j = 0; j < leaf_types.size(); ++j)
    fmt::format_to(std::back_inserter(s), "{}{}{} in{}", j ? ", " : "",
                   (raw_leaves >> j & 1) ? "raw " : "", leaf_types[j].name(), j);
  return s;
}

}  // namespace

ExpressionText expression_kernel_text(std::span<const ExpressionNode> nodes,
                                      std::span<const int> roots,
                                      std::span<const dtype> leaf_types) {
  ExpressionText t;
  std::uint32_t helpers = 0;
  for (std::size_t r = 0; r < roots.size(); ++r) {
    fmt::format_to(std::back_inserter(t.out_params), "{}{} out{}", r ? ", " : "",
                   nodes[std::size_t(roots[r])].type.name(), r);
    fmt::format_to(std::back_inserter(t.code), "out{} = ", r);
    emit(nodes, roots[r], t.code, helpers);
    t.code += ";\n";
  }
  t.in_params = params_text(leaf_types);
  t.helpers = expression_helpers(helpers);
  return t;
}

ExpressionText expression_map_text(std::span<const ExpressionNode> nodes, int root,
                                   std::span<const dtype> leaf_types) {
  ExpressionText t;
  std::uint32_t helpers = 0;
  emit(nodes, root, t.code, helpers);
  t.in_params = params_text(leaf_types);
  t.helpers = expression_helpers(helpers);
  return t;
}

ExpressionTexts expression_texts(std::span<const ExpressionNode> nodes, std::span<const int> roots,
                                 std::span<const dtype> leaf_types, std::uint64_t raw_leaves) {
  ExpressionTexts t;
  std::uint32_t helpers = 0;
  for (int r : roots) emit(nodes, r, t.codes.emplace_back(), helpers);
  t.in_params = params_text(leaf_types, raw_leaves);
  t.helpers = expression_helpers(helpers);
  return t;
}

std::string fused_reduction_map(const ExpressionText& expression, dtype type,
                                std::string_view builtin_map, std::string& preamble) {
  std::string pre = expression.helpers;
  fmt::format_to(std::back_inserter(pre), "typedef {} T;\n", type.device_type());
  preamble.insert(0, pre);
  return fmt::format("[&](const T x) {{ return ({}); }}({})", builtin_map, expression.code);
}

}  // namespace kiln::codegen
