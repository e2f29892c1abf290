// Reductions of expressions: one ReductionKernel per (expression structure, row), whose map is
// the row's map applied to the expression's value; kept in process-wide tables keyed by the
// expression's structural hash and the row's address.
#include "kiln/engine/fused_reduction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <type_traits>

#include "expression/expression_tree.hpp"
#include "kiln/cache/memory_cache.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {
namespace {

std::unique_ptr<ReductionKernel> make_plain(const reduction_code& row) {
  return std::make_unique<ReductionKernel>(
      row.in, row.out, row.map, row.reduce, row.post, row.identity, row.name,
      reduction_kernel_options{.reduce_type = row.reduce_type, .preamble = row.preamble});
}

std::unique_ptr<ReductionKernel> make_fused(const reduction_code& row,
                                            const detail::expression_binding& b) {
  const codegen::ExpressionText t = expression_map(expr(b.root));
  std::string params = t.in_params;
  if (std::strstr(row.in, "ddof")) params += ", raw int64 ddof";
  std::string pre = row.preamble;
  std::string map = codegen::fused_reduction_map(t, b.root->type, row.map, pre);
  reduction_kernel_options o;
  o.reduce_type = row.reduce_type;
  o.preamble = std::move(pre);
  return std::make_unique<ReductionKernel>(params, row.out, std::move(map), row.reduce, row.post,
                                           row.identity, fmt::format("{}_expr", row.name),
                                           std::move(o));
}

const ReductionKernel& fused_kernel(const reduction_code& row,
                                    const detail::expression_binding& b) {
  const std::uint64_t parts[3] = {b.key.hi, b.key.lo,
                                  std::uint64_t(reinterpret_cast<std::uintptr_t>(&row))};
  auto& table = cache::process_table<std::unique_ptr<ReductionKernel>, struct fused_reductions>();
  return *table.get_or_create(hash128(parts, sizeof parts), [&] { return make_fused(row, b); });
}

}  // namespace

const ReductionKernel& reduction_kernel(const reduction_code& row) {
  const reduction_code* p = &row;
  auto& table = cache::process_table<std::unique_ptr<ReductionKernel>, struct plain_reductions>();
  return *table.get_or_create(hash128(&p, sizeof p), [&] { return make_plain(row); });
}

const ReductionKernel& fused_reduction_kernel(const reduction_code& row, const expr& e) {
  detail::expression_binding b;
  detail::bind_expression(e, b);
  return fused_kernel(row, b);
}

void reduce_expression(const reduction_code& row, const expr& e, const std::int64_t* ddof,
                       std::span<const ndarray> outs, const reduce_options& ro) {
  detail::expression_binding b;
  detail::bind_expression(e, b);
  const ReductionKernel& k = fused_kernel(row, b);
  // kernel_arg has no default constructor: only the used prefix is constructed (no heap).
  static_assert(std::is_trivially_destructible_v<kernel_arg>);
  alignas(kernel_arg) std::byte storage[sizeof(kernel_arg) * (codegen::kMaxParams + 4)];
  auto* args = reinterpret_cast<kernel_arg*>(storage);
  std::size_t n = 0;
  for (int j = 0; j < b.nleaves; ++j) {
    const detail::expr_node* leaf = b.leaves[std::size_t(j)];
    if (leaf->k == detail::expr_node::kind::array)
      new (&args[n++]) kernel_arg(leaf->array());
    else
      new (&args[n++]) kernel_arg(leaf->value);
  }
  if (ddof) new (&args[n++]) kernel_arg(*ddof);
  for (const ndarray& out : outs.first(std::min<std::size_t>(outs.size(), 2)))
    new (&args[n++]) kernel_arg(out);
  new (&args[n++]) kernel_arg(ro);
  k.call(std::span<const kernel_arg>(args, n));
}

lazy_expr reduce_lazily(const reduction_code& row, const expr& e, std::uint64_t mask, bool keepdims,
                        dtype type, const std::int64_t* ddof, const expr* in_rows) {
  if (std::strcmp(row.out, "U y") != 0)
    throw TypeError(fmt::format(
        "reduction '{}' has several outputs ({}); a lazy reduction gives one", row.name, row.out));
  if (e.ndim() < 64 && (mask >> e.ndim()) != 0)
    throw ValueError(
        fmt::format("reduction '{}': axes mask {:#x} names axes a {}-d expression lacks", row.name,
                    mask, e.ndim()));
  std::optional<std::int64_t> d;
  if (ddof) d = *ddof;
  if (in_rows &&
      (in_rows->shape() != reduced_shape(e.shape(), mask, keepdims) || in_rows->dtype() != type))
    throw ValueError(fmt::format("reduction '{}': its row form gives {} {}, not {} {}", row.name,
                                 in_rows->dtype(), in_rows->shape().str(), type,
                                 reduced_shape(e.shape(), mask, keepdims).str()));
  return lazy_expr(detail::reduce_node(row, e.node_ptr(), mask, keepdims, type, d,
                                       in_rows ? in_rows->node_ptr() : detail::node_ptr()));
}

}  // namespace kiln
