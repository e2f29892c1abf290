// Expression trees: building nodes (type rules and shapes checked at the operator), the
// structural key, the generated ElementwiseKernel per structure, and evaluation through
// ElementwiseKernel's call path (layouts, vector widths, index widths, overlap copies and
// streams are all that path's).
#include "kiln/engine/expression.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

#include <fmt/format.h>

#include "kiln/cache/memory_cache.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/codegen/expression_emitter.hpp"
#include "kiln/codegen/op_table.hpp"

namespace kiln {
namespace detail {
namespace {

using node_ptr = std::shared_ptr<const expr_node>;
using codegen::kMaxParams;
using codegen::op_id;
using codegen::op_info;
using codegen::op_row;
using codegen::op_types;
using codegen::operand_type;

// Past these an expression is split: subtrees are evaluated into temporaries first, so NVRTC
// never sees a huge kernel and the parameter count stays under kMaxParams.
constexpr std::uint32_t kMaxNodes = 192;
constexpr std::uint32_t kMaxLeaves = 48;

// A tree is built and dropped on every evaluation: freed nodes are kept per thread (one list
// per block size: operator nodes and array leaves) for the next one instead of going back to
// malloc. A thread's lists are freed when the thread ends; nodes dropped after that (static
// expressions at exit) go straight to operator delete.
template <std::size_t Bytes>
class NodeCache {
 public:
  static void* take() {
    if (gone) return ::operator new(Bytes);
    NodeCache& c = local();
    if (!c.head_) return ::operator new(Bytes);
    Free* f = c.head_;
    c.head_ = f->next;
    --c.count_;
    return f;
  }
  static void give(void* p) noexcept {
    if (gone) return ::operator delete(p);
    NodeCache& c = local();
    if (c.count_ >= kKeep) return ::operator delete(p);
    c.head_ = new (p) Free{c.head_};
    ++c.count_;
  }
  ~NodeCache() {
    gone = true;
    while (head_) {
      Free* f = head_;
      head_ = f->next;
      ::operator delete(f);
    }
  }

 private:
  static constexpr int kKeep = 512;
  struct Free {
    Free* next;
  };
  static NodeCache& local() {
    thread_local NodeCache c;
    return c;
  }
  static inline thread_local bool gone = false;
  Free* head_ = nullptr;
  int count_ = 0;
};

template <class T>
struct node_allocator {
  using value_type = T;
  node_allocator() = default;
  template <class U>
  node_allocator(const node_allocator<U>&) noexcept {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(NodeCache<sizeof(T)>::take());
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n != 1) return ::operator delete(p);
    NodeCache<sizeof(T)>::give(p);
  }
  template <class U>
  bool operator==(const node_allocator<U>&) const noexcept { return true; }
};

template <class Node = expr_node, class... A>
std::shared_ptr<Node> new_node(A&&... a) {
  return std::allocate_shared<Node>(node_allocator<Node>{}, std::forward<A>(a)...);
}

node_ptr array_leaf(const ndarray& a) { return new_node<expr_array_leaf>(a); }

node_ptr scalar_leaf(const scalar& v, dtype t) {
  auto n = new_node();
  n->k = expr_node::kind::scalar;
  n->type = t;
  n->leaves = 1;
  n->value = v;
  return n;
}

operand_type type_of(const operand& o) {
  if (!o.is_scalar) return {o.node()->type};
  if (o.value.value_kind() == scalar::kind::boolean) return {bool_};  // bool is bool
  return {bool_, true, o.value.weak_kind()};
}

std::string shapes_text(std::span<const operand> ops) {
  std::string s;
  for (const auto& o : ops)
    if (!o.is_scalar) s += (s.empty() ? "" : " ") + o.node()->shape.str();
  return s;
}

bool same_array(const ndarray& a, const ndarray& b) {
  return a.buffer() == b.buffer() && a.offset() == b.offset() && a.dtype() == b.dtype() &&
         a.shape() == b.shape() && a.strides() == b.strides();
}

// ---- the structure walk: distinct leaves in first-use order and the key bytes ----
struct Walk {
  std::array<const expr_node*, kMaxParams> leaves;
  int nleaves = 0;
  std::array<std::uint8_t, 4 * (kMaxNodes + 8) * 2> bytes;
  std::size_t nbytes = 0;

  void put(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    bytes[nbytes++] = a, bytes[nbytes++] = b, bytes[nbytes++] = c, bytes[nbytes++] = d;
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
    int j = leaf_index(n);
    if (j < 0) {
      j = nleaves++;
      leaves[std::size_t(j)] = n;
    }
    put(n->k == expr_node::kind::array ? 0xFE : 0xFD, std::uint8_t(j), std::uint8_t(n->type.id()),
        0xFF);
  }
};

void walk_roots(std::span<const node_ptr> roots, Walk& w) {
  for (const auto& r : roots) {
    w.visit(r.get());
    w.put(0xFC, 0, 0, 0);  // end of one output
  }
}

// ---- generating the kernel for one structure (the miss path) ----
// The trees as codegen sees them: nodes in post-order, leaves as their parameter index.
struct Flat {
  std::vector<codegen::ExpressionNode> nodes;
  std::vector<int> roots;
  std::vector<dtype> leaf_types;
};

int flatten(const Walk& w, const expr_node* n, Flat& f) {
  codegen::ExpressionNode out;
  if (n->k == expr_node::kind::op) {
    for (std::size_t k = 0; k < n->child.size(); ++k)
      if (n->child[k]) out.child[k] = flatten(w, n->child[k].get(), f);
    out.op = n->op;
    out.compute = n->compute;
  } else {
    out.leaf = w.leaf_index(n);
  }
  out.type = n->type;
  f.nodes.push_back(out);
  return int(f.nodes.size()) - 1;
}

Flat flatten(std::span<const node_ptr> roots, const Walk& w) {
  Flat f;
  for (const auto& r : roots) f.roots.push_back(flatten(w, r.get(), f));
  for (int j = 0; j < w.nleaves; ++j) f.leaf_types.push_back(w.leaves[std::size_t(j)]->type);
  return f;
}

std::unique_ptr<ElementwiseKernel> make_kernel(std::span<const node_ptr> roots, const Walk& w) {
  const Flat f = flatten(roots, w);
  codegen::ExpressionText t = codegen::expression_kernel_text(f.nodes, f.roots, f.leaf_types);
  elementwise_kernel_options o;
  o.preamble = std::move(t.helpers);
  o.return_tuple = roots.size() > 1;
  return std::make_unique<ElementwiseKernel>(t.in_params, t.out_params, std::move(t.code), "kiln_expr",
                                             std::move(o));
}

const ElementwiseKernel& kernel_for(std::span<const node_ptr> roots, const Walk& w) {
  auto& table = cache::process_table<std::unique_ptr<ElementwiseKernel>, struct expression_kernels>();
  return *table.get_or_create(hash128(w.bytes.data(), w.nbytes),
                                 [&] { return make_kernel(roots, w); });
}

// ---- splitting ----
bool fits(const expr_node& n) { return n.nodes <= kMaxNodes && n.leaves <= kMaxLeaves; }

void recount(expr_node& n) {
  n.nodes = 1;
  n.leaves = 0;
  for (const auto& c : n.child)
    if (c) n.nodes += c->nodes, n.leaves += c->leaves;
}

node_ptr fit(const node_ptr& n);

// n itself when it fits (no reference count taken), else its split copy, kept in `hold`.
const node_ptr& fitted(const node_ptr& n, node_ptr& hold) {
  if (fits(*n)) return n;
  hold = fit(n);
  return hold;
}

node_ptr fit(const node_ptr& n) {
  if (fits(*n)) return n;
  auto copy = new_node(*n);  // an operator node: leaves always fit
  for (auto& c : copy->child)
    if (c) c = fit(c);
  recount(*copy);
  while (!fits(*copy)) {
    auto* big = &copy->child[0];
    for (auto& c : copy->child)
      if (c && c->nodes + c->leaves > (*big)->nodes + (*big)->leaves) big = &c;
    *big = array_leaf(expr(*big).eval());
    recount(*copy);
  }
  return copy;
}

// Runs `roots` as one kernel; outputs are allocated, or outs (one per root).
kernel_result run(std::span<const node_ptr> roots, ndarray* outs) {
  Walk w;
  walk_roots(roots, w);
  const ElementwiseKernel& k = kernel_for(roots, w);
  // kernel_arg has no default constructor: only the used prefix is constructed (no heap).
  static_assert(std::is_trivially_destructible_v<kernel_arg>);
  alignas(kernel_arg) std::byte storage[sizeof(kernel_arg) * kMaxParams];
  auto* args = reinterpret_cast<kernel_arg*>(storage);
  for (int j = 0; j < w.nleaves; ++j) {
    const expr_node* leaf = w.leaves[std::size_t(j)];
    if (leaf->k == expr_node::kind::array)
      new (&args[j]) kernel_arg(leaf->array());
    else
      new (&args[j]) kernel_arg(leaf->value);
  }
  std::size_t n = std::size_t(w.nleaves);
  if (outs)
    for (std::size_t r = 0; r < roots.size(); ++r) new (&args[n++]) kernel_arg(outs[r]);
  return k.call(std::span<const kernel_arg>(args, n));
}

// The node bound at the loop dtype's range: its smallest or largest value.
scalar bound_of(dtype t, bool largest) {
  const int bits = int(t.itemsize()) * 8;
  if (t.kind() == 'u')
    return largest ? scalar(bits == 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << bits) - 1)
                   : scalar(std::uint64_t(0));
  const std::int64_t hi =
      bits == 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t(1) << (bits - 1)) - 1;
  return largest ? scalar(hi) : scalar(-hi - 1);
}

// A comparison of an integer array with an int beyond its dtype's range has one answer for
// every element (uint8 < -1 is false, uint8 != 300 true), as NumPy 2 gives it: the node
// becomes the comparison with the range's bound that has that answer everywhere
// (x < min, x >= min, x > max or x <= max).
expr compare_out_of_range(std::shared_ptr<expr_node> n, std::span<const operand> ops, std::size_t k,
                          dtype to) {
  const bool below = ops[k].value.is_negative();
  // The answer of `array op scalar` (scalar on the right; mirrored when it is on the left).
  op_id op = n->op;
  if (k == 0) {
    op = op == op_id::less            ? op_id::greater
         : op == op_id::less_equal    ? op_id::greater_equal
         : op == op_id::greater       ? op_id::less
         : op == op_id::greater_equal ? op_id::less_equal
                                      : op;
  }
  bool answer = false;
  switch (op) {
    case op_id::less:
    case op_id::less_equal:
      answer = !below;
      break;
    case op_id::greater:
    case op_id::greater_equal:
      answer = below;
      break;
    case op_id::not_equal:
      answer = true;
      break;
    default:
      answer = false;
      break;  // equal
  }
  n->op = below ? (answer ? op_id::greater_equal : op_id::less)
                : (answer ? op_id::less_equal : op_id::greater);
  n->child[0] = ops[1 - k].node();
  n->child[1] = scalar_leaf(bound_of(to, !below), to);
  recount(*n);
  return expr(std::move(n));
}

}  // namespace

operand::operand(const ndarray& a) : leaf(array_leaf(a)) {}
operand::operand(const expr& e) noexcept : borrowed(&e.node_ptr()) {}

expr make_op(op_id id, std::span<const operand> ops) {
  const op_row& row = op_info(id);
  const bool is_where = id == op_id::where;
  const auto values = is_where ? ops.subspan(1) : ops;
  std::array<operand_type, 3> types;
  const std::size_t nvalues = std::min(values.size(), types.size());  // arity is at most 3
  for (std::size_t k = 0; k < nvalues; ++k) types[k] = type_of(values[k]);
  const op_types t = codegen::resolve_op_types(id, std::span(types.data(), nvalues));

  auto n = new_node();
  n->op = id;
  n->type = t.result;
  n->compute = t.compute;
  bool first = true;
  for (const auto& o : ops) {
    if (o.is_scalar) continue;
    if (first) {
      n->shape = o.node()->shape;
      first = false;
      continue;
    }
    const Shape& s = o.node()->shape;
    if (s == n->shape) continue;
    try {
      n->shape = broadcast_shapes({n->shape, s});
    } catch (const ShapeError&) {
      throw ShapeError(fmt::format("{}: operands could not be broadcast together with shapes {}",
                                   row.name, shapes_text(ops)));
    }
  }
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const operand& o = ops[k];
    if (!o.is_scalar) {
      n->child[k] = o.node();
      continue;
    }
    // NumPy converts a weak scalar to the dtype of the loop the operator resolves to; an int
    // that does not fit it is the table's case (op_types::fit).
    const bool cond = is_where && k == 0;
    const dtype to = cond ? bool_ : t.scalar;
    // logical_*: an int becomes a bool through a C long in NumPy, so one past int64 fails.
    const dtype range = t.fit == codegen::scalar_fit::truth ? int64 : to;
    if (cond || o.value.fits(range)) {
      // NumPy refuses a negative integer exponent for an integer loop, whatever the base (an
      // exponent array's negative values give 0 instead: the device cannot raise).
      if (id == op_id::power && k == 1 && to.is_integer() && o.value.is_negative())
        throw ValueError(fmt::format(
            "power: integers to negative integer powers are not allowed ({} ** {}; NumPy "
            "raises ValueError)",
            to, o.value.str()));
      n->child[k] = scalar_leaf(o.value, to);
      continue;
    }
    switch (t.fit) {
      case codegen::scalar_fit::raise:
        throw ValueError(fmt::format(
            "{}: the integer {} is out of bounds for {}, the dtype the operation converts it to "
            "(NumPy raises OverflowError: Python integer {} out of bounds for {})",
            row.name, o.value.str(), to, o.value.str(), to));
      case codegen::scalar_fit::truth:
        // Only an int past int64: NumPy makes the int a bool through a C long.
        throw ValueError(fmt::format(
            "{}: the integer {} does not fit int64 (NumPy converts it to bool through a C long "
            "and raises OverflowError: Python int too large to convert to C long)",
            row.name, o.value.str()));
      case codegen::scalar_fit::wrap:
        n->child[k] = scalar_leaf(o.value.wrapped(to), to);
        break;
      case codegen::scalar_fit::compare:
        return compare_out_of_range(std::move(n), ops, k, to);
    }
  }
  recount(*n);
  return expr(std::move(n));
}

expr make_cast(const operand& a, dtype t) {
  auto n = new_node();
  n->op = op_id::astype;
  n->type = t;
  n->compute = a.is_scalar ? a.value.natural_dtype() : a.node()->type;
  n->child[0] = a.is_scalar ? scalar_leaf(a.value, n->compute) : a.node();
  n->shape = a.is_scalar ? Shape{} : a.node()->shape;
  recount(*n);
  return expr(std::move(n));
}

// NumPy's clip (numpy/_core/_methods.py): for an integer array, a Python int bound at or past
// the dtype's range is dropped before the ufunc sees it, so it never raises; a bound left is
// converted as maximum/minimum convert it (and one out of range there raises).
expr make_clip(const operand& a, const operand& lo, const operand& hi) {
  const dtype t = a.node()->type;
  // Whether bound b is a C++ integer at or past the range's end on its side (NumPy drops
  // min <= iinfo.min and max >= iinfo.max).
  auto beyond = [&](const operand& b, bool upper) {
    if (!t.is_integer() || !b.is_scalar) return false;
    const auto k = b.value.value_kind();
    if (k != scalar::kind::signed_integer && k != scalar::kind::unsigned_integer) return false;
    if (!b.value.fits(t)) return b.value.is_negative() != upper;
    std::array<std::byte, 8> v, end;
    b.value.store_as(t, v.data());
    bound_of(t, upper).store_as(t, end.data());
    return std::memcmp(v.data(), end.data(), t.itemsize()) == 0;
  };
  const bool no_lo = beyond(lo, false), no_hi = beyond(hi, true);
  if (no_lo && no_hi) {
    const operand ops[] = {a};
    return make_op(op_id::positive, ops);
  }
  if (no_lo) {
    const operand ops[] = {a, hi};
    return make_op(op_id::minimum, ops);
  }
  const operand ops[] = {a, lo};
  const expr m = make_op(op_id::maximum, ops);
  if (no_hi) return m;
  const operand outer[] = {operand(m), hi};
  return make_op(op_id::minimum, outer);
}

void assign_in_place(ndarray& target, op_id id, const operand& rhs) {
  const operand ops[] = {operand(target), rhs};
  const expr e = make_op(id, ops);
  eval_into(e, target);
}

}  // namespace detail

expr::expr(const ndarray& a) : node_(detail::array_leaf(a)) {}

std::int64_t expr::size() const noexcept {
  std::int64_t s = 1;
  for (auto d : node_->shape) s *= d;
  return s;
}

expr expr::astype(kiln::dtype t) const { return detail::make_cast(detail::operand(*this), t); }

ndarray expr::eval() const {
  detail::node_ptr hold;
  return detail::run(std::span(&detail::fitted(node_, hold), 1), nullptr).array();
}

std::vector<ndarray> eval(std::span<const expr> outputs) {
  if (outputs.empty()) return {};
  if (outputs.size() > 16)
    throw ValueError(fmt::format("eval: at most 16 outputs in one kernel, got {}", outputs.size()));
  std::vector<detail::node_ptr> roots;
  Shape shape = outputs[0].shape();
  for (const auto& e : outputs) {
    if (e.shape() != shape)
      throw ShapeError(fmt::format("eval: every output must have one shape; got {} and {}",
                                   shape.str(), e.shape().str()));
    roots.push_back(detail::fit(e.node_ptr()));
  }
  std::uint32_t leaves = 0, nodes = 0;
  for (const auto& r : roots) leaves += r->leaves, nodes += r->nodes;
  if (leaves + roots.size() > detail::kMaxLeaves || nodes > detail::kMaxNodes) {
    std::vector<ndarray> out;  // too large together: one kernel per output
    for (const auto& r : roots) out.push_back(expr(r).eval());
    return out;
  }
  return detail::run(roots, nullptr).to_vector();
}

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
      throw ValueError(fmt::format("non-broadcastable output operand with shape {} doesn't match "
                                   "the broadcast shape {}",
                                   out.shape().str(), loop.str()));
  }
  if (e.dtype() == out.dtype()) return fitted(e.node_ptr(), hold);
  if (!can_cast_same_kind(e.dtype(), out.dtype()))
    throw TypeError(fmt::format(
        "Cannot cast {} output from {} to {} with casting rule 'same_kind'",
        e.node().k == expr_node::kind::op ? op_info(e.node().op).name : std::string_view("array"),
        e.dtype(), out.dtype()));
  hold = fit(e.astype(out.dtype()).node_ptr());
  return hold;
}

}  // namespace

void eval_into_many(std::span<const expr> exprs, std::span<ndarray> outs) {
  if (exprs.size() != outs.size())
    throw ValueError(fmt::format("eval_into: {} expressions for {} outputs", exprs.size(), outs.size()));
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

Hash128 expression_key(const expr& e) {
  detail::Walk w;
  const detail::node_ptr root = detail::fit(e.node_ptr());
  detail::walk_roots(std::span(&root, 1), w);
  return hash128(w.bytes.data(), w.nbytes);
}

const ElementwiseKernel& aot::expression_kernel(const expr& e) {
  detail::Walk w;
  const detail::node_ptr root = detail::fit(e.node_ptr());
  detail::walk_roots(std::span(&root, 1), w);
  return detail::kernel_for(std::span(&root, 1), w);
}

std::vector<kernel_arg> aot::expression_leaves(const expr& e) {
  detail::Walk w;
  const detail::node_ptr root = detail::fit(e.node_ptr());
  detail::walk_roots(std::span(&root, 1), w);
  std::vector<kernel_arg> out;
  for (int j = 0; j < w.nleaves; ++j) {
    const auto* leaf = w.leaves[std::size_t(j)];
    if (leaf->k == detail::expr_node::kind::array)
      out.emplace_back(leaf->array());
    else
      out.emplace_back(leaf->value);
  }
  return out;
}

void detail::bind_expression(const expr& e, expression_binding& b) {
  detail::Walk w;
  b.root = detail::fit(e.node_ptr());
  detail::walk_roots(std::span(&b.root, 1), w);
  b.key = hash128(w.bytes.data(), w.nbytes);
  b.nleaves = w.nleaves;
  std::copy_n(w.leaves.begin(), w.nleaves, b.leaves.begin());
}

codegen::ExpressionText expression_map(const expr& e) {
  detail::Walk w;
  const detail::node_ptr root = detail::fit(e.node_ptr());
  detail::walk_roots(std::span(&root, 1), w);
  const detail::Flat f = detail::flatten(std::span(&root, 1), w);
  return codegen::expression_map_text(f.nodes, f.roots[0], f.leaf_types);
}

}  // namespace kiln
