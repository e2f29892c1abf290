#pragma once
// An elementwise kernel's definition: the shared KernelDefinition (parameters, name, options,
// preamble, hash) plus the elementwise code. Built (and fully checked) once, without a GPU;
// the per-call part is an ElementwiseSpec.
//
//   ElementwiseDefinition def = make_elementwise_definition(
//       "float32 x, T y", "T z", {.operation = "z = x + y"}, "add", {});
//   def.nin;           // 2
//   def.placeholders;  // {"T"}
#include <string>
#include <string_view>
#include <vector>

#include "kiln/codegen/kernel_definition.hpp"

namespace kiln::codegen {

/// The user's code, as ElementwiseKernel takes it.
struct ElementwiseCode {
  std::string operation;
  std::string preamble;    // at file scope, before the kernel (functions, macros, constants)
  std::string loop_prep;   // in the kernel, before the loop (locals the operation uses)
  std::string after_loop;  // in the kernel, after the loop
};

struct ElementwiseDefinition : KernelDefinition {
  std::string operation, loop_prep, after_loop;
  /// The user's code may read the flat loop index (`i`, `_ind`): the planner then keeps the
  /// loop's axis order (the index is computed in any order, but axes it ties together cannot
  /// be merged once reordered). False lets a transposed output reorder the loop.
  bool uses_index = true;
};

/// Parses and checks a definition; throws SignatureError (see make_kernel_definition; also an
/// empty or blank operation, which would leave the outputs unwritten).
ElementwiseDefinition make_elementwise_definition(std::string_view in_params,
                                                  std::string_view out_params, ElementwiseCode code,
                                                  std::string_view name,
                                                  const std::vector<std::string>& options);

}  // namespace kiln::codegen
