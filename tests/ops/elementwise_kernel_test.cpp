// ElementwiseKernel parts that need no GPU: construction checks, argument checks that come
// before any device work, results, and ahead-of-time compiles for sm_90.
#include <catch2/catch.hpp>

#include "kiln/cache/compile_cache.hpp"
#include "kiln/ops/elementwise_builtins.hpp"
#include "kiln/ops/elementwise_kernel.hpp"
#include "kiln/runtime/error.hpp"
#include "support/test_support.hpp"

using namespace kiln;

TEST_CASE("ElementwiseKernel checks its definition at construction", "[ops]") {
  CHECK_THROWS_AS(ElementwiseKernel("float32", "float32 z", "z = 1", "k"), SignatureError);
  CHECK_THROWS_AS(ElementwiseKernel("float32 x,", "float32 z", "z = x", "k"), SignatureError);
  CHECK_THROWS_AS(ElementwiseKernel("float32 x", "float32 z", "z = x", "k\n"), SignatureError);
  CHECK_THROWS_AS(ElementwiseKernel("float32 x", "float32 i", "i = x", "k"), SignatureError);
  CHECK_THROWS_AS(ElementwiseKernel("float32 x", "float33 z", "z = x", "k"), SignatureError);
  ElementwiseKernel k("float32 x, T y", "T z", "z = x + y", "ok");
  CHECK(k.nin() == 2);
  CHECK(k.nout() == 1);
  CHECK(k.name() == "ok");
}

TEST_CASE("a call with the wrong number of arguments says what the kernel takes", "[ops]") {
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = x + y", "my_kernel");
  CHECK_THROWS_AS(k(1.0f), TypeError);
  CHECK_THROWS_WITH(k(1.0f), Catch::Contains("my_kernel") && Catch::Contains("takes 2 arguments (x, y)") &&
                                 Catch::Contains("or 3 with the output (z)") && Catch::Contains("got 1"));
  CHECK_THROWS_AS(k(1.0f, 2.0f, 3.0f, 4.0f), TypeError);
}

TEST_CASE("outputs must be arrays and launch options come last", "[ops]") {
  ElementwiseKernel k("float32 x", "float32 z", "z = x", "k");
  CHECK_THROWS_WITH(k(1.0f, 2.0f), Catch::Contains("output 'z' must be an ndarray"));
  CHECK_THROWS_WITH(k(launch_options{}, 1.0f), Catch::Contains("must be the last argument"));
}

TEST_CASE("a call whose loop size nothing fixes is an error, before any GPU work", "[ops]") {
  ElementwiseKernel k("float32 x", "raw float32 z", "z[i] = x", "k");
  CHECK_THROWS_AS(k(1.0f), ValueError);
  CHECK_THROWS_WITH(k(1.0f), Catch::Contains("loop size is undecided"));
  ElementwiseKernel u("T x", "T z", "z = x", "k");
  CHECK_THROWS_WITH(u(1.0f), Catch::Contains("cannot deduce type T"));
}

TEST_CASE("kernel_result maps CuPy's return conventions", "[ops]") {
  kernel_result none;
  CHECK(none.empty());
  CHECK_THROWS_WITH(none.array(), Catch::Contains("no_return"));
  kernel_result one;
  one.push_back(ndarray());
  CHECK(one.size() == 1);
  CHECK_NOTHROW(one.array());
  CHECK(one.end() - one.begin() == 1);
  one.set_tuple(true);
  CHECK_THROWS_WITH(one.array(), Catch::Contains("return_tuple"));
  CHECK_NOTHROW(one[0]);
  kernel_result two;
  two.push_back(ndarray());
  two.push_back(ndarray());
  CHECK(two.size() == 2);
  CHECK(two.to_vector().size() == 2);
  CHECK_THROWS_AS(ndarray(two), TypeError);
  CHECK_THROWS_AS(two[2], ValueError);
}

TEST_CASE("kernels compile ahead of time for sm_90 without a GPU", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = (x - 2 > y) ? x * y : x + y",
                      "my_kernel");
  auto spec = k.make_spec(std::vector<dtype>{float32, float32}, {.vector_width = 4});
  const auto before = cache::stats().nvrtc_compiles.load();
  auto bin = k.compile_for(spec, 90);
  CHECK_FALSE(bin.cubin.empty());
  CHECK(cache::stats().nvrtc_compiles.load() == before + 1);
  auto again = k.compile_for(spec, 90);  // from the disk cache
  CHECK(again.cubin == bin.cubin);
  CHECK(cache::stats().nvrtc_compiles.load() == before + 1);
  CHECK_THROWS_AS(k.make_spec(std::vector<dtype>{float64, float32}), TypeError);
}

TEST_CASE("kiln's builtin cast, copy and fill kernels compile for sm_90", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const auto& cast = ops::cast_kernel();
  CHECK_FALSE(cast.compile_for(cast.make_spec(std::vector<dtype>{float16, int64}), 90).cubin.empty());
  CHECK_FALSE(cast.compile_for(cast.make_spec(std::vector<dtype>{bool_, bfloat16}), 90).cubin.empty());
  const auto& copy = ops::copy_kernel();
  CHECK_FALSE(copy.compile_for(copy.make_spec(std::vector<dtype>{uint8}, {.vector_width = 16}), 90).cubin.empty());
  const auto& fill = ops::fill_kernel(int16);
  auto spec = fill.make_spec(std::vector<dtype>{int16, int16}, {.vector_width = 8});
  spec.set_param(0, int16, codegen::OperandKind::scalar);
  CHECK_FALSE(fill.compile_for(spec, 90).cubin.empty());
  CHECK(&ops::fill_kernel(int16) == &fill);
}
