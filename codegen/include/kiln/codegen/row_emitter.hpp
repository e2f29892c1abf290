#pragma once
// CUDA C++ for one row kernel: a RowDefinition (reductions of rows consumed by expressions of
// the same rows) specialised by a RowSpec.
//
//   std::string src = emit_rows(def, spec);   // extern "C" __global__ void <name>(...)
//
// Each row is read from memory once: the leaves more than one phase reads stay in registers
// (spec.items vectors of spec.vector_width elements per thread), the others are loaded where
// they are read. A streamed spec (items 0) holds nothing: every phase and the outputs load
// the row again, a loop over its vectors. Each phase's reductions combine the row's lanes
// (shuffles within a group, then one shared slot per warp for a block) and every lane takes
// the same result; the outputs are stored with vector stores along the row.
//
// Kernel arguments (kernel_abi.hpp spells and sizes each kind), in this order:
//   for each parameter k (inputs, then outputs), by spec.kind(k):
//     scalar   value    the value in the parameter's dtype (named as the parameter)
//     array    strided  over out_ndim + 1 dims: the output dims, then the row
//   then  index  the number of rows M;  index  the row length N (at most the spec holds:
//         lanes * items * vector_width; any length when streamed);  dims  the collapsed
//         shape (out_ndim dims, then N)
// row_arg(spec, k) describes argument k; host packing and the declarations both come from it.
#include <string>

#include "kiln/codegen/kernel_abi.hpp"
#include "kiln/codegen/row_definition.hpp"
#include "kiln/codegen/row_spec.hpp"

namespace kiln::codegen {

std::string emit_rows(const RowDefinition& def, const RowSpec& spec);

/// Kernel argument k in the order above (k < nparams: a parameter).
AbiArg row_arg(const RowSpec& spec, int k);
int row_arg_count(const RowSpec& spec);

}  // namespace kiln::codegen
