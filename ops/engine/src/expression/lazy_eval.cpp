// Evaluating expressions with lazy reductions (lazy_expr): the planner. Two ways, the first
// that fits:
//   rows       every reduction is over the same axes of the outputs' shape, with keepdims,
//              and the rows fit on chip: ONE RowKernel reads each row once, reduces it in
//              phases (a reduction reading another's result is a later phase) and writes the
//              outputs (softmax, layer norm, standardising).
//   passes     otherwise, phase by phase: the reductions of a phase with the same input shape
//              and axes run as ONE reduction kernel (a composite of their rows: mean and var
//              of x in one pass), their results become array leaves, and the outputs run as
//              one elementwise kernel. A reduction that is itself an output is written into
//              that output directly.
// Both keep every kernel per expression structure in a process-wide table, so a repeated
// call hashes the tree and builds no text; the rows path allocates nothing but its outputs.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "expression/expression_tree.hpp"
#include "kiln/cache/memory_cache.hpp"
#include "kiln/codegen/expression_emitter.hpp"
#include "kiln/codegen/reduction_parts.hpp"
#include "kiln/codegen/row_definition.hpp"
#include "kiln/engine/fused_reduction.hpp"
#include "kiln/engine/reduction_kernel.hpp"
#include "kiln/engine/row_kernel.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "rows/row_plan.hpp"

namespace kiln::detail {
namespace {

constexpr int kMaxReductions = 64;  // distinct reduce nodes one plan tracks
constexpr int kMaxParts = 8;        // reductions one composite reduction kernel computes

struct Red {
  const expr_node* node;
  int phase;  // 0: reads no other reduction's result; else 1 + the latest phase it reads
};

// Whether two subtrees compute the same values by the structure walk's rules (expression_
// key): the same ops and dtypes over the same arrays, the very same scalar leaves. So a
// reduction written twice (log-softmax's max) runs once, and equal keys still mean equal
// programs.
bool same_tree(const expr_node* a, const expr_node* b) {
  if (a == b) return true;
  if (a->k != b->k || a->type != b->type) return false;
  switch (a->k) {
    case expr_node::kind::array:
      return same_array(a->array(), b->array());
    case expr_node::kind::scalar:
      return false;
    case expr_node::kind::reduce:
      if (a->code != b->code || a->axes != b->axes || a->keepdims != b->keepdims) return false;
      break;
    case expr_node::kind::op:
      if (a->op != b->op || a->compute != b->compute) return false;
      break;
  }
  for (std::size_t k = 0; k < a->child.size(); ++k) {
    if (!a->child[k] != !b->child[k]) return false;
    if (a->child[k] && !same_tree(a->child[k].get(), b->child[k].get())) return false;
  }
  return true;
}

// The distinct reduce nodes of a tree, inputs first (so in phase order within a chain); a
// node equal to one already seen is an alias of it.
struct Reds {
  std::array<Red, kMaxReductions> at;
  int n = 0;
  std::array<std::pair<const expr_node*, const expr_node*>, kMaxReductions>
      aliases;  // node, its twin in `at`
  int naliases = 0;
  bool overflow = false;
  int phases = 0;

  int find(const expr_node* node) const {
    for (int k = 0; k < n; ++k)
      if (at[std::size_t(k)].node == node) return k;
    for (int k = 0; k < naliases; ++k)
      if (aliases[std::size_t(k)].first == node) return find(aliases[std::size_t(k)].second);
    return -1;
  }
  // 1 + the latest phase of a reduction under `node` (0 when none).
  int collect(const expr_node* node) {
    if (!node->reductions) return 0;
    if (node->k == expr_node::kind::reduce) {
      if (const int k = find(node); k >= 0) return at[std::size_t(k)].phase + 1;
      for (int k = 0; k < n; ++k)
        if (naliases < kMaxReductions && same_tree(node, at[std::size_t(k)].node)) {
          aliases[std::size_t(naliases++)] = {node, at[std::size_t(k)].node};
          return at[std::size_t(k)].phase + 1;
        }
      const int phase = collect(node->child[0].get());
      if (n == kMaxReductions) {
        overflow = true;
        return phase + 1;
      }
      at[std::size_t(n++)] = {node, phase};
      phases = std::max(phases, phase + 1);
      return phase + 1;
    }
    int latest = 0;
    for (const auto& c : node->child)
      if (c) latest = std::max(latest, collect(c.get()));
    return latest;
  }
  // Reductions sorted by phase, keeping the order of first use within a phase.
  void sort_by_phase() {
    std::stable_sort(at.begin(), at.begin() + n,
                     [](const Red& a, const Red& b) { return a.phase < b.phase; });
  }
};

codegen::ReductionPart part_of(const expr_node& r) {
  const reduction_code& row = *r.code;
  return {.code = {.map_expr = row.map,
                   .reduce_expr = row.reduce,
                   .post_map_expr = row.post,
                   .identity = row.identity,
                   .reduce_type = row.reduce_type,
                   .preamble = row.preamble},
          .in = r.child[0]->type,
          .out = r.type};
}

std::string out_params(std::span<const dtype> types) {
  std::string s;
  for (std::size_t k = 0; k < types.size(); ++k)
    fmt::format_to(std::back_inserter(s), "{}{} out{}", k ? ", " : "", types[k].name(), k);
  return s;
}

// Leaves then outputs as kernel arguments, in `storage` (no heap).
struct Args {
  static_assert(std::is_trivially_destructible_v<kernel_arg>);
  alignas(kernel_arg) std::byte storage[sizeof(kernel_arg) * (kMaxParams + 2)];
  std::size_t n = 0;
  kernel_arg* at() { return reinterpret_cast<kernel_arg*>(storage); }
  void leaves(const Walk& w) {
    for (int j = 0; j < w.nleaves; ++j) {
      const expr_node* leaf = w.leaves[std::size_t(j)];
      if (leaf->k == expr_node::kind::array)
        new (&at()[n++]) kernel_arg(leaf->array());
      else
        new (&at()[n++]) kernel_arg(leaf->value);
    }
  }
  template <class T>
  void add(const T& v) {
    new (&at()[n++]) kernel_arg(v);
  }
  std::span<const kernel_arg> span() { return {at(), n}; }
};

// ---- rows: one kernel ----

// n with every reduction that has a row form (child[2]) replaced by it.
node_ptr row_forms(const node_ptr& n) {
  if (!n->reductions) return n;
  if (n->k == expr_node::kind::reduce && n->child[2]) return row_forms(n->child[2]);
  std::array<node_ptr, 3> kids = n->child;
  bool changed = false;
  for (auto& c : kids) {
    if (!c || !c->reductions) continue;
    node_ptr r = row_forms(c);
    changed = changed || r != c;
    c = std::move(r);
  }
  return changed ? with_children(*n, kids) : n;
}

// True when every reduction can run inside the rows of `roots`: over the same axes of the
// roots' one shape, reading that whole shape, keeping dims (or reducing every axis).
bool rows_structure(std::span<const node_ptr> roots, const Reds& reds, std::uint64_t& mask) {
  if (reds.n == 0 || reds.overflow || reds.phases > codegen::kMaxRowPhases) return false;
  const Shape& shape = roots[0]->shape;
  for (const auto& r : roots)
    if (r->k == expr_node::kind::reduce || r->shape != shape) return false;
  const std::uint64_t every = shape.size() >= 64 ? ~0ull : (1ull << shape.size()) - 1;
  mask = reds.at[0].node->axes;
  if (mask == 0) return false;
  for (int k = 0; k < reds.n; ++k) {
    const expr_node& r = *reds.at[std::size_t(k)].node;
    if (r.axes != mask || r.child[0]->shape != shape || !(r.keepdims || mask == every))
      return false;
    if (std::strcmp(r.code->out, "U y") != 0) return false;  // one result per row
  }
  return true;
}

std::unique_ptr<RowKernel> make_row_kernel(std::span<const node_ptr> roots, const Reds& reds,
                                           const Walk& w, std::uint64_t mask) {
  Flat f;
  const int nleaves = w.nleaves;
  auto reduce_leaf = [&](const expr_node* n) { return nleaves + reds.find(n); };
  std::vector<std::pair<int, int>> ranges;  // each root's nodes in f: [first, root]
  auto add_root = [&](const expr_node* n) {
    const int first = int(f.nodes.size());
    f.roots.push_back(flatten(w, n, f, reduce_leaf));
    ranges.emplace_back(first, f.roots.back());
  };
  for (int r = 0; r < reds.n; ++r) add_root(reds.at[std::size_t(r)].node->child[0].get());
  for (const auto& root : roots) add_root(root.get());
  std::vector<dtype> leaf_types;
  // One value a row: scalars and the reductions' results (the outputs divide by them through
  // a reciprocal made once a row).
  std::uint64_t row_values = 0;
  for (int j = 0; j < nleaves; ++j) {
    leaf_types.push_back(w.leaves[std::size_t(j)]->type);
    if (w.leaves[std::size_t(j)]->k != expr_node::kind::array && j < 64) row_values |= 1ull << j;
  }
  for (int r = 0; r < reds.n && nleaves + r < 64; ++r) row_values |= 1ull << (nleaves + r);
  codegen::ExpressionTexts t = codegen::expression_texts(
      f.nodes, f.roots, leaf_types, 0, {.leaves = row_values, .first_root = std::size_t(reds.n)});

  std::vector<std::uint32_t> use(std::size_t(nleaves), 0);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const bool output = int(i) >= reds.n;
    const std::uint32_t bit = output ? codegen::kRowOutputsUse : 1u << reds.at[i].phase;
    for (int x = ranges[i].first; x <= ranges[i].second; ++x) {
      const int leaf = f.nodes[std::size_t(x)].leaf;
      if (leaf >= 0 && leaf < nleaves) use[std::size_t(leaf)] |= bit;
    }
  }
  std::vector<codegen::RowReduction> rr;
  for (int r = 0; r < reds.n; ++r) {
    const expr_node& node = *reds.at[std::size_t(r)].node;
    rr.push_back({.part = part_of(node),
                  .input = t.codes[std::size_t(r)],
                  .phase = reds.at[std::size_t(r)].phase,
                  .ddof = node.child[1] ? w.leaf_index(node.child[1].get()) : -1,
                  .state_words = node.code->state_words});
  }
  std::vector<std::string> outs(t.codes.begin() + reds.n, t.codes.end());
  std::vector<dtype> out_types;
  for (const auto& root : roots) out_types.push_back(root->type);
  return std::make_unique<RowKernel>(
      codegen::make_row_definition(t.in_params, out_params(out_types), std::move(rr),
                                   std::move(outs), std::move(t.row_divisors), std::move(use),
                                   t.helpers, "kiln_rows"),
      mask);
}

const RowKernel& row_kernel_for(std::span<const node_ptr> roots, const Reds& reds, const Walk& w,
                                std::uint64_t mask) {
  auto& table = cache::process_table<std::unique_ptr<RowKernel>, struct row_kernels>();
  return *table.get_or_create(hash128(w.bytes.data(), w.nbytes),
                              [&] { return make_row_kernel(roots, reds, w, mask); });
}

// ---- passes: reductions, then the outputs ----

// n with the reductions in `done` replaced by their arrays.
node_ptr substitute(const node_ptr& n,
                    std::span<const std::pair<const expr_node*, node_ptr>> done) {
  if (!n->reductions) return n;
  for (const auto& [node, leaf] : done)
    if (node == n.get()) return leaf;
  std::array<node_ptr, 3> kids = n->child;
  bool changed = false;
  for (auto& c : kids) {
    if (!c || !c->reductions) continue;
    node_ptr s = substitute(c, done);
    changed = changed || s != c;
    c = std::move(s);
  }
  return changed ? with_children(*n, kids) : n;
}

std::int64_t ddof_of(const expr_node& r) {
  std::int64_t v = 0;
  if (r.child[1]) r.child[1]->value.store_as(int64, &v);
  return v;
}

std::unique_ptr<ReductionKernel> make_composite(std::span<const expr_node* const> members,
                                                std::span<const node_ptr> walked, const Walk& w) {
  Flat f;
  const auto no_reduce = [](const expr_node*) { return -1; };
  std::vector<codegen::ReductionPart> parts;
  std::vector<int> ddofs;
  std::uint64_t raw = 0;
  for (std::size_t k = 0; k < members.size(); ++k) {
    f.roots.push_back(flatten(w, walked[k].get(), f, no_reduce));
    parts.push_back(part_of(*members[k]));
    const int d = members[k]->child[1] ? w.leaf_index(members[k]->child[1].get()) : -1;
    ddofs.push_back(d);
    if (d >= 0) raw |= 1ull << d;
  }
  std::vector<dtype> leaf_types, out_types;
  for (int j = 0; j < w.nleaves; ++j) leaf_types.push_back(w.leaves[std::size_t(j)]->type);
  for (const auto* m : members) out_types.push_back(m->type);
  codegen::ExpressionTexts t = codegen::expression_texts(f.nodes, f.roots, leaf_types, raw);
  codegen::ReductionCode c = codegen::composite_reduction(parts, t.codes, ddofs, t.helpers);
  return std::make_unique<ReductionKernel>(
      t.in_params, out_params(out_types), std::move(c.map_expr), std::move(c.reduce_expr),
      std::move(c.post_map_expr), std::move(c.identity), "kiln_multi_reduce",
      reduction_kernel_options{.reduce_type = std::move(c.reduce_type),
                               .preamble = std::move(c.preamble)});
}

// The ONE ReductionKernel computing `members` (reductions of one input shape and axes) over
// their `inputs` (no reduction left in them); `w` gets its parameters (the walk sees every
// input, then the ddof leaves: its key is the composite's structure).
const ReductionKernel& composite_for(std::span<const expr_node* const> members,
                                     std::span<const node_ptr> inputs, Walk& w) {
  std::vector<node_ptr> walked(inputs.begin(), inputs.end());
  for (const auto* m : members)
    if (m->child[1]) walked.push_back(m->child[1]);
  walk_roots(walked, w);
  const std::size_t structure = w.nbytes;
  for (const auto* m : members) {
    w.put64(std::uint64_t(reinterpret_cast<std::uintptr_t>(m->code)));
    w.put(std::uint8_t(m->type.id()), std::uint8_t(m->child[1] ? 1 : 0), 0xFA, 0xFA);
  }
  const Hash128 key = hash128(w.bytes.data(), w.nbytes);
  w.nbytes = structure;
  auto& table =
      cache::process_table<std::unique_ptr<ReductionKernel>, struct composite_reductions>();
  return *table.get_or_create(key, [&] { return make_composite(members, walked, w); });
}

// Runs `members` (reductions of one input shape and axes) over their `inputs` (no reduction
// left in them) into `outs`: ONE kernel.
void run_group(std::span<const expr_node* const> members, std::span<const node_ptr> inputs,
               std::span<const ndarray> outs) {
  const expr_node& first = *members[0];
  const reduce_options ro{
      .axis = axes::from_mask(first.axes), .keepdims = first.keepdims, .out = {}};
  if (members.size() == 1) {
    const std::int64_t ddof = ddof_of(first);
    reduce_expression(*first.code, expr(inputs[0]), first.child[1] ? &ddof : nullptr, outs[0], ro);
    return;
  }
  Walk w;
  const ReductionKernel& k = composite_for(members, inputs, w);
  Args args;
  args.leaves(w);
  for (const ndarray& o : outs) args.add(o);
  args.add(ro);
  k.call(args.span());
}

using Done = std::vector<std::pair<const expr_node*, node_ptr>>;

// Runs every reduction under `roots`, phase by phase, the reductions of a phase that share an
// input shape and axes together. A root that is a reduction is written into its out.
Done run_passes(std::span<const node_ptr> roots, const ndarray* outs) {
  Reds reds;
  for (const auto& r : roots) reds.collect(r.get());
  if (reds.overflow)
    throw ValueError(
        fmt::format("an expression holds more than {} lazy reductions; evaluate parts of it first",
                    kMaxReductions));
  Done done;
  for (int p = 0; p < reds.phases; ++p) {
    std::vector<const expr_node*> todo;
    for (int k = 0; k < reds.n; ++k)
      if (reds.at[std::size_t(k)].phase == p) todo.push_back(reds.at[std::size_t(k)].node);
    while (!todo.empty()) {
      const expr_node& lead = *todo.front();
      std::vector<const expr_node*> members;
      std::vector<node_ptr> inputs;
      std::uint32_t leaves = 0;
      for (auto it = todo.begin(); it != todo.end();) {
        const expr_node& r = **it;
        node_ptr in = fit(substitute(r.child[0], done));
        const bool same = r.axes == lead.axes && r.keepdims == lead.keepdims &&
                          in->shape == lead.child[0]->shape &&
                          std::strcmp(r.code->out, "U y") == 0 &&
                          std::strcmp(lead.code->out, "U y") == 0;
        if (&r != &lead &&
            (!same || int(members.size()) == kMaxParts || leaves + in->leaves + 1 > kMaxLeaves)) {
          ++it;
          continue;
        }
        leaves += in->leaves + 1;
        members.push_back(&r);
        inputs.push_back(std::move(in));
        it = todo.erase(it);
      }
      std::vector<ndarray> results;
      for (const auto* m : members) {
        const ndarray* target = nullptr;
        for (std::size_t k = 0; outs && k < roots.size(); ++k)
          if (roots[k].get() == m && outs[k].dtype() == m->type && outs[k].shape() == m->shape)
            target = &outs[k];
        results.push_back(target ? *target : empty(m->shape, m->type));
      }
      run_group(members, inputs, results);
      for (std::size_t k = 0; k < members.size(); ++k) {
        node_ptr leaf = array_leaf(results[k]);
        for (int a = 0; a < reds.naliases; ++a)
          if (reds.aliases[std::size_t(a)].second == members[k])
            done.emplace_back(reds.aliases[std::size_t(a)].first, leaf);
        done.emplace_back(members[k], std::move(leaf));
      }
    }
  }
  return done;
}

// Runs `rows` (roots of one shape) as ONE row kernel into outs (allocated into `made` when
// the call passes none) where the row planner takes them. A plan that streams its rows is left
// unrun (streamed) when `defer_streamed`: the caller has another form to try first.
enum class RowsRun { done, streamed, no };
RowsRun run_rows(std::span<const node_ptr> rows, ndarray*& outs, std::array<ndarray, 16>& made,
                 bool defer_streamed, kernel_result& result) {
  Reds reds;
  for (const auto& r : rows) reds.collect(r.get());
  reds.sort_by_phase();
  std::uint64_t mask = 0;
  if (rows.size() > made.size() || !rows_structure(rows, reds, mask)) return RowsRun::no;
  for (std::size_t k = 0; outs && k < rows.size(); ++k)
    if (outs[k].shape() != rows[k]->shape) return RowsRun::no;
  Walk w;
  walk_roots(rows, w);
  if (w.nleaves + int(rows.size()) > kMaxParams) return RowsRun::no;
  const RowKernel& k = row_kernel_for(rows, reds, w, mask);
  if (!outs) {
    for (std::size_t r = 0; r < rows.size(); ++r) made[r] = empty(rows[r]->shape, rows[r]->type);
    outs = made.data();
  }
  std::array<const ndarray*, kMaxParams> arrays{};
  std::array<dtype, kMaxParams> types{};
  for (int j = 0; j < w.nleaves; ++j) {
    const expr_node* leaf = w.leaves[std::size_t(j)];
    arrays[std::size_t(j)] = leaf->k == expr_node::kind::array ? &leaf->array() : nullptr;
    types[std::size_t(j)] = leaf->type;
  }
  const std::size_t n = std::size_t(w.nleaves) + rows.size();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    arrays[std::size_t(w.nleaves) + r] = &outs[r];
    types[std::size_t(w.nleaves) + r] = rows[r]->type;
  }
  RowPlan probe;
  const auto arr = std::span<const ndarray* const>(arrays.data(), n);
  const auto ty = std::span<const dtype>(types.data(), n);
  const DeviceProperties& props = device_properties(current_device());
  if (!plan_rows(rows[0]->shape, mask, arr, ty, w.nleaves, row_registers(k.definition(), arr, ty),
                 RowDevice::of(props), probe))
    return RowsRun::no;
  if (defer_streamed && probe.spec.items == 0) return RowsRun::streamed;
  Args args;
  args.leaves(w);
  for (std::size_t r = 0; r < rows.size(); ++r) args.add(outs[r]);
  result = k.call(args.span());
  return RowsRun::done;
}

}  // namespace

kernel_result run_with_reductions(std::span<const node_ptr> all_roots, ndarray* outs) {
  std::array<ndarray, 16> made;      // outputs the call allocates (eval passes none)
  std::array<node_ptr, 16> in_rows;  // the roots with their reductions' row forms
  const std::size_t nroots = std::min(all_roots.size(), in_rows.size());
  bool forms = false;
  for (std::size_t r = 0; r < nroots; ++r) {
    in_rows[r] = row_forms(all_roots[r]);
    forms = forms || in_rows[r] != all_roots[r];
  }
  const std::span<const node_ptr> rows(in_rows.data(), nroots);
  // Row forms (var as NumPy's two passes, a softmax's sum after its max) take one phase more
  // than the reductions they stand for, which costs nothing while a row stays in registers; a
  // streamed row reads itself again from L2 each phase, so there the one-pass reductions
  // (moments, the running max and its scaled sum) run instead. Measured on an H200 (layout
  // sweep), fraction of the copy rate, streamed softmax of (2048, 36000) float32: three reads
  // of each row (max, sum, outputs) 0.59, two 0.68. Rows held partly in shared memory (by a
  // block or a cluster) keep the row forms: the one-pass forms there measured mixed (H200,
  // softmax of (2048, 32000) 0.76 -> 0.72, layer norm 0.64 -> 0.60, log-softmax of (1024,
  // 128256) 0.71 -> 0.77).
  kernel_result result;
  if (all_roots.size() <= made.size()) {
    RowsRun run = run_rows(rows, outs, made, forms, result);
    if (run == RowsRun::streamed)
      run = run_rows(all_roots, outs, made, false, result) == RowsRun::done
                ? RowsRun::done
                : run_rows(rows, outs, made, false, result);
    if (run == RowsRun::done) return result;
  }
  // Passes: the reductions (in one pass each where they have two forms), then the outputs
  // over their results.
  const std::span<const node_ptr> roots = all_roots;
  const Done done = run_passes(roots, outs);
  std::vector<node_ptr> rest;
  std::vector<ndarray> rest_outs;
  std::vector<int> where(roots.size(), -1);
  std::vector<ndarray> finals(roots.size());
  for (std::size_t k = 0; k < roots.size(); ++k) {
    node_ptr s = substitute(roots[k], done);
    const bool written = roots[k]->k == expr_node::kind::reduce && s->k == expr_node::kind::array &&
                         (!outs || same_array(s->array(), outs[k]));
    if (written) {
      finals[k] = s->array();
      continue;
    }
    where[k] = int(rest.size());
    rest.push_back(std::move(s));
    if (outs) rest_outs.push_back(outs[k]);
  }
  if (!rest.empty()) {
    const kernel_result r = run_elementwise(rest, outs ? rest_outs.data() : nullptr);
    for (std::size_t k = 0; k < roots.size(); ++k)
      if (where[k] >= 0) finals[k] = r[std::size_t(where[k])];
  }
  for (auto& a : finals) result.push_back(std::move(a));
  result.set_tuple(roots.size() > 1);
  return result;
}

node_ptr materialize_reductions(const node_ptr& n) {
  if (!n->reductions) return n;
  const Done done = run_passes(std::span(&n, 1), nullptr);
  return substitute(n, done);
}

}  // namespace kiln::detail

namespace kiln {

std::vector<kernel_arg> aot::row_kernel_leaves(const expr& e, bool streamed) {
  const detail::node_ptr fitted = detail::fit(e.node_ptr());
  const detail::node_ptr root = streamed ? fitted : detail::row_forms(fitted);
  detail::Walk w;
  detail::walk_roots(std::span(&root, 1), w);
  detail::Args args;
  args.leaves(w);
  const auto span = args.span();
  return {span.begin(), span.end()};
}

const ReductionKernel& aot::multi_reduction(std::span<const expr> reductions) {
  std::vector<const detail::expr_node*> members;
  std::vector<detail::node_ptr> inputs;
  for (const auto& r : reductions) {
    const detail::expr_node& n = r.node();
    const detail::expr_node& lead = reductions[0].node();
    if (n.k != detail::expr_node::kind::reduce || n.child[0]->reductions || n.axes != lead.axes ||
        n.keepdims != lead.keepdims || n.child[0]->shape != lead.child[0]->shape)
      throw ValueError(
          "multi_reduction: every expression must be a lazy reduction of one input shape and axes "
          "over an expression with no reduction in it");
    members.push_back(&n);
    inputs.push_back(n.child[0]);
  }
  if (members.size() < 2 || members.size() > std::size_t(detail::kMaxParts))
    throw ValueError(fmt::format("multi_reduction: 2..{} reductions, got {}", detail::kMaxParts,
                                 members.size()));
  detail::Walk w;
  return detail::composite_for(members, inputs, w);
}

const RowKernel* aot::row_kernel(const expr& e, bool streamed) {
  const detail::node_ptr fitted = detail::fit(e.node_ptr());
  const detail::node_ptr root = streamed ? fitted : detail::row_forms(fitted);
  detail::Reds reds;
  reds.collect(root.get());
  reds.sort_by_phase();
  std::uint64_t mask = 0;
  if (!detail::rows_structure(std::span(&root, 1), reds, mask)) return nullptr;
  detail::Walk w;
  detail::walk_roots(std::span(&root, 1), w);
  return &detail::row_kernel_for(std::span(&root, 1), reds, w, mask);
}

}  // namespace kiln
