#pragma once
// Several reductions in one kernel. A reduction row (ReductionCode over one element `x` of
// type T into `U y`, as the library's built-ins are written) becomes a part: its code as
// device functions in a namespace of its own, so parts of different dtypes and helper
// typedefs (kiln_R, ...) never clash. Parts are what fused kernels compose:
//   - composite_reduction: ONE ReductionKernel computing every part over the same axes in
//     one pass (mean and std of x, or max(x) and sum(x * y)), one output per part;
//   - the row kernels (row_emitter.hpp): reductions of a row consumed by an expression of it.
//
//   ReductionPart sum{.code = {.map_expr = "kiln_cast<kiln_R>(x)", .reduce_expr = "a + b",
//                              .post_map_expr = "y = kiln_cast<U>(a)", .identity = "0",
//                              .reduce_type = "kiln_R", .preamble = helpers},
//                     .in = float32, .out = float32};
//   std::string text = reduction_parts_text({&sum, 1});   // namespace kiln_r0 { ... }
//   // kiln_r0::acc a = kiln_r0::init(); kiln_r0::add(a, kiln_r0::map(x, j));
//   // kiln_r0::combine(a, b); kiln_r0::post(a.v, y, ddof, in_size, out_size);
//
// Inside a part, the row's code sees what a ReductionKernel's does: x and _J in map_expr;
// a and b in reduce_expr; a, y, ddof, _in_ind.size() and _out_ind.size() in post_map_expr;
// T, U and the part's preamble everywhere.
#include <span>
#include <string>

#include "kiln/codegen/reduction_definition.hpp"
#include "kiln/runtime/dtype.hpp"

namespace kiln::codegen {

struct ReductionPart {
  ReductionCode code;
  dtype in = float32;   // T: the element dtype the map reads
  dtype out = float32;  // U: the result dtype post writes
};

/// `namespace kiln_r<k> { ... }` for each part k: its accumulator type `acc` ({v, has}: has
/// is false only for an accumulator that saw nothing of a reduction with no identity) and the
/// functions map, init, add, combine and post; they see T, U and the part's preamble through
/// a namespace of helpers that parts of the same dtypes and preamble share.
std::string reduction_parts_text(std::span<const ReductionPart> parts);

/// ONE ReductionKernel's code computing parts[k] of the value `inputs[k]` (an expression over
/// the kernel's inputs) into output `out<k>`, all in one pass. ddof_inputs[k]: the input
/// (`in<j>`) holding part k's ddof, or -1. `helpers`: device code the input expressions call.
/// The reduce type is a struct of every part's; the identity is every part's (none if one
/// part has none: a non-empty reduction then starts from its first element).
ReductionCode composite_reduction(std::span<const ReductionPart> parts,
                                  std::span<const std::string> inputs,
                                  std::span<const int> ddof_inputs, std::string_view helpers);

}  // namespace kiln::codegen
