#pragma once
// A reduction kernel's definition: the shared KernelDefinition plus CuPy's ReductionKernel
// code (map, reduce, post-map, identity, reduce type). Built once, without a GPU; the
// per-call part is a ReductionSpec. It is also THE entry point for generated reductions:
// the fused-expression generator builds one programmatically (its map_expr is the fused
// expression over named input parameters) and emits it with emit_reduction.
//
//   ReductionDefinition def = make_reduction_definition(
//       "T x", "T y",
//       {.map_expr = "x * x", .reduce_expr = "a + b", .post_map_expr = "y = sqrt(a)",
//        .identity = "0"},
//       "l2norm", {});
//   std::string src = emit_reduction(def, spec);        // reduction_emitter.hpp
//
// Names user code sees (as CuPy's):
//   map_expr       an expression of the input parameters (elements; raw ones are arrays),
//                  converted to the reduce type
//   reduce_expr    an expression of `a` and `b` (both of the reduce type)
//   post_map_expr  statements that read `a` (the reduced value) and assign the outputs
//   everywhere     _i (output index), _J (position along the reduced axes, C order),
//                  _j (= _i * reduced size + _J), _in_ind.size() (input loop size),
//                  _out_ind.size() (output size), _type_reduce (the reduce type)
#include <string>
#include <string_view>
#include <vector>

#include "kiln/codegen/kernel_definition.hpp"

namespace kiln::codegen {

struct ReductionCode {
  std::string map_expr, reduce_expr, post_map_expr;
  /// An expression of the reduce type; empty: no identity (an empty reduction is an error,
  /// and a non-empty one starts from its first element).
  std::string identity;
  /// C++ type of `a` and `b`: a dtype name, a placeholder, or a type from the preamble (a
  /// struct or template). Empty: the first output's type.
  std::string reduce_type;
  std::string preamble;
};

struct ReductionDefinition : KernelDefinition {
  std::string map_expr, reduce_expr, post_map_expr, identity;
  std::string reduce_type;  // as C++ (a dtype name is already its device type)
};

/// Parses and checks a definition; throws SignatureError (see make_kernel_definition; also an
/// empty map_expr or reduce_expr, or no output).
ReductionDefinition make_reduction_definition(std::string_view in_params,
                                              std::string_view out_params, ReductionCode code,
                                              std::string_view name,
                                              const std::vector<std::string>& options);

}  // namespace kiln::codegen
