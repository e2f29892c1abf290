#pragma once
// Fused array expressions: NumPy-style operators on ndarrays and C++ scalars build a small
// expression; turning it into an ndarray runs ONE generated kernel over the broadcast shape.
//
//   kiln::ndarray z = kiln::sin(x) * 5 + y * y;   // one kernel, one pass over memory
//   auto e = x * 2 - 1;                           // an expression (holds x alive): no work yet
//   kiln::ndarray w = e.eval();                   // runs it
//   x *= 5;                                       // in place: one kernel writing x
//   x += x(kiln::slice(std::nullopt, std::nullopt, -1));  // overlap: as if the input were copied
//
// Types follow NumPy 2 for every operator and function (codegen/src/op_table.cpp):
// C++ scalars are weak like Python's ints and floats (NEP 50: `x_f32 * 2.5` is float32, `x_i8 + 1`
// is int8): an integer is converted to the dtype of the loop the operator resolves to, and
// only one that does not fit it throws (ValueError where NumPy raises OverflowError:
// `x_u8 + -1`, `x_i8 + 1000`); `x_u8 / -2` is float64, comparisons with any int are exact
// (`x_u8 < -1` is all false), logical_* take any int up to int64's range as a bool, where()
// converts its scalars as a C cast, clip() drops an int bound beyond the array's range (all as
// NumPy 2). int / int is float64, float16 and bfloat16 are
// computed in float32 and rounded once when stored, integer division and remainder by zero give
// 0. Shape and dtype errors (ShapeError, TypeError) are raised by the operator that was written,
// before any device work. Comparisons return bool expressions; `&&`/`||` are not overloaded
// (use logical_and / logical_or).
//
// Cost: the first evaluation of an expression structure (ops and dtypes, which leaves are the
// same array, which are scalars) generates and compiles one kernel; later ones hash the tree
// (no strings) and take ElementwiseKernel's call path. Scalar values are kernel arguments:
// `x * 5` and `x * 6` share one binary. An array used twice is read once.
//
// Reductions hook: expression_map(e) gives the map expression text over named parameters plus
// the parameter list (see expression_map below), for a reduction kernel to fuse `sum(x * x)`.
#include <array>
#include <complex>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/codegen/kernel_definition.hpp"
#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/codegen/expression_emitter.hpp"
#include "kiln/codegen/expression_op.hpp"
#include "kiln/engine/kernel_arg.hpp"
#include "kiln/runtime/hash128.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/scalar.hpp"

namespace kiln {

class expr;

namespace detail {

/// One node of an expression tree. Leaves hold an array (kept alive: an expr_array_leaf) or a
/// scalar; operator nodes carry no array, so they stay small.
struct expr_node {
  // Not `= default`: value-initialising (make_shared) would then zero all of the node first.
  expr_node() noexcept {}
  enum class kind : std::uint8_t { array, scalar, op };
  kind k = kind::op;
  codegen::op_id op = codegen::op_id::add;
  dtype type;     // the node's dtype (a scalar leaf: the dtype its op converts it to)
  dtype compute;  // op nodes: the dtype the device expression computes in
  Shape shape;    // broadcast shape (a scalar: ())
  std::uint32_t nodes = 1;   // nodes in this subtree
  std::uint32_t leaves = 0;  // leaf occurrences in this subtree (bounds its parameters)
  std::array<std::shared_ptr<const expr_node>, 3> child;
  scalar value{false};

  /// The array of an array leaf (k == kind::array).
  const ndarray& array() const noexcept;
};

/// An array leaf: the node and the array it reads.
struct expr_array_leaf final : expr_node {
  explicit expr_array_leaf(const ndarray& a) noexcept : arr(a) {
    k = kind::array;
    type = a.dtype();
    shape = a.shape();
    leaves = 1;
  }
  ndarray arr;
};

inline const ndarray& expr_node::array() const noexcept {
  return static_cast<const expr_array_leaf*>(this)->arr;
}

/// An operand as an operator receives it: a node, or a C++ scalar (weak). An expression's
/// node is borrowed (the expression outlives the operator call), an array gets a new leaf:
/// building a tree then takes one reference count per child, not three.
struct operand {
  operand(const ndarray& a);                                 // NOLINT
  operand(const expr& e) noexcept;                           // NOLINT
  template <kernel_scalar T>
  operand(T v) : is_scalar(true), value(v) {}  // NOLINT
  const std::shared_ptr<const expr_node>& node() const noexcept { return borrowed ? *borrowed : leaf; }
  std::shared_ptr<const expr_node> leaf;                     // an array's new leaf
  const std::shared_ptr<const expr_node>* borrowed = nullptr;  // an expression's node
  bool is_scalar = false;
  scalar value{false};
};

expr make_op(codegen::op_id id, std::span<const operand> operands);
expr make_cast(const operand& a, dtype t);
expr make_clip(const operand& a, const operand& lo, const operand& hi);
void assign_in_place(ndarray& target, codegen::op_id id, const operand& rhs);

}  // namespace detail

/// A lazily evaluated array expression (cheap to copy: a shared tree).
class expr {
 public:
  /// A leaf for an existing array.
  expr(const ndarray& a);  // NOLINT: arrays are expressions
  explicit expr(std::shared_ptr<const detail::expr_node> n) noexcept : node_(std::move(n)) {}

  kiln::dtype dtype() const noexcept { return node_->type; }
  const Shape& shape() const noexcept { return node_->shape; }
  int ndim() const noexcept { return node_->shape.size(); }
  std::int64_t size() const noexcept;

  /// Runs the expression as one kernel (split in parts if very large) on the current stream.
  ndarray eval() const;
  operator ndarray() const { return eval(); }  // NOLINT: `ndarray z = x + y;`
  /// Converts inside the expression, like NumPy's astype (no extra pass).
  expr astype(kiln::dtype t) const;

  const detail::expr_node& node() const noexcept { return *node_; }
  const std::shared_ptr<const detail::expr_node>& node_ptr() const noexcept { return node_; }

 private:
  std::shared_ptr<const detail::expr_node> node_;
};

/// Arrays and expressions: what makes an operator build an expression.
template <class T>
concept array_like = std::same_as<std::remove_cvref_t<T>, ndarray> ||
                     std::same_as<std::remove_cvref_t<T>, expr>;
/// An operator or function argument: an array, an expression or a C++ scalar.
template <class T>
concept expr_operand = array_like<T> || kernel_scalar<T>;
/// Two operands of which at least one is an array or expression.
template <class A, class B>
concept expr_operands = expr_operand<A> && expr_operand<B> && (array_like<A> || array_like<B>);

// ---- evaluation and introspection (advanced) ----

/// Evaluates several expressions of one broadcast shape in ONE kernel (several outputs).
std::vector<ndarray> eval(std::span<const expr> outputs);
/// Evaluates `e` into `out` (shape: e broadcast to out's shape; dtype: NumPy's same_kind
/// casting). Inputs overlapping `out` are read as if copied first.
void eval_into(const expr& e, ndarray& out);

/// The structural key of an expression: ops, dtypes, leaf kinds and which leaves are the same
/// array. Scalar values and array shapes/layouts are not part of it (the layout goes into
/// the kernel's spec). Allocation-free.
Hash128 expression_key(const expr& e);
namespace aot {
/// The ElementwiseKernel that runs expressions of e's structure (generated once per key):
/// for ahead-of-time compiles (kernel.compile_requests) and tests. Its inputs are e's
/// distinct leaves in first-use order (see expression_leaves), its output e's dtype.
const ElementwiseKernel& expression_kernel(const expr& e);
/// e's distinct leaves (arrays and scalars) in the kernel's parameter order.
std::vector<kernel_arg> expression_leaves(const expr& e);
}  // namespace aot

/// The hook for fused reductions: e as a map expression over parameters `in0..inN` (the
/// distinct leaves; `in_params` names their dtypes) and the device helpers it calls. A
/// reduction kernel uses `code` as (part of) its map_expr and `helpers` in its preamble.
codegen::ExpressionText expression_map(const expr& e);

namespace detail {
/// For kernels that take an expression's leaves as their arguments (fused reductions): the
/// structural key (as expression_key), the tree as run (split if very large; it keeps any
/// split-off temporaries alive) and its distinct leaves in parameter order. Allocation-free
/// when e needs no split: the cache-hit path of a fused reduction.
struct expression_binding {
  Hash128 key;
  std::shared_ptr<const expr_node> root;
  int nleaves = 0;
  std::array<const expr_node*, codegen::kMaxParams> leaves;
};
void bind_expression(const expr& e, expression_binding& b);
}  // namespace detail

// ---- operators: array/expression with array/expression/scalar, either side ----
#define KILN_EXPR_BINARY(OP, ID)                                              \
  template <class A, class B>                                                 \
    requires expr_operands<A, B>                                              \
  expr operator OP(const A& a, const B& b) {                                  \
    const detail::operand ops[] = {detail::operand(a), detail::operand(b)};   \
    return detail::make_op(codegen::op_id::ID, ops);                           \
  }
KILN_EXPR_BINARY(+, add)
KILN_EXPR_BINARY(-, subtract)
KILN_EXPR_BINARY(*, multiply)
KILN_EXPR_BINARY(/, divide)
KILN_EXPR_BINARY(%, remainder)
KILN_EXPR_BINARY(==, equal)
KILN_EXPR_BINARY(!=, not_equal)
KILN_EXPR_BINARY(<, less)
KILN_EXPR_BINARY(<=, less_equal)
KILN_EXPR_BINARY(>, greater)
KILN_EXPR_BINARY(>=, greater_equal)
KILN_EXPR_BINARY(&, bitwise_and)
KILN_EXPR_BINARY(|, bitwise_or)
KILN_EXPR_BINARY(^, bitwise_xor)
KILN_EXPR_BINARY(<<, left_shift)
KILN_EXPR_BINARY(>>, right_shift)
#undef KILN_EXPR_BINARY

#define KILN_EXPR_UNARY(OP, ID)                                   \
  template <array_like A>                                         \
  expr operator OP(const A& a) {                                  \
    const detail::operand ops[] = {detail::operand(a)};           \
    return detail::make_op(codegen::op_id::ID, ops);               \
  }
KILN_EXPR_UNARY(-, negative)
KILN_EXPR_UNARY(+, positive)
KILN_EXPR_UNARY(~, invert)
KILN_EXPR_UNARY(!, logical_not)
#undef KILN_EXPR_UNARY

// ---- in place: x op= y evaluates x op y in one kernel writing x ----
// On an ndarray: runs now (NumPy's same_kind casting into x's dtype; y broadcasts to x's
// shape). On an expr: rebinds it to the new expression (inside kiln::fuse, an argument taken
// by reference and changed this way is written back to its array).
#define KILN_EXPR_IN_PLACE(OP, ID)                                       \
  template <expr_operand B>                                              \
  ndarray& operator OP(ndarray& x, const B& y) {                         \
    detail::assign_in_place(x, codegen::op_id::ID, detail::operand(y));   \
    return x;                                                            \
  }                                                                      \
  template <expr_operand B>                                              \
  expr& operator OP(expr& x, const B& y) {                               \
    const detail::operand ops[] = {detail::operand(x), detail::operand(y)}; \
    x = detail::make_op(codegen::op_id::ID, ops);                         \
    return x;                                                            \
  }
KILN_EXPR_IN_PLACE(+=, add)
KILN_EXPR_IN_PLACE(-=, subtract)
KILN_EXPR_IN_PLACE(*=, multiply)
KILN_EXPR_IN_PLACE(/=, divide)
KILN_EXPR_IN_PLACE(%=, remainder)
KILN_EXPR_IN_PLACE(&=, bitwise_and)
KILN_EXPR_IN_PLACE(|=, bitwise_or)
KILN_EXPR_IN_PLACE(^=, bitwise_xor)
KILN_EXPR_IN_PLACE(<<=, left_shift)
KILN_EXPR_IN_PLACE(>>=, right_shift)
#undef KILN_EXPR_IN_PLACE

}  // namespace kiln
