// Fused reductions: one ReductionKernel per (expression structure, built-in row), whose map is
// the built-in's map applied to the expression's value; a process-wide table keyed by the
// expression's structural hash and the row (a cache::MemoryCache, like the expression kernels).
#include "fused_reduction.hpp"

#include <cstring>
#include <new>
#include <type_traits>

#include <fmt/format.h>

#include "kiln/cache/memory_cache.hpp"

namespace kiln::detail {
namespace {

std::unique_ptr<ReductionKernel> make(const reduction_row& row, const char* preamble,
                                      const expression_binding& b) {
  const expression_map_text t = expression_map(expr(b.root));
  std::string params = t.params;
  if (std::strstr(row.in, "ddof")) params += ", raw int64 ddof";
  // The built-in's map reads `x` (possibly more than once, and _J): an immediately called
  // lambda evaluates the expression once and keeps the built-in's text as it is.
  std::string map = fmt::format("[&](const T x) {{ return ({}); }}({})", row.map, t.map);
  std::string pre = t.helpers;
  fmt::format_to(std::back_inserter(pre), "typedef {} T;\n{}", b.root->type.device_type(), preamble);
  reduction_options o;
  o.reduce_type = row.reduce_type;
  o.preamble = std::move(pre);
  return std::make_unique<ReductionKernel>(params, "U y", std::move(map), row.reduce, row.post, row.identity,
                                           fmt::format("{}_expr", row.name), std::move(o));
}

}  // namespace

const ReductionKernel& fused_reduction_kernel(const reduction_row& row, const char* preamble,
                                              const expression_binding& b) {
  // The row and preamble are static texts: their addresses name the reduction in-process.
  const std::uint64_t parts[4] = {b.key.hi, b.key.lo, std::uint64_t(reinterpret_cast<std::uintptr_t>(&row)),
                                  std::uint64_t(reinterpret_cast<std::uintptr_t>(preamble))};
  // Never destroyed: kernels may run during exit.
  static auto* kernels = new cache::MemoryCache<std::unique_ptr<ReductionKernel>>();
  return *kernels->get_or_create(hash128(parts, sizeof parts), [&] { return make(row, preamble, b); });
}

void fused_reduce(const reduction_row& row, const char* preamble, const expr& e, const std::int64_t* ddof,
                  const ndarray& out, const reduce_options& ro) {
  expression_binding b;
  bind_expression(e, b);
  const ReductionKernel& k = fused_reduction_kernel(row, preamble, b);
  // kernel_arg has no default constructor: only the used prefix is constructed (no heap).
  static_assert(std::is_trivially_destructible_v<kernel_arg>);
  alignas(kernel_arg) std::byte storage[sizeof(kernel_arg) * (codegen::kMaxParams + 3)];
  auto* args = reinterpret_cast<kernel_arg*>(storage);
  std::size_t n = 0;
  for (int j = 0; j < b.nleaves; ++j) {
    const expr_node* leaf = b.leaves[std::size_t(j)];
    if (leaf->k == expr_node::kind::array)
      new (&args[n++]) kernel_arg(leaf->array());
    else
      new (&args[n++]) kernel_arg(leaf->value);
  }
  if (ddof) new (&args[n++]) kernel_arg(*ddof);
  new (&args[n++]) kernel_arg(out);
  new (&args[n++]) kernel_arg(ro);
  k.call(std::span<const kernel_arg>(args, n));
}

}  // namespace kiln::detail
