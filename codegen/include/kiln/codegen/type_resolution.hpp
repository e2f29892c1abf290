#pragma once
// Per-call dtypes of a kernel's parameters, CuPy's rule without its KeyError: an array must
// have exactly its parameter's fixed dtype, or the dtype its placeholder is bound to (no
// promotion). Placeholders are bound by array arguments only, outputs first, then inputs in
// order; scalars never bind, they are converted to their parameter's dtype.
//
//   ArgInfo args[] = {{float32, true}, {float32, true}, {}};  // x, y arrays; z not given
//   dtype types[3];
//   resolve_param_types(def, args, types);  // types = {float32, float32, float32}
//
// Errors (kiln::TypeError) name the kernel, the parameter, the dtype given and the one
// expected, or the placeholder no array could bind.
#include <span>

#include "kiln/codegen/kernel_definition.hpp"
#include "kiln/runtime/dtype.hpp"

namespace kiln::codegen {

/// What one call passes for one parameter: an array of `type`, or not an array (a scalar,
/// or an output not passed).
struct ArgInfo {
  dtype type = float64;
  bool is_array = false;
};

/// args and out have one entry per parameter (inputs, then outputs). Allocation-free unless
/// it throws.
void resolve_param_types(const KernelDefinition& def, std::span<const ArgInfo> args,
                         std::span<dtype> out);

}  // namespace kiln::codegen
