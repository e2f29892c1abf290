// Fused reductions of expressions (sum(x * x), norm(x - y)): every kernel kind compiles for
// sm_90 per dtype class, the kernel is shared per expression structure, and bad input is
// refused before the device.
#include <catch2/catch.hpp>

#include "kiln/cache/compile_cache.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {
// Arrays with no memory: kernels are generated and checks run without a GPU.
ndarray meta(const Shape& s, dtype t) {
  return ndarray(nullptr, s, c_strides(s, std::int64_t(t.itemsize())), 0, t);
}

// The output dtype NumPy gives `reduction` of an expression of dtype t.
dtype result_dtype(std::string_view r, dtype t) {
  const bool i = t == bool_ || t.is_integer();
  if (r == "argmax" || r == "argmin" || r == "count_nonzero") return int64;
  if (r == "all" || r == "any") return bool_;
  if (r == "sum" || r == "prod" || r == "nansum")
    return t == bool_ || t.kind() == 'i' ? int64 : t.kind() == 'u' ? uint64 : t;
  if (r == "mean" || r == "var" || r == "std" || r == "nanmean") return i ? float64 : t;
  if (r.substr(0, 4) == "norm")
    return i ? float64 : t == complex64 ? float32 : t == complex128 ? float64 : t;
  return t;  // min, max, nanmin, nanmax
}
}  // namespace

TEST_CASE("fused reductions compile for sm_90 for every dtype class", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const std::vector<std::string> kinds = {
      "sum",     "prod",   "max",   "min",      "mean",           "var",    "std",
      "argmax",  "argmin", "all",   "any",      "count_nonzero",  "nansum", "nanmax",
      "nanmean", "norm2",  "norm1", "norm_inf", "norm_minus_inf", "norm0"};
  for (dtype t : {float32, float64, int32, complex64}) {
    const ndarray x = meta({4, 5}, t), y = meta({5}, t);
    // Two arrays (one broadcast), a scalar leaf, x used twice.
    const expr e = x * x - y * 3;
    for (const auto& r : kinds) {
      const bool ordered = r.find("min") != std::string::npos ||
                           r.find("max") != std::string::npos || r == "var" || r == "std";
      if (t.is_complex() && ordered && r.substr(0, 4) != "norm") continue;
      INFO(r << " " << t.name());
      const ReductionKernel& k = aot::fused_reduction(e, r);
      std::vector<dtype> dts;
      std::vector<int> scalars;
      const auto leaves = aot::expression_leaves(e);
      for (std::size_t j = 0; j < leaves.size(); ++j) {
        dts.push_back(k.definition().params[j].fixed);
        if (!leaves[j].is_array()) scalars.push_back(int(j));
      }
      CHECK(dts.size() == 3);  // x, y, 3
      if (r == "var" || r == "std") scalars.push_back(int(dts.size())), dts.push_back(int64);
      dts.push_back(result_dtype(r, e.dtype()));
      auto specs =
          k.specs({.dtypes = dts, .scalar_inputs = scalars, .max_ndim = 2, .index64 = false});
      for (std::size_t s : {std::size_t(0), specs.size() - 1}) {
        auto req = k.compile_request(specs[s], 90);
        INFO(req.source);
        CHECK_NOTHROW(cache::compile_cached(req));
      }
    }
  }
}

TEST_CASE("a fused reduction's kernel is keyed by the expression's structure", "[ops]") {
  const ndarray x = meta({8}, float32), y = meta({8}, float32), d = meta({8}, float64);
  const ReductionKernel& k = aot::fused_reduction(x * 5, "sum");
  CHECK(&aot::fused_reduction(x * 6, "sum") == &k);    // scalar values are arguments
  CHECK(&aot::fused_reduction(y * 2.5, "sum") == &k);  // another array, same structure
  CHECK(&aot::fused_reduction(x * 5, "max") != &k);    // another reduction
  CHECK(&aot::fused_reduction(d * 5, "sum") != &k);    // another dtype
  CHECK(&aot::fused_reduction(x * y, "sum") != &k);    // another structure
  // x * x reads x once: another structure than two arrays (metadata-only arrays of one shape
  // count as the same array, so the second one here has another shape).
  const ndarray z = meta({1, 8}, float32);
  CHECK(&aot::fused_reduction(x * x, "sum") != &aot::fused_reduction(x * z, "sum"));
  CHECK(aot::fused_reduction(x * x, "sum").nin() == 1);
  CHECK(&aot::fused_reduction(x - y, "norm2") == &aot::fused_reduction(y - x, "norm2"));
  CHECK(k.nin() == 2);
  CHECK(k.definition().params[1].fixed == float32);  // the weak scalar takes x's dtype
  CHECK_THROWS_AS(aot::fused_reduction(x * 5, "median"), ValueError);
}

TEST_CASE("fused reductions pick the expression overload and check before the device", "[ops]") {
  const ndarray x = meta({0, 2, 3}, float32), y = meta({2, 3}, float32), c = meta({4}, complex64);
  // sum(expr) is the expression overload (a temporary would need a device to allocate).
  KILN_CHECK_THROWS(sum(x * x, 3), ValueError,
                    Catch::Equals("axis 3 is out of bounds for array of dimension 3"));
  KILN_CHECK_THROWS(mean(x - y, {0, -3}), ValueError, Catch::Contains("duplicate value in 'axis'"));
  KILN_CHECK_THROWS(max(abs(x - y)), ValueError,
                    Catch::Contains("operation maximum which has no identity"));
  KILN_CHECK_THROWS(argmax(x * 2, {0, 1}), TypeError, Catch::Contains("one axis"));
  KILN_CHECK_THROWS(argmin(x + y, 0), ValueError, Catch::Contains("argmin of an empty sequence"));
  KILN_CHECK_THROWS(max(c * c), TypeError, Catch::Contains("complex"));
  KILN_CHECK_THROWS(var(c + 1), TypeError, Catch::Contains("complex"));
  KILN_CHECK_THROWS(any(x * 2, {}, false, {.dtype = float64}), TypeError,
                    Catch::Contains("takes no dtype"));
  KILN_CHECK_THROWS(sum(x * x, 0, false, {.out = meta({0, 3}, float32)}), ShapeError,
                    Catch::Contains("(2, 3)"));
  KILN_CHECK_THROWS(linalg::norm(x - y, 3.0, 1), ValueError, Catch::Contains("ord=3"));
  KILN_CHECK_THROWS(linalg::norm(y * y, 2.0), ValueError, Catch::Contains("matrix 2-norm"));
  KILN_CHECK_THROWS(linalg::norm(c * 2, "fro"), ValueError, Catch::Contains("'fro' for vectors"));
  KILN_CHECK_THROWS(linalg::norm(x - y, 2.0, {0, 1, 2}), ValueError,
                    Catch::Contains("improper number"));
}

TEST_CASE("fused reductions take NumPy's result dtypes for the expression's dtype", "[ops]") {
  // The result dtype of each reduction is its rule on the expression's dtype (the same rule
  // as on an array of that dtype): checked through the generated kernel's output parameter
  // and the expression dtype it is applied to.
  const ndarray i8 = meta({4}, int8), u16 = meta({4}, uint16), f16 = meta({4}, float16),
                b = meta({4}, bool_);
  CHECK((i8 + i8).dtype() == int8);
  CHECK(result_dtype("sum", (i8 + i8).dtype()) == int64);
  CHECK(result_dtype("sum", (u16 * 2).dtype()) == uint64);
  CHECK(result_dtype("mean", (i8 / i8).dtype()) == float64);
  CHECK(result_dtype("sum", (i8 > 0).dtype()) == int64);
  CHECK(result_dtype("max", (f16 * f16).dtype()) == float16);
  CHECK(result_dtype("norm2", (b & b).dtype()) == float64);
  // The kernel computes in the expression's dtype: its map starts from T = the expression's type.
  CHECK(aot::fused_reduction(i8 + i8, "sum").definition().preamble.find("typedef signed char T;") !=
        std::string::npos);
}
