#pragma once
// THE registry of the library's built-in reductions: NumPy's reductions and linalg::norm's,
// each one row of reduction code (kiln/engine/fused_reduction.hpp) over an element `x`, with
// its device helpers (device/builtin_reductions.cuh). The same row runs an ndarray (its plain
// kernel) or, fused, an expression; rows are found by id on the call path and by name only
// ahead of time.
#include <cstdint>
#include <string_view>

#include "kiln/engine/fused_reduction.hpp"

namespace kiln::detail {

enum class builtin : std::uint8_t {
  sum,
  prod,
  min,
  max,
  nanmin,
  nanmax,
  nansum,
  nanprod,
  mean,
  nanmean,
  var,
  std,
  argmin,
  argmax,
  all_of,
  any,
  count_nonzero,
  norm2,
  norm1,
  norm_inf,
  norm_minus_inf,
  norm0,
  var_mean,
  std_mean,
  sum_exp_max,  // sum(exp(x - max(x))) in one pass: the library's form of that sum for passes
  count_
};

/// The row of a built-in (static: its address keys its kernels).
const reduction_code& builtin_code(builtin b);
/// The row named `name` (the function's name: "sum", "all_of" (or "all"), ..., and linalg::norm's
/// "norm2", "norm1", "norm_inf", "norm_minus_inf", "norm0", and the two-output "var_mean" and
/// "std_mean", and "sum_exp_max": the sum of exp(x - max(x)) along the same axes); nullptr for
/// another name.
const reduction_code* builtin_code(std::string_view name);

}  // namespace kiln::detail
