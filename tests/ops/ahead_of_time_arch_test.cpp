// Every kind's ahead-of-time entry points check the arch first: a ValueError listing NVRTC's
// archs, before any code is generated or compiled (it used to be a CompileError, late).
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using Catch::Matchers::Contains;

TEST_CASE("ahead-of-time entry points of every kind refuse an arch NVRTC cannot target", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const auto compiles = cache::stats().nvrtc_compiles.load();
  ElementwiseKernel ew("T x", "T z", "z = x * 2", "aot_arch_ew");
  const aot_target t{.dtypes = {float32}, .max_ndim = 1};
  const auto ew_spec = ew.specs(t).front();
  ReductionKernel red("T x", "T y", "x", "a + b", "y = a", "0", "aot_arch_red");
  const auto red_spec = red.specs(t).front();
  RawKernel raw("extern \"C\" __global__ void aot_arch_raw(float* x) { x[0] = 1; }",
                "aot_arch_raw");
  RawModule mod("template <class T> __global__ void f(T* x) { x[0] = T(1); }",
                {.name_expressions = {"f<float>"}});
  for (int bad : {0, 52, -1, 999, cache::arch_specific(80)}) {
    INFO(bad);
    KILN_CHECK_THROWS(ew.compile_for(ew_spec, bad), ValueError, Contains("supported: "));
    KILN_CHECK_THROWS(ew.compile_request(ew_spec, bad), ValueError, Contains("supported: "));
    KILN_CHECK_THROWS(ew.compile_requests(t, bad), ValueError, Contains("supported: "));
    KILN_CHECK_THROWS(red.compile_for(red_spec, bad), ValueError, Contains("supported: "));
    KILN_CHECK_THROWS(red.compile_requests(t, bad), ValueError, Contains("supported: "));
    KILN_CHECK_THROWS(raw.compile_requests(bad), ValueError, Contains("supported: "));
    KILN_CHECK_THROWS(mod.compile_requests(bad), ValueError, Contains("supported: "));
  }
  CHECK(cache::stats().nvrtc_compiles.load() == compiles);
}

TEST_CASE("a raw kernel that needs arch-specific features compiles for sm_90a", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const char* code =
      "extern \"C\" __global__ void fence(float* x) { asm volatile(\"wgmma.fence.sync.aligned;\"); "
      "x[0] = 1; }";
  RawKernel generic(code, "fence");
  RawKernel specific(code, "fence", {.arch_specific = true});
  CHECK(specific.compile_requests(90).front().arch == cache::arch_specific(90));
  CHECK(specific.compile_requests(cache::arch_specific(90)).front().arch ==
        cache::arch_specific(90));
  CHECK(generic.compile_requests(90).front().arch == 90);
  CHECK_THROWS_AS(cache::compile_cached(generic.compile_requests(90).front()), CompileError);
  CHECK(cache::compile_cached(specific.compile_requests(90).front()).cubin.size() > 64);
  // sm_80 has no arch-specific target.
  CHECK_THROWS_WITH(cache::compile_cached(specific.compile_requests(80).front()),
                    Contains("sm_80a is not an architecture"));
}

TEST_CASE("elementwise compile errors of a string that stops short point at the user's line",
          "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  ElementwiseKernel k("float32 x", "float32 z", "z = x +", "stops_short");
  const auto spec = k.make_spec(std::vector<dtype>{float32, float32});
  CHECK_THROWS_WITH(k.compile_for(spec, 90),
                    Contains("operation(1): error") && !Contains("stops_short.cu("));
  ElementwiseKernel two("float32 x", "float32 z", "float t = x;\nz = t *", "stops_short2");
  CHECK_THROWS_WITH(two.compile_for(two.make_spec(std::vector<dtype>{float32, float32}), 90),
                    Contains("operation(2): error"));
  ElementwiseKernel commented("float32 x", "float32 z", "z = x * 2 // doubled", "commented");
  CHECK(commented.compile_for(commented.make_spec(std::vector<dtype>{float32, float32}), 90)
            .cubin.size() > 64);
}

TEST_CASE("the sort header's example says what NumPy says", "[ops]") {
  // NumPy: np.argsort([[3, nan, -1], [2, 2, 0]], axis=0, kind="stable") -> [[1, 1, 0], [0, 0, 1]]
  //        np.sort(same) -> [[-1, 3, nan], [0, 2, 2]]
  std::ifstream in(std::string(KILN_TEST_SOURCE_DIR) +
                   "/../ops/library/include/kiln/library/sort.hpp");
  std::stringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  CHECK_THAT(text, Contains("kiln::argsort(x, 0);       // int64 [[1, 1, 0], [0, 0, 1]]"));
  CHECK_THAT(text, Contains("kiln::sort(x);             // [[-1, 3, nan], [0, 2, 2]]"));
}
