// Evaluation into outputs the caller gives: eval_into, and kiln::fuse's results (one kernel for
// all of them when they share a shape and fit, else one after another, results first).
#include "kiln/engine/fuse.hpp"

#include <fmt/format.h>

#include <vector>

#include "expression/expression_tree.hpp"
#include "kiln/codegen/op_table.hpp"
#include "kiln/engine/fused_reduction.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {
namespace detail {
namespace {

// e as it is stored into `out`: broadcast to out's shape, cast with NumPy's same_kind rule.
// A new root (a cast or a split) is kept in `hold`.
const node_ptr& into(const expr& e, const ndarray& out, node_ptr& hold) {
  if (!out.defined())
    throw ValueError("eval_into: the output is an empty ndarray handle (default-constructed)");
  if (e.shape() != out.shape()) {
    const Shape loop = broadcast_shapes({out.shape(), e.shape()});
    if (loop != out.shape())
      throw ValueError(
          fmt::format("non-broadcastable output operand with shape {} doesn't match "
                      "the broadcast shape {}",
                      out.shape().str(), loop.str()));
  }
  if (e.dtype() == out.dtype()) return fitted(e.node_ptr(), hold);
  if (!can_cast_same_kind(e.dtype(), out.dtype()))
    throw TypeError(fmt::format("Cannot cast {} output from {} to {} with casting rule 'same_kind'",
                                e.node().k == expr_node::kind::op ? op_info(e.node().op).name
                                : e.node().k == expr_node::kind::reduce
                                    ? std::string_view(e.node().code->name)
                                    : std::string_view("array"),
                                e.dtype(), out.dtype()));
  hold = fit(e.astype(out.dtype()).node_ptr());
  return hold;
}

}  // namespace

void eval_into_many(std::span<const expr> exprs, std::span<ndarray> outs) {
  if (exprs.size() != outs.size())
    throw ValueError(
        fmt::format("eval_into: {} expressions for {} outputs", exprs.size(), outs.size()));
  std::vector<node_ptr> roots;
  std::uint32_t nodes = 0, leaves = 0;
  bool one_shape = true;
  for (std::size_t k = 0; k < exprs.size(); ++k) {
    node_ptr hold;
    roots.push_back(into(exprs[k], outs[k], hold));  // every check before any work
    nodes += roots.back()->nodes;
    leaves += roots.back()->leaves + 1;
    one_shape = one_shape && outs[k].shape() == outs[0].shape();
  }
  if (roots.empty()) return;
  if (one_shape && nodes <= kMaxNodes && leaves <= kMaxLeaves && roots.size() <= 16) {
    run(roots, outs.data());
    return;
  }
  // Separate kernels: results first, so no output is written before an expression reads it.
  std::vector<ndarray> tmp;
  for (std::size_t k = 0; k < roots.size(); ++k) tmp.push_back(expr(roots[k]).eval());
  for (std::size_t k = 0; k < roots.size(); ++k) {
    const node_ptr leaf = array_leaf(tmp[k]);
    run(std::span(&leaf, 1), &outs[k]);
  }
}

}  // namespace detail

void eval_into(const expr& e, ndarray& out) {
  detail::node_ptr hold;
  detail::run(std::span(&detail::into(e, out, hold), 1), &out);
}

}  // namespace kiln
