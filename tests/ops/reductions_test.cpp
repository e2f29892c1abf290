// Built-in reductions: the checks that come before any device work, and every built-in
// kernel compiled for sm_90 for every dtype class.
#include <catch2/catch.hpp>

#include "kiln/cache/compile_cache.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {
// A size-0 array view with no memory: reductions check it without a GPU.
ndarray no_memory(const Shape& s, dtype t) {
  return ndarray(nullptr, s, c_strides(s, std::int64_t(t.itemsize())), 0, t);
}
}  // namespace

TEST_CASE("built-in reductions check axes, dtypes and empty inputs before the device", "[ops]") {
  ndarray a = no_memory({0, 2, 3}, float32);
  KILN_CHECK_THROWS(sum(a, 3), ValueError,
                    Catch::Equals("axis 3 is out of bounds for array of dimension 3"));
  KILN_CHECK_THROWS(a.sum(-4), ValueError, Catch::Contains("axis -4 is out of bounds"));
  KILN_CHECK_THROWS(mean(a, {0, -3}), ValueError, Catch::Contains("duplicate value in 'axis'"));
  KILN_CHECK_THROWS(
      max(a), ValueError,
      Catch::Contains("zero-size array to reduction operation maximum which has no identity"));
  KILN_CHECK_THROWS(a.min(0), ValueError, Catch::Contains("operation minimum"));
  KILN_CHECK_THROWS(argmax(a, 0), ValueError,
                    Catch::Contains("attempt to get argmax of an empty sequence"));
  KILN_CHECK_THROWS(argmin(a, {0, 1}), TypeError, Catch::Contains("one axis"));
  KILN_CHECK_THROWS(max(no_memory({0}, complex64)), TypeError, Catch::Contains("complex"));
  KILN_CHECK_THROWS(all_of(a, {}, false, {.dtype = float64}), TypeError,
                    Catch::Contains("takes no dtype"));
  KILN_CHECK_THROWS(sum(a, 0, false, {.out = no_memory({0, 3}, float32)}), ShapeError,
                    Catch::Contains("(2, 3)"));
  KILN_CHECK_THROWS(linalg::norm(a, 3.0, 1), ValueError, Catch::Contains("ord=3"));
  KILN_CHECK_THROWS(linalg::norm(no_memory({0, 2}, float32), 2.0), ValueError,
                    Catch::Contains("matrix 2-norm"));
  KILN_CHECK_THROWS(linalg::norm(no_memory({0}, float32), "fro"), ValueError,
                    Catch::Contains("'fro' for vectors"));
}

TEST_CASE("every built-in reduction, linalg::norm's too, compiles for sm_90 for every dtype class",
          "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const std::vector<std::pair<dtype, dtype>> pairs = {
      {bool_, int64},      {int8, int64},      {uint32, uint64},   {float16, float16},
      {bfloat16, float32}, {float32, float32}, {float64, float64}, {complex64, complex64}};
  for (const ReductionKernel* k : aot::builtin_reductions()) {
    for (auto [in, out] : pairs) {
      const std::string n = k->name();
      const bool moments =
          n == "kiln_var" || n == "kiln_std" || n == "kiln_var_mean" || n == "kiln_std_mean";
      const bool ordered =
          n.find("min") != std::string::npos || n.find("max") != std::string::npos || moments;
      if (in.is_complex() && ordered) continue;
      // linalg::norm's rows give a real float: float64 for bool and ints, the real part's type.
      const dtype norm_out = in == bool_ || in.is_integer() ? float64
                             : in == complex64              ? float32
                                                            : in;
      const dtype o = n == "kiln_argmin" || n == "kiln_argmax" || n == "kiln_count_nonzero" ? int64
                      : n == "kiln_all" || n == "kiln_any"                                  ? bool_
                      : n.rfind("kiln_norm", 0) == 0 ? norm_out
                                                     : out;
      std::vector<dtype> dts{in};
      if (moments) dts.push_back(int64);
      dts.push_back(o);
      if (n == "kiln_var_mean" || n == "kiln_std_mean") dts.push_back(o);  // and the mean
      INFO(n << " " << in.name());
      // One contiguous-row and one strided/outer variant each (every strategy:
      // reduction_kernel_test).
      auto specs = k->specs({.dtypes = dts,
                             .scalar_inputs = moments ? std::vector<int>{1} : std::vector<int>{},
                             .max_ndim = 1,
                             .index64 = false});
      for (std::size_t s : {std::size_t(0), specs.size() - 1}) {
        auto req = k->compile_request(specs[s], 90);
        INFO(req.source);
        CHECK_NOTHROW(cache::compile_cached(req));
      }
    }
  }
}

TEST_CASE("the moments fold a step's later elements without choosing a shift, on every strategy",
          "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const ReductionKernel* var_mean = nullptr;
  for (const ReductionKernel* k : aot::builtin_reductions())
    if (k->name() == "kiln_var_mean") var_mean = k;
  REQUIRE(var_mean != nullptr);
  auto specs = var_mean->specs({.dtypes = {float32, int64, float32, float32},
                                .scalar_inputs = {1},
                                .max_ndim = 2,
                                .index64 = false});
  REQUIRE(specs.size() >= 3);
  int unrolled = 0;
  for (const auto& spec : specs) {
    auto req = var_mean->compile_request(spec, 90);
    INFO(req.source);
    // The moments' own fold is declared, and the state holds an element from a step's second
    // element on (the inner loops: kiln_u + kiln_k > 0; the outer: kiln_u > 0), except over
    // runs read in windows, whose first element may lie outside the run.
    CHECK(req.source.find("kiln_moments kiln_fold(") != std::string::npos);
    const bool inner = req.source.find(", kiln_u + kiln_k > 0);") != std::string::npos;
    const bool outer = req.source.find(", kiln_u > 0);") != std::string::npos;
    if (spec.red_contiguous != 3) CHECK((inner || outer));
    unrolled += inner || outer;
    CHECK_NOTHROW(cache::compile_cached(req));
  }
  CHECK(unrolled >= 2);
}

namespace {
// Whether f gets past the argument checks: anything but a ValueError (without a GPU it stops
// at the device).
template <class F>
bool accepted(F f) {
  try {
    f();
  } catch (const ValueError&) {
    return false;
  } catch (const Error&) {
  }
  return true;
}
}  // namespace

TEST_CASE(
    "reductions with no identity over a zero-length axis raise even when the result is "
    "empty, as NumPy",
    "[ops]") {
  const ndarray a = no_memory({3, 0, 33, 0}, float64);
  KILN_CHECK_THROWS(max(a, {0, 2, 3}), ValueError,
                    Catch::Contains("reduction operation maximum which has no identity"));
  KILN_CHECK_THROWS(max(a, {0, 2, 3}, true), ValueError, Catch::Contains("maximum"));
  KILN_CHECK_THROWS(nanmax(a, {0, 2, 3}), ValueError, Catch::Contains("operation fmax"));
  KILN_CHECK_THROWS(min(no_memory({0, 0}, int32), 1), ValueError,
                    Catch::Contains("operation minimum"));
  KILN_CHECK_THROWS(nanmin(no_memory({3, 0}, float32), 1), ValueError,
                    Catch::Contains("operation fmin"));
  KILN_CHECK_THROWS(argmax(no_memory({0, 0}, float32), 0), ValueError,
                    Catch::Contains("argmax of an empty sequence"));
  KILN_CHECK_THROWS(argmin(no_memory({0, 3}, float32), 0), ValueError,
                    Catch::Contains("argmin of an empty sequence"));
  // A reduced axis of nonzero length: an empty result, no error.
  CHECK(accepted([] { max(no_memory({3, 0}, float32), 0); }));
  CHECK(accepted([] { max(no_memory({0, 3}, float32), 1); }));
  CHECK(accepted([] { argmax(no_memory({3, 0}, float32), 0); }));
  const axes none(std::initializer_list<std::int64_t>{});  // axis=(): nothing reduced
  CHECK(accepted([&] { max(no_memory({3, 0}, float32), none); }));
  KILN_CHECK_THROWS(max(no_memory({3, 0}, float32)), ValueError, Catch::Contains("maximum"));
  // Reductions with an identity never raise.
  CHECK(accepted([&] { sum(a, {0, 2, 3}); }));
  CHECK(accepted([&] { var(a, {0, 2, 3}); }));
}

// [nogpu]: the 0-d operand has no memory, so only a machine without a GPU (where the call
// stops at NoDeviceError, after every check) may run it; on a GPU the reduction would launch.
TEST_CASE(
    "a 0-d array reduces with an int axis 0 or -1 as axis=None, as NumPy's ufunc "
    "reductions",
    "[ops][nogpu]") {
  const expr z = expr(ndarray(nullptr, Shape{}, {}, 0, float32));  // 0-d, checked without memory
  for (std::int64_t ax : {0, -1}) {
    INFO(ax);
    CHECK(accepted([&] { sum(z, ax); }));
    CHECK(accepted([&] { max(z, ax, true); }));
    CHECK(accepted([&] { nanmean(z, ax); }));
    CHECK(accepted([&] { argmax(z, ax); }));
    CHECK(accepted([&] { count_nonzero(z, ax); }));
  }
  // A list of axes, another axis, and mean/var/std (NumPy normalizes their axis first) refuse.
  KILN_CHECK_THROWS(sum(z, {0}), ValueError,
                    Catch::Contains("axis 0 is out of bounds for array of dimension 0"));
  KILN_CHECK_THROWS(sum(z, 1), ValueError, Catch::Contains("axis 1 is out of bounds"));
  KILN_CHECK_THROWS(sum(z, -2), ValueError, Catch::Contains("axis -2 is out of bounds"));
  KILN_CHECK_THROWS(mean(z, 0), ValueError, Catch::Contains("axis 0 is out of bounds"));
  KILN_CHECK_THROWS(var(z, -1), ValueError, Catch::Contains("axis -1 is out of bounds"));
  KILN_CHECK_THROWS(kiln::std(z, 0), ValueError, Catch::Contains("axis 0 is out of bounds"));
  CHECK(accepted([&] { mean(z, axes(std::initializer_list<std::int64_t>{})); }));
}
