#include "kiln/codegen/expression_emitter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "kiln/codegen/op_table.hpp"

namespace kiln::codegen {
namespace {

// Prints nodes as CUDA text. With `row`, the roots it prints are a row kernel's outputs: a
// float32 division by an expression of row.leaves alone (values the same along a row: the
// reductions' results, scalars) divides by kiln_dv<i>, a kiln_row_divisor the kernel makes
// once a row from divisors[i].
struct Printer {
  std::span<const ExpressionNode> nodes;
  std::uint64_t row_leaves = 0;
  std::uint32_t helpers = 0;
  std::vector<std::string>* divisors = nullptr;

  bool along_row(int at) const {
    const ExpressionNode& n = nodes[std::size_t(at)];
    if (n.leaf >= 0) return n.leaf < 64 && (row_leaves >> n.leaf & 1);
    for (int c : n.child)
      if (c >= 0 && !along_row(c)) return false;
    return true;
  }

  void emit_cast(dtype to, int at, std::string& out) {
    fmt::format_to(std::back_inserter(out), "kiln_cast<{}>(", to.device_type());
    emit(at, out);
    out += ')';
  }

  void emit(int at, std::string& out) {
    const ExpressionNode& n = nodes[std::size_t(at)];
    if (n.leaf >= 0) {
      fmt::format_to(std::back_inserter(out), "in{}", n.leaf);
      return;
    }
    fmt::format_to(std::back_inserter(out), "kiln_cast<{}>(", n.type.device_type());
    if (divisors && n.op == op_id::divide && n.compute == float32 && along_row(n.child[1])) {
      std::string d;  // computed once a row: divides as written
      std::vector<std::string>* const outer = std::exchange(divisors, nullptr);
      emit_cast(n.compute, n.child[1], d);
      divisors = outer;
      const auto it = std::find(divisors->begin(), divisors->end(), d);
      const std::size_t i = std::size_t(it - divisors->begin());
      if (it == divisors->end()) divisors->push_back(std::move(d));
      helpers |= row_division_helpers();
      out += "kiln_div_row(";
      emit_cast(n.compute, n.child[0], out);
      fmt::format_to(std::back_inserter(out), ", kiln_dv{}))", i);
      return;
    }
    const op_row& row = op_info(n.op);
    helpers |= row.helpers;
    const std::string_view dev = row.device;
    for (std::size_t p = 0; p < dev.size(); ++p) {
      if (dev[p] == '$' && p + 1 < dev.size()) {
        const int k = dev[++p] - '0';
        // where's condition is made bool; every other operand becomes the compute dtype.
        emit_cast((n.op == op_id::where && k == 0) ? bool_ : n.compute, n.child[std::size_t(k)],
                  out);
      } else {
        out += dev[p];
      }
    }
    out += ')';
  }
};

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
  Printer p{nodes};
  for (std::size_t r = 0; r < roots.size(); ++r) {
    fmt::format_to(std::back_inserter(t.out_params), "{}{} out{}", r ? ", " : "",
                   nodes[std::size_t(roots[r])].type.name(), r);
    fmt::format_to(std::back_inserter(t.code), "out{} = ", r);
    p.emit(roots[r], t.code);
    t.code += ";\n";
  }
  t.in_params = params_text(leaf_types);
  t.helpers = expression_helpers(p.helpers);
  return t;
}

ExpressionText expression_map_text(std::span<const ExpressionNode> nodes, int root,
                                   std::span<const dtype> leaf_types) {
  ExpressionText t;
  Printer p{nodes};
  p.emit(root, t.code);
  t.in_params = params_text(leaf_types);
  t.helpers = expression_helpers(p.helpers);
  return t;
}

ExpressionTexts expression_texts(std::span<const ExpressionNode> nodes, std::span<const int> roots,
                                 std::span<const dtype> leaf_types, std::uint64_t raw_leaves,
                                 RowOutputs row) {
  ExpressionTexts t;
  Printer p{nodes, row.leaves};
  for (std::size_t k = 0; k < roots.size(); ++k) {
    p.divisors = row.leaves && k >= row.first_root ? &t.row_divisors : nullptr;
    p.emit(roots[k], t.codes.emplace_back());
  }
  t.in_params = params_text(leaf_types, raw_leaves);
  t.helpers = expression_helpers(p.helpers);
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
