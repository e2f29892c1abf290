#pragma once
// Fused reductions: a built-in reduction (its code row) run over an expression's map in ONE
// reduction kernel, with the expression's leaves as the kernel's arguments (no temporary).
// Shared by the built-in reductions (reductions.cpp) and linalg::norm (linalg_norm.cpp).
#include <cstdint>
#include <string_view>

#include "kiln/ops/expression.hpp"
#include "kiln/ops/reduce_options.hpp"
#include "kiln/ops/reduction_kernel.hpp"

namespace kiln::detail {

/// A built-in reduction's code over one input element `x` of placeholder type T, output
/// `U y` (as ReductionKernel's arguments). Rows are static: a row's address is its identity.
struct reduction_row {
  const char* name;
  const char* in;  // "T x" or "T x, raw int64 ddof"
  const char* map;
  const char* reduce;
  const char* post;
  const char* identity;
  const char* reduce_type;
};

/// The ReductionKernel that runs `row` (with `preamble`) over expressions of b's structure:
/// generated once per (structure, row) and kept process-wide; a hit hashes 32 bytes.
const ReductionKernel& fused_reduction_kernel(const reduction_row& row, const char* preamble,
                                              const expression_binding& b);

/// Runs row over e into out (shape and dtype already checked): one kernel on the current
/// stream. ddof: the value of the row's `raw int64 ddof` parameter, if it has one.
void fused_reduce(const reduction_row& row, const char* preamble, const expr& e,
                  const std::int64_t* ddof, const ndarray& out, const reduce_options& ro);

/// linalg::norm's fused kernel by name ("norm2", "norm1", "norm_inf", "norm_minus_inf",
/// "norm0"); nullptr for another name.
const ReductionKernel* fused_norm_kernel(const expr& e, std::string_view name);

}  // namespace kiln::detail
