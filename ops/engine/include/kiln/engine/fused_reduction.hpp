#pragma once
// Reductions written as code over one element, run over an ndarray or fused with an
// expression: `sum(x * x)` is ONE reduction kernel whose map is the expression's (reading x
// directly, no temporary). The library's built-in reductions (sum, var, linalg::norm, ...)
// are rows of this type; a user can add one the same way.
//
//   // static storage: a row's address names its kernels in the process
//   static const kiln::reduction_code kSumSquares{
//       .name = "sum_squares", .map = "kiln_cast<U>(x) * kiln_cast<U>(x)", .reduce = "a + b",
//       .post = "y = a", .identity = "0"};
//   kiln::reduction_kernel(kSumSquares)(x, out, kiln::reduce_options{.axis = 1});
//   kiln::reduce_expression(kSumSquares, x - y, nullptr, out, {.axis = 1});   // fused
//   kiln::lazy_expr s = kiln::reduce_lazily(kSumSquares, x - y, 0b10, true, kiln::float32);
#include <cstdint>
#include <span>

#include "kiln/engine/expression.hpp"
#include "kiln/engine/reduce_options.hpp"
#include "kiln/engine/reduction_kernel.hpp"
#include "kiln/engine/row_kernel.hpp"

namespace kiln {

/// A reduction as code over one input element `x` of placeholder type T into one output
/// `U y` (or the outputs `out` names), in ReductionKernel's terms. Rows must have static storage
/// duration: a row's address keys its kernels, so a hit hashes a pointer, never text.
struct reduction_code {
  const char* name = "";         // the kernel's name (a fused kernel's is name + "_expr")
  const char* in = "T x";        // "T x", or "T x, raw int64 ddof"
  const char* map = "x";         // over x (may read x more than once, and _J)
  const char* reduce = "a + b";  // over a, b
  const char* post = "y = a";    // statements setting y from a
  const char* identity = "";     // "" for none
  const char* reduce_type = "";  // "" for U
  const char* preamble = "";     // file-scope device code the row uses
  const char* out = "U y";       // the outputs: "U y", or several ("U v, U m") that post sets
  // Fields of the accumulator (moments: 5), a register each at float32 accumulation: a row
  // kernel holding several rows a lane budgets its registers with them.
  int state_words = 1;
};

/// The ReductionKernel running `code` over arrays (inputs: `in`; output `U y`), made once per
/// process.
const ReductionKernel& reduction_kernel(const reduction_code& code);

/// The ReductionKernel running `code` over expressions of e's structure: its parameters are
/// e's distinct leaves (expression_leaves), then `raw int64 ddof` when `in` has it, then the
/// output (placeholder U). Made once per (structure, row); for ahead-of-time compiles.
const ReductionKernel& fused_reduction_kernel(const reduction_code& code, const expr& e);

/// Runs `code` over e into `outs` (one per output of the row; shapes and dtypes already
/// checked by the caller): one kernel on the current stream. ddof: the value of the row's
/// `raw int64 ddof`, if it has one.
void reduce_expression(const reduction_code& code, const expr& e, const std::int64_t* ddof,
                       std::span<const ndarray> outs, const reduce_options& ro);
inline void reduce_expression(const reduction_code& code, const expr& e, const std::int64_t* ddof,
                              const ndarray& out, const reduce_options& ro) {
  reduce_expression(code, e, ddof, std::span<const ndarray>(&out, 1), ro);
}

/// A lazy reduction: `code` over the axes `mask` of e's shape, giving `type`, as a node of
/// the expression (lazy_expr, expression.hpp), run when the expression is evaluated. ddof:
/// the value of the row's `raw int64 ddof`, if it has one. `in_rows`: an expression of the
/// same values the planner uses instead when the reduction runs inside a row kernel, where
/// the row is in registers (var as NumPy's two-pass formula: two cheap sums rather than one
/// costly merge). Checks nothing beyond its own arguments (the library's reductions check
/// axes, dtypes and empty inputs first); the row must have one output.
lazy_expr reduce_lazily(const reduction_code& code, const expr& e, std::uint64_t mask,
                        bool keepdims, dtype type, const std::int64_t* ddof = nullptr,
                        const expr* in_rows = nullptr);

namespace aot {
/// The RowKernel that evaluating `e` (an expression with lazy reductions) runs, or nullptr
/// when its reductions do not fuse with it (they then run as reduction kernels: the fused
/// reductions of aot::fused_reduction and composite ReductionKernels). Its parameters are
/// e's distinct leaves (of every reduction's input too), then the output. `streamed`: the
/// kernel for rows too long for a block's registers and shared memory, read again from L2 each
/// phase, whose reductions run in one pass each (var as moments, not NumPy's two passes).
const RowKernel* row_kernel(const expr& e, bool streamed = false);
/// The arguments row_kernel(e, streamed) takes before its output: e's distinct leaves.
std::vector<kernel_arg> row_kernel_leaves(const expr& e, bool streamed = false);
/// The ONE ReductionKernel that runs `reductions` (2 to 8 lazy reductions of one input shape
/// and axes, e.g. kiln::mean(x, 0) and kiln::std(x, 0) of a lazy x) together when they are
/// evaluated in one call (kiln::fuse with several results, or a plan's phase): its parameters
/// are their inputs' distinct leaves (a ddof as `raw int64`), then one output per reduction.
const ReductionKernel& multi_reduction(std::span<const expr> reductions);
}  // namespace aot

}  // namespace kiln
