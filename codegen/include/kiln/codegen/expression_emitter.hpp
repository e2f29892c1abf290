#pragma once
// CUDA text for fused expressions. The engine flattens an expression tree into nodes (children
// before their parents); this turns them into the operation of one ElementwiseKernel (one
// output per root), or into the map of a reduction that fuses the expression. Each operator's
// device expression and helpers come from its op table row (op_table.hpp). Only a cache miss
// calls this: the hit path hashes the tree and builds no text.
//
//   // (x * 2 + y) as nodes: in0, 2 (a scalar leaf), *, in1, +
//   ExpressionText t = expression_kernel_text(nodes, roots, leaf_types);
//   ElementwiseKernel k(t.in_params, t.out_params, t.code, "kiln_expr", {.preamble = t.helpers});
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/codegen/expression_op.hpp"
#include "kiln/runtime/dtype.hpp"

namespace kiln::codegen {

/// One node of a flattened expression: a leaf (leaf >= 0) is parameter `in<leaf>`; an
/// operator node applies `op` to its children (indices of earlier nodes), computing in
/// `compute` and giving `type`.
struct ExpressionNode {
  op_id op = op_id::add;
  dtype type;
  dtype compute;
  std::array<int, 3> child{-1, -1, -1};
  int leaf = -1;
};

struct ExpressionText {
  std::string in_params;   // "float32 in0, float64 in1": the distinct leaves, in order
  std::string out_params;  // "float32 out0, ...": a kernel's outputs (empty for a map)
  std::string code;        // a kernel: "out0 = <expression>;" per root; a map: the expression
  std::string helpers;     // the device helpers the code calls (file scope)
};

/// The kernel computing every root (an index into `nodes`) into its own output.
ExpressionText expression_kernel_text(std::span<const ExpressionNode> nodes,
                                      std::span<const int> roots,
                                      std::span<const dtype> leaf_types);
/// The expression of `root` as a map over the leaves.
ExpressionText expression_map_text(std::span<const ExpressionNode> nodes, int root,
                                   std::span<const dtype> leaf_types);

/// Several expressions over the same leaves (the reductions' inputs and the outputs of one
/// fused kernel): the text of each root, the helpers any of them calls (once), and the
/// parameters (leaves whose bit is set in `raw_leaves` declared `raw`, as a ddof is). A
/// leaf index past leaf_types (a reduction's result in a row kernel) is named in<j> too.
/// `row`: roots from row.first_root on are a row kernel's outputs, and row.leaves its leaves
/// holding one value a row (reductions' results, scalars): there a float32 division by an
/// expression of those alone reads kiln_dv<i>, made once a row from row_divisors[i] (a
/// reciprocal, then IEEE division's results by multiplies: kiln_div_row).
struct ExpressionTexts {
  std::string in_params;
  std::vector<std::string> codes;
  std::string helpers;
  std::vector<std::string> row_divisors;
};
struct RowOutputs {
  std::uint64_t leaves = 0;
  std::size_t first_root = 0;
};
ExpressionTexts expression_texts(std::span<const ExpressionNode> nodes, std::span<const int> roots,
                                 std::span<const dtype> leaf_types, std::uint64_t raw_leaves = 0,
                                 RowOutputs row = {});

/// A built-in reduction over an expression: the built-in's map reads `x` (possibly more than
/// once), so the expression is evaluated once, as the argument of an immediately called
/// lambda. Returns the reduction's map; `preamble` gains the helpers and `typedef <type> T;`.
std::string fused_reduction_map(const ExpressionText& expression, dtype type,
                                std::string_view builtin_map, std::string& preamble);

}  // namespace kiln::codegen
