#pragma once
// CUDA C++ for one reduction kernel: a ReductionDefinition (from ReductionKernel, a built-in
// reduction, or the fused-expression generator) specialised by a ReductionSpec.
//
//   std::string src = emit_reduction(def, spec);   // extern "C" __global__ void <name>(...)
//
// Kernel arguments (kernel_abi.hpp spells and sizes each kind), in this order:
//   for each parameter k (inputs, then outputs), by spec.kind(k):
//     scalar     value      the value in the parameter's dtype
//     array      strided    inputs: over out_ndim + red_ndim dims (output dims first);
//                           outputs: over out_ndim dims
//     raw_array  raw_array  the whole array
//   then  index  the output size M;  index  the reduced size N
//   then  dims   the collapsed shape (out_ndim output dims, then red_ndim reduced dims)
//   then, split only: pointer (unsigned char*) partials workspace, pointer (unsigned int*)
//         zeroed counters (one per row for inner_block, one per block column for outer; for
//         folded one per group of fold_group(blocks) blocks and one for the last merge, after
//         the blocks' partials come the groups')
// reduction_arg(spec, k) describes argument k; host packing and the declarations both come
// from it. A split kernel's partials take reduction_partial_global's size each (read from the
// loaded module: the reduce type may be a user struct).
//
// Strategies never read a row with strided threads when it is contiguous, combine lanes with
// warp shuffles (any reduce type, moved as 32-bit words), blocks through one shared slot per
// warp, and split rows through partials that the last block to finish (an atomic counter
// after a __threadfence) combines in the same launch.
//
// User code is wrapped in #line directives: NVRTC reports `map_expr(1): error ...`,
// `reduce_expr(1)`, `post_map_expr(2)`, `identity(1)`, `preamble(5)`.
#include <string>

#include "kiln/codegen/kernel_abi.hpp"
#include "kiln/codegen/reduction_definition.hpp"
#include "kiln/codegen/reduction_spec.hpp"

namespace kiln::codegen {

std::string emit_reduction(const ReductionDefinition& def, const ReductionSpec& spec);

/// Kernel argument k in the order above (k < nparams: a parameter).
AbiArg reduction_arg(const ReductionSpec& spec, int k, bool is_output = false);
int reduction_arg_count(const ReductionSpec& spec);

/// Name of the __device__ array whose size is one partial's bytes (split kernels only).
inline constexpr const char* reduction_partial_global = "kiln_partial_bytes";

}  // namespace kiln::codegen
