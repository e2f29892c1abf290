#pragma once
// A row kernel's definition: reductions of rows consumed by an elementwise expression of the
// same rows, in ONE kernel (softmax, layer norm, standardising): the shared KernelDefinition
// (inputs in0..: the expression's leaves; outputs out0..: its results) plus the program.
// The fused-expression planner builds one per expression structure (engine/row_kernel.hpp);
// the per-call part is a RowSpec.
//
// The program runs per row, in phases: phase p reduces, over the row, parts (reduction_parts
// .hpp) of inputs that read the leaves and the results of earlier phases; then every output
// is an expression of the leaves and every result, written along the row. Result r is named
// in<nin + r> in every later expression.
//
//   // softmax: m = max(x); s = sum(exp(x - m)); out0 = exp(x - m) / s
//   RowDefinition def = make_row_definition(
//       "float32 in0", "float32 out0",
//       {{.part = max_part, .input = "in0", .phase = 0},
//        {.part = sum_part, .input = "exp(in0 - in1)", .phase = 1}},
//       {"exp(in0 - in1) / in2"}, {}, {0b11 | kRowOutputsUse}, helpers, "kiln_rows");
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/codegen/kernel_definition.hpp"
#include "kiln/codegen/reduction_parts.hpp"

namespace kiln::codegen {

/// leaf_use bit for "the outputs read it" (bit p < 31: phase p reads it).
inline constexpr std::uint32_t kRowOutputsUse = 1u << 31;
/// Most phases of a row program.
inline constexpr int kMaxRowPhases = 8;

struct RowReduction {
  ReductionPart part;
  std::string input;  // expression over in<j>: leaves, and results of earlier phases
  int phase = 0;
  int ddof = -1;        // the scalar input in<ddof> holding the part's ddof, or -1
  int state_words = 1;  // fields of its accumulator (moments: 5), for register budgets
};

struct RowDefinition : KernelDefinition {
  std::vector<RowReduction> reductions;  // in phase order; result r is in<nin + r>
  std::vector<std::string> outputs;      // out<k> = outputs[k]
  // kiln_dv<i>, a kiln_row_divisor of divisors[i] (an expression of results and scalars) made
  // once a row, which the outputs divide by (expression_texts' row_divisors)
  std::vector<std::string> divisors;
  std::vector<std::uint32_t> leaf_use;  // per input: the phases that read it, kRowOutputsUse
  int nphases = 0;
};

/// Parses and checks a definition (make_kernel_definition's checks, plus: reductions in
/// phase order, each reading only earlier phases, at most kMaxRowPhases phases, one leaf_use
/// per input). `helpers`: device code the expressions call (file scope). Throws SignatureError.
RowDefinition make_row_definition(std::string_view in_params, std::string_view out_params,
                                  std::vector<RowReduction> reductions,
                                  std::vector<std::string> outputs,
                                  std::vector<std::string> divisors,
                                  std::vector<std::uint32_t> leaf_use, std::string_view helpers,
                                  std::string_view name);

/// 32-bit registers every reduction takes for one row: its accumulator's fields and its
/// result, each as wide as the result's dtype (at least one register: 16-bit floats
/// accumulate in float). What a row kernel holding several rows a lane budgets with.
int row_state_words(const RowDefinition& def);

}  // namespace kiln::codegen
