#include "builtin_reductions.hpp"

#include <array>
#include <iterator>

#include "kiln_library_device_sources.hpp"

namespace kiln::detail {
namespace {

struct Row {
  builtin id;
  reduction_code code;  // preamble: set from `section` when the table is made
  const char* section;  // of device/builtin_reductions.cuh
};

// Rows over one element `x` of placeholder type T into `U y` (reduction_code: name, in, map,
// reduce, post, identity, reduce type, and for several outputs the preamble (set below) and
// the outputs). kiln_R is the accumulation type (16-bit floats
// accumulate in float), kiln_RT the input's.
// clang-format off
constexpr Row kRows[] = {
    {builtin::sum, {"kiln_sum", "T x", "kiln_cast<kiln_R>(x)", "a + b", "y = kiln_cast<U>(a)", "0", "kiln_R"}, "builtin_reductions"},
    {builtin::prod, {"kiln_prod", "T x", "kiln_cast<kiln_R>(x)", "a * b", "y = kiln_cast<U>(a)", "1", "kiln_R"}, "builtin_reductions"},
    {builtin::min, {"kiln_min", "T x", "kiln_cast<kiln_R>(x)", "(kiln_rnan(a) || a < b) ? a : b", "y = kiln_cast<U>(a)", "kiln_extreme<kiln_R, false>()", "kiln_R"}, "builtin_reductions"},
    {builtin::max, {"kiln_max", "T x", "kiln_cast<kiln_R>(x)", "(kiln_rnan(a) || a > b) ? a : b", "y = kiln_cast<U>(a)", "kiln_extreme<kiln_R, true>()", "kiln_R"}, "builtin_reductions"},
    {builtin::nanmin, {"kiln_nanmin", "T x", "kiln_cast<kiln_R>(x)", "kiln_rnan(a) ? b : (kiln_rnan(b) ? a : (b < a ? b : a))", "y = kiln_cast<U>(a)", "", "kiln_R"}, "builtin_reductions"},
    {builtin::nanmax, {"kiln_nanmax", "T x", "kiln_cast<kiln_R>(x)", "kiln_rnan(a) ? b : (kiln_rnan(b) ? a : (b > a ? b : a))", "y = kiln_cast<U>(a)", "", "kiln_R"}, "builtin_reductions"},
    {builtin::nansum, {"kiln_nansum", "T x", "kiln_rnan(x) ? kiln_R(0) : kiln_cast<kiln_R>(x)", "a + b", "y = kiln_cast<U>(a)", "0", "kiln_R"}, "builtin_reductions"},
    {builtin::nanprod, {"kiln_nanprod", "T x", "kiln_rnan(x) ? kiln_R(1) : kiln_cast<kiln_R>(x)", "a * b", "y = kiln_cast<U>(a)", "1", "kiln_R"}, "builtin_reductions"},
    {builtin::mean, {"kiln_mean", "T x", "kiln_cast<kiln_R>(x)", "a + b", "y = kiln_cast<U>(a / kiln_R(double(_in_ind.size()) / double(_out_ind.size())))", "0", "kiln_R"}, "builtin_reductions"},
    {builtin::nanmean, {"kiln_nanmean", "T x", "kiln_rnan(x) ? kiln_sn{kiln_R(0), 0} : kiln_sn{kiln_cast<kiln_R>(x), 1}", "kiln_sn{a.s + b.s, a.n + b.n}", "y = kiln_cast<U>(a.s / kiln_R(a.n))", "kiln_sn{kiln_R(0), 0}", "kiln_sn", "", "U y", 2}, "builtin_reductions"},
    {builtin::var, {"kiln_var", "T x, raw int64 ddof", "kiln_moments{kiln_cast<kiln_R>(x), kiln_R(0), kiln_R(0), kiln_cast<kiln_R>(x), 1}", "kiln_moments_merge(a, b)", "y = kiln_cast<U>(kiln_moments_var(a, ddof))", "kiln_moments{kiln_R(0), kiln_R(0), kiln_R(0), kiln_R(0), 0}", "kiln_moments", "", "U y", 5}, "builtin_reductions"},
    {builtin::std, {"kiln_std", "T x, raw int64 ddof", "kiln_moments{kiln_cast<kiln_R>(x), kiln_R(0), kiln_R(0), kiln_cast<kiln_R>(x), 1}", "kiln_moments_merge(a, b)", "y = kiln_cast<U>(sqrt(double(kiln_moments_var(a, ddof))))", "kiln_moments{kiln_R(0), kiln_R(0), kiln_R(0), kiln_R(0), 0}", "kiln_moments", "", "U y", 5}, "builtin_reductions"},
    {builtin::argmin, {"kiln_argmin", "T x", "kiln_arg{kiln_cast<kiln_RT>(x), kiln_idx(_J)}", "kiln_arg_pick<false>(a, b)", "y = kiln_cast<U>(a.i)", "kiln_arg_none<false>()", "kiln_arg", "", "U y", 2}, "builtin_reductions"},
    {builtin::argmax, {"kiln_argmax", "T x", "kiln_arg{kiln_cast<kiln_RT>(x), kiln_idx(_J)}", "kiln_arg_pick<true>(a, b)", "y = kiln_cast<U>(a.i)", "kiln_arg_none<true>()", "kiln_arg", "", "U y", 2}, "builtin_reductions"},
    {builtin::all_of, {"kiln_all", "T x", "kiln_nonzero(x)", "a && b", "y = kiln_cast<U>(a)", "true", "bool"}, "builtin_reductions"},
    {builtin::any, {"kiln_any", "T x", "kiln_nonzero(x)", "a || b", "y = kiln_cast<U>(a)", "false", "bool"}, "builtin_reductions"},
    {builtin::count_nonzero, {"kiln_count_nonzero", "T x", "(long long)kiln_nonzero(x)", "a + b", "y = kiln_cast<U>(a)", "0", "long long", "", "U y", 2}, "builtin_reductions"},
    {builtin::norm2, {"kiln_norm2", "T x", "kiln_nabs2(x)", "a + b", "y = kiln_cast<U>(sqrt(a))", "0", "kiln_R"}, "norms"},
    {builtin::norm1, {"kiln_norm1", "T x", "kiln_nabs(x)", "a + b", "y = kiln_cast<U>(a)", "0", "kiln_R"}, "norms"},
    {builtin::norm_inf, {"kiln_norm_inf", "T x", "kiln_nabs(x)", "(a != a || a > b) ? a : b", "y = kiln_cast<U>(a)", "0", "kiln_R"}, "norms"},
    {builtin::norm_minus_inf, {"kiln_norm_minus_inf", "T x", "kiln_nabs(x)", "(a != a || a < b) ? a : b", "y = kiln_cast<U>(a)", "", "kiln_R"}, "norms"},
    {builtin::norm0, {"kiln_norm0", "T x", "kiln_R(kiln_nonzero(x) ? 1 : 0)", "a + b", "y = kiln_cast<U>(a)", "0", "kiln_R"}, "norms"},
    // Two outputs from one pass: the variance (or standard deviation) and the mean.
    {builtin::var_mean, {"kiln_var_mean", "T x, raw int64 ddof", "kiln_moments{kiln_cast<kiln_R>(x), kiln_R(0), kiln_R(0), kiln_cast<kiln_R>(x), 1}", "kiln_moments_merge(a, b)", "v = kiln_cast<U>(kiln_moments_var(a, ddof));\nm = kiln_cast<U>(kiln_moments_mean(a))", "kiln_moments{kiln_R(0), kiln_R(0), kiln_R(0), kiln_R(0), 0}", "kiln_moments", "", "U v, U m", 5}, "builtin_reductions"},
    {builtin::std_mean, {"kiln_std_mean", "T x, raw int64 ddof", "kiln_moments{kiln_cast<kiln_R>(x), kiln_R(0), kiln_R(0), kiln_cast<kiln_R>(x), 1}", "kiln_moments_merge(a, b)", "s = kiln_cast<U>(sqrt(double(kiln_moments_var(a, ddof))));\nm = kiln_cast<U>(kiln_moments_mean(a))", "kiln_moments{kiln_R(0), kiln_R(0), kiln_R(0), kiln_R(0), 0}", "kiln_moments", "", "U s, U m", 5}, "builtin_reductions"},
    // sum(exp(x - max(x))): a running max and the sum scaled to it.
    {builtin::sum_exp_max, {"kiln_sum_exp_max", "T x", "kiln_se_of<kiln_se>(kiln_cast<kiln_R>(x))", "kiln_se_merge(a, b)", "y = kiln_cast<U>(kiln_se_total(a))", "kiln_se{kiln_extreme<kiln_R, true>(), kiln_R(0)}", "kiln_se", "", "U y", 2}, "builtin_reductions"},
};
// clang-format on

constexpr bool rows_in_order() {
  if (std::size(kRows) != std::size_t(builtin::count_)) return false;
  for (std::size_t k = 0; k < std::size(kRows); ++k)
    if (kRows[k].id != builtin(k)) return false;
  return true;
}
static_assert(rows_in_order(), "kRows must list every builtin once, in enum order");

const std::array<reduction_code, std::size(kRows)>& table() {
  static const std::array<reduction_code, std::size(kRows)> t = [] {
    std::array<reduction_code, std::size(kRows)> out;
    for (std::size_t k = 0; k < std::size(kRows); ++k) {
      out[k] = kRows[k].code;
      out[k].preamble = library_device_source(kRows[k].section).data();  // a whole literal
    }
    return out;
  }();
  return t;
}

}  // namespace

const reduction_code& builtin_code(builtin b) { return table()[std::size_t(b)]; }

const reduction_code* builtin_code(std::string_view name) {
  if (name == "all") name = "all_of";
  constexpr std::string_view kPrefix = "kiln_";
  for (const auto& row : table()) {
    std::string_view n = row.name;
    n.remove_prefix(kPrefix.size());
    if (n == name || (n == "all" && name == "all_of")) return &row;
  }
  return nullptr;
}

}  // namespace kiln::detail
