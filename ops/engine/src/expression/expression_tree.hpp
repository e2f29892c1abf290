#pragma once
// Inside the engine only: the expression tree's pieces that evaluation shares between the
// elementwise path (expression.cpp) and the planner of lazy reductions (lazy_eval.cpp).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kiln/codegen/expression_emitter.hpp"
#include "kiln/engine/expression.hpp"
#include "kiln/engine/kernel_result.hpp"

namespace kiln::detail {

using node_ptr = std::shared_ptr<const expr_node>;
using codegen::kMaxParams;

// Past these an expression is split: subtrees are evaluated into temporaries first, so NVRTC
// never sees a huge kernel and the parameter count stays under kMaxParams.
inline constexpr std::uint32_t kMaxNodes = 192;
inline constexpr std::uint32_t kMaxLeaves = 48;

inline bool same_array(const ndarray& a, const ndarray& b) {
  return a.buffer() == b.buffer() && a.offset() == b.offset() && a.dtype() == b.dtype() &&
         a.shape() == b.shape() && a.strides() == b.strides();
}

// The structure walk: distinct leaves in first-use order and the key bytes.
struct Walk {
  std::array<const expr_node*, kMaxParams> leaves;
  int nleaves = 0;
  std::array<std::uint8_t, 4 * (kMaxNodes + 8) * 4> bytes;  // a reduce node takes 20 bytes
  std::size_t nbytes = 0;

  void put(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    bytes[nbytes++] = a, bytes[nbytes++] = b, bytes[nbytes++] = c, bytes[nbytes++] = d;
  }
  void put64(std::uint64_t v) {
    for (int k = 0; k < 8; ++k) bytes[nbytes++] = std::uint8_t(v >> (8 * k));
  }
  int leaf_index(const expr_node* n) const {
    for (int j = 0; j < nleaves; ++j)
      if (leaves[j] == n) return j;
    if (n->k == expr_node::kind::array)
      for (int j = 0; j < nleaves; ++j)
        if (leaves[j]->k == expr_node::kind::array && same_array(leaves[j]->array(), n->array()))
          return j;
    return -1;
  }
  void visit(const expr_node* n) {
    if (n->k == expr_node::kind::op) {
      for (const auto& c : n->child)
        if (c) visit(c.get());
      put(std::uint8_t(n->op), std::uint8_t(n->type.id()), std::uint8_t(n->compute.id()), 0xFF);
      return;
    }
    if (n->k == expr_node::kind::reduce) {  // the row (by address), axes, keepdims, dtype
      for (const auto& c : n->child)
        if (c) visit(c.get());
      put(0xFB, std::uint8_t(n->type.id()), std::uint8_t(n->keepdims), 0xFF);
      put64(std::uint64_t(reinterpret_cast<std::uintptr_t>(n->code)));
      put64(n->axes);
      return;
    }
    int j = leaf_index(n);
    if (j < 0) {
      j = nleaves++;
      leaves[std::size_t(j)] = n;
    }
    put(n->k == expr_node::kind::array ? 0xFE : 0xFD, std::uint8_t(j), std::uint8_t(n->type.id()),
        0xFF);
  }
};

inline void walk_roots(std::span<const node_ptr> roots, Walk& w) {
  for (const auto& r : roots) {
    w.visit(r.get());
    w.put(0xFC, 0, 0, 0);  // end of one output
  }
}

// The trees as codegen sees them: nodes in post-order, leaves as their parameter index.
struct Flat {
  std::vector<codegen::ExpressionNode> nodes;
  std::vector<int> roots;
  std::vector<dtype> leaf_types;
};

/// Appends n's subtree to f; a reduce node (in a row kernel, whose reductions' results are
/// named after its leaves) becomes the leaf reduce_leaf(node). Returns n's index.
template <class ReduceLeaf>
int flatten(const Walk& w, const expr_node* n, Flat& f, const ReduceLeaf& reduce_leaf) {
  codegen::ExpressionNode out;
  if (n->k == expr_node::kind::op) {
    for (std::size_t k = 0; k < n->child.size(); ++k)
      if (n->child[k]) out.child[k] = flatten(w, n->child[k].get(), f, reduce_leaf);
    out.op = n->op;
    out.compute = n->compute;
  } else if (n->k == expr_node::kind::reduce) {
    out.leaf = reduce_leaf(n);
  } else {
    out.leaf = w.leaf_index(n);
  }
  out.type = n->type;
  f.nodes.push_back(out);
  return int(f.nodes.size()) - 1;
}

// ---- nodes (expression.cpp) ----
node_ptr array_leaf(const ndarray& a);
node_ptr scalar_leaf(const scalar& v, dtype t);
/// A reduce node: `code` over `input`'s axes `mask`, giving `type`; ddof: the row's, if it
/// takes one (a scalar leaf, so its value is an argument, not structure); in_rows: the same
/// values as an expression a row kernel computes better (child[2]), if any.
node_ptr reduce_node(const reduction_code& code, const node_ptr& input, std::uint64_t mask,
                     bool keepdims, dtype type, std::optional<std::int64_t> ddof,
                     node_ptr in_rows = {});
/// A copy of operator or reduce node `n` with other children (same shapes and dtypes).
node_ptr with_children(const expr_node& n, const std::array<node_ptr, 3>& children);
/// n, or a copy whose too-large subtrees were evaluated into temporaries.
node_ptr fit(const node_ptr& n);

/// The smallest or largest value of integer dtype t.
scalar bound_of(dtype t, bool largest);
/// n itself when it fits (no reference count taken), else its split copy, kept in `hold`.
const node_ptr& fitted(const node_ptr& n, node_ptr& hold);

// ---- evaluation ----
/// Runs `roots` as one kernel (planned with their reductions, if they have any).
kernel_result run(std::span<const node_ptr> roots, ndarray* outs);
/// Runs `roots` (no reduce node in them) as one elementwise kernel; outputs are allocated,
/// or outs (one per root).
kernel_result run_elementwise(std::span<const node_ptr> roots, ndarray* outs);
/// Runs `roots`, some with reduce nodes (lazy_eval.cpp): outputs allocated, or outs.
kernel_result run_with_reductions(std::span<const node_ptr> roots, ndarray* outs);
/// n with every reduce node evaluated into an array leaf (n itself when it has none).
node_ptr materialize_reductions(const node_ptr& n);

}  // namespace kiln::detail
