#pragma once
// CUDA C++ for one elementwise kernel: a definition specialised by a spec.
//
//   std::string src = emit_elementwise(def, spec);   // extern "C" __global__ void <name>(...)
//
// Kernel ABI (what the host passes, one kernel argument per line, in this order):
//   for each parameter k (inputs, then outputs), by spec.kind(k):
//     scalar     T            the value, converted to the parameter's dtype
//     array      contiguous: T* (element 0);  strided: kiln_strided<ndim, I> {char* p; I s[ndim];}
//                (byte strides over the collapsed loop dims)
//     uniform    const T*     the one element
//     raw_array  kiln_carray<T, nd, contig, I> {T* data; I size; I shape[max(nd,1)];
//                I strides[max(nd,1)];}   (byte strides)
//   then  I n                 the loop size
//   then, strided only: kiln_dims<ndim, I> {I v[ndim];}  the collapsed loop shape
// where I is int (index_bits 32) or long long (64). `elementwise_arg_size` gives each size.
//
// User code is wrapped in #line directives, so NVRTC reports `operation(2): error: ...`,
// `preamble(5)`, `loop_prep(1)`, `after_loop(1)`.
#include <cstddef>
#include <string>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/elementwise_spec.hpp"

namespace kiln::codegen {

std::string emit_elementwise(const ElementwiseDefinition& def, const ElementwiseSpec& spec);

/// Whether output k (0-based among outputs) is loaded before the operation in the
/// vectorized path (see operation_analysis.hpp).
bool output_needs_load(const ElementwiseDefinition& def, int k);

/// Byte size of kernel argument `k` (parameter k, as in the ABI above).
std::size_t elementwise_arg_size(const ElementwiseSpec& spec, int k);

}  // namespace kiln::codegen
