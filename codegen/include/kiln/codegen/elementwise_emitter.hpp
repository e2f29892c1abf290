#pragma once
// CUDA C++ for one elementwise kernel: a definition specialised by a spec.
//
//   std::string src = emit_elementwise(def, spec);   // extern "C" __global__ void <name>(...)
//
// Kernel arguments (kernel_abi.hpp spells and sizes each kind), in this order:
//   for each parameter k (inputs, then outputs), by spec.kind(k):
//     scalar     value      the value, converted to the parameter's dtype
//     array      contiguous: pointer (element 0);  strided, tiled: strided over the collapsed dims
//     uniform    pointer    the one element
//     raw_array  raw_array  the whole array
//   then  index             the loop size
//   then, strided and tiled: loop_dims   the planned loop: extents, steps of the flat index i,
//                            and divisors: strided, the extents but the last axis counted in
//                            vectors; tiled, the extents but rows and cols counted in tiles
// Strided kernels launch as elementwise_geometry says (a thread per `unroll` vectors); tiled
// kernels as tiled_geometry says (32x8 threads, a 1-D grid of tiles).
// elementwise_arg(spec, k) describes argument k; host packing and the emitted declarations
// both come from it.
//
// User code is wrapped in #line directives, so NVRTC reports `operation(2): error: ...`,
// `preamble(5)`, `loop_prep(1)`, `after_loop(1)`.
#include <cstddef>
#include <string>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/elementwise_spec.hpp"
#include "kiln/codegen/kernel_abi.hpp"

namespace kiln::codegen {

std::string emit_elementwise(const ElementwiseDefinition& def, const ElementwiseSpec& spec);

/// Whether output k (0-based among outputs) is loaded before the operation in the
/// vectorized path (see operation_analysis.hpp).
bool output_needs_load(const ElementwiseDefinition& def, int k);

/// Kernel argument k as in the list above: k < nparams a parameter (is_output makes an
/// array pointer writable), then the loop size, then (strided, tiled) the loop dims.
AbiArg elementwise_arg(const ElementwiseSpec& spec, int k, bool is_output = false);
/// Static shared memory of a tiled kernel: one padded 32x33 tile per staged operand (the
/// planner keeps it within kMaxTiledSharedBytes).
std::size_t tiled_shared_bytes(const ElementwiseSpec& spec);
inline constexpr std::size_t kMaxTiledSharedBytes = 48 * 1024;
/// How many kernel arguments a kernel of this spec takes.
int elementwise_arg_count(const ElementwiseSpec& spec);

}  // namespace kiln::codegen
