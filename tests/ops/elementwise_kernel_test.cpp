// ElementwiseKernel parts that need no GPU: construction checks, argument checks that come
// before any device work, results, and ahead-of-time compiles for sm_90.
#include <catch2/catch.hpp>

#include "call/kernel_call.hpp"
#include "elementwise/elementwise_plan.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"
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

namespace {
// A zero-size array that needs no device: argument checks can run on it anywhere.
ndarray no_data(Shape shape, dtype t) {
  return ndarray(nullptr, shape, c_strides(shape, std::int64_t(t.itemsize())), 0, t);
}
}  // namespace

TEST_CASE("every argument check comes before the device; the same ValueError with or without a GPU",
          "[ops]") {
  // Each of these would reach choose_device (NoDeviceError on a machine without a GPU) if the
  // check came after it.
  ElementwiseKernel add("int8 x, int8 y", "int8 z", "z = x + y", "add");
  const ndarray x = no_data({0}, int8), z = no_data({0}, int8);
  CHECK_THROWS_AS(add(x, 300, z), ValueError);
  CHECK_THROWS_WITH(add(x, 300, z), Catch::Equals("kernel 'add': 300 does not fit parameter 'y' (int8)"));
  CHECK_THROWS_WITH(add(x, -129, z), Catch::Contains("-129 does not fit parameter 'y' (int8)"));
  CHECK_THROWS_WITH(add(x, 1, z, launch_options{.block_size = -1}),
                    Catch::Contains("block_size -1 is outside 1..1024"));
  CHECK_THROWS_WITH(add(x, 1, z, launch_options{.block_size = 2048}),
                    Catch::Contains("block_size 2048 is outside 1..1024"));
  CHECK_THROWS_WITH(add(no_data({2, 0}, int8), 1, no_data({0}, int8)),
                    Catch::Contains("output 'z' has shape (0,) but the arguments broadcast to (2, 0)"));
  CHECK_THROWS_AS(add(no_data({2, 0}, int8), no_data({3, 0}, int8)), ShapeError);
}

TEST_CASE("an empty (default-constructed) ndarray argument is an error naming the parameter", "[ops]") {
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = x + y", "k");
  const ndarray empty_handle;
  CHECK_THROWS_AS(k(empty_handle, 1.0f), ValueError);
  CHECK_THROWS_WITH(k(empty_handle, 1.0f), Catch::Contains("argument 'x' is an empty ndarray handle"));
  CHECK_THROWS_WITH(k(no_data({0}, float32), no_data({0}, float32), empty_handle),
                    Catch::Contains("argument 'z' is an empty ndarray handle"));
}

TEST_CASE("make_spec checks every layout field and names the allowed values", "[ops]") {
  ElementwiseKernel k("T x, raw T r", "T z", "z = x + r[0]", "k");
  const std::vector<dtype> f32{float32, float32};
  using codegen::Layout;
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = -1}), Catch::Contains("ndim -1 is outside 1..32"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 300}), Catch::Contains("ndim 300 is outside 1..32"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 0}), Catch::Contains("ndim 0 is outside 1..32"));
  for (int bits : {0, 16, 128})
    CHECK_THROWS_WITH(k.make_spec(f32, {.index_bits = bits}), Catch::Contains("must be 32 or 64"));
  for (int w : {0, 3, 8, 260})
    CHECK_THROWS_WITH(k.make_spec(f32, {.vector_width = w}), Catch::Contains("allowed 1, 2, 4 for these dtypes"));
  CHECK_THROWS_WITH(k.make_spec(std::vector<dtype>{complex128, complex128}, {.vector_width = 2}),
                    Catch::Contains("allowed 1 for these dtypes"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .vector_width = 4}),
                    Catch::Contains("strided kernels take 1"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.raw_ndim = 33}), Catch::Contains("raw_ndim 33 is outside 0..32"));
  // Tiled: two dims, at least one staged loop array, within the shared memory limit.
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 3, .staged = 1}),
                    Catch::Contains("ndim 3 is not possible here: tiled kernels take 2"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2}), Catch::Contains("layout staged is 0"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .staged = 2}),
                    Catch::Contains("staged names raw parameter 'r'"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .staged = 8}),
                    Catch::Contains("past the last (2)"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .staged = 1}),
                    Catch::Contains("staged is for tiled kernels only"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .vector_width = 2, .staged = 1}),
                    Catch::Contains("tiled kernels take 1"));
  ElementwiseKernel wide("complex128 a, complex128 b, complex128 c", "complex128 z", "z = a + b + c", "wide");
  const std::vector<dtype> c128(3, complex128);
  CHECK_THROWS_WITH(wide.make_spec(c128, {.layout = Layout::tiled, .ndim = 2, .staged = 7}),
                    Catch::Contains("50688 bytes of shared memory, over 49152"));
  const auto tiled = k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .staged = 5});
  CHECK(tiled.ndim == 2);
  CHECK((tiled.staged(0) && !tiled.staged(1) && tiled.staged(2)));
  CHECK(k.make_spec(f32, {.vector_width = 4}).vector_width == 4);
}

TEST_CASE("ahead of time, a definition and dtypes give every layout a call can ask for", "[ops]") {
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = x + y", "aot");
  const auto specs = k.specs({.dtypes = {float32, float32}, .max_ndim = 3});
  // Contiguous widths 1, 2, 4, strided ndim 1..3 and tiled with x, y or both transposed, each
  // with 32- and 64-bit indices.
  CHECK(specs.size() == 2 * (3 + 3 + 3));
  int contiguous4 = 0, strided3_64 = 0, tiled_x = 0, tiled_both = 0;
  for (const auto& s : specs) {
    contiguous4 += s.layout == codegen::Layout::contiguous && s.vector_width == 4;
    strided3_64 += s.layout == codegen::Layout::strided && s.ndim == 3 && s.index_bits == 64;
    const bool tiled = s.layout == codegen::Layout::tiled && s.ndim == 2 && !s.staged(2);
    tiled_x += tiled && s.staged(0) && !s.staged(1);
    tiled_both += tiled && s.staged(0) && s.staged(1);
  }
  CHECK(contiguous4 == 2);
  CHECK(strided3_64 == 1);
  CHECK(tiled_x == 2);
  CHECK(tiled_both == 2);
  // A scalar input is never staged; max_ndim 1 prepares no tiled kernel.
  for (const auto& s : k.specs({.dtypes = {float32, float32}, .scalar_inputs = {1}}))
    CHECK(!s.staged(1));
  for (const auto& s : k.specs({.dtypes = {float32, float32}, .max_ndim = 1}))
    CHECK(s.layout != codegen::Layout::tiled);
  const auto scalar_y = k.specs({.dtypes = {float32, float32}, .scalar_inputs = {1}, .index64 = false});
  for (const auto& s : scalar_y) CHECK(s.kind(1) == codegen::OperandKind::scalar);
  CHECK(k.compile_requests({.dtypes = {float32, float32}, .max_ndim = 1}, 80).front().arch == 80);
  CHECK_THROWS_WITH(k.specs({.dtypes = {float32, float32}, .scalar_inputs = {2}}), Catch::Contains("scalar input 2 is not an input"));
  CHECK_THROWS_AS(k.specs({.dtypes = {float64, float32}}), TypeError);
}

namespace {
// The layout plan of k(args...) on metadata-only arrays (the planner needs no device).
codegen::ElementwiseSpec plan_of(const ElementwiseKernel& k, std::initializer_list<ndarray> arrays,
                                 launch_options options = {}) {
  std::vector<kernel_arg> args(arrays.begin(), arrays.end());
  args.emplace_back(options);
  detail::KernelCall c(k.definition());
  const auto bound = detail::take_launch_options(c, args);
  detail::check_argument_count(c, bound);
  detail::bind_arguments(c, bound);
  detail::decide_loop_shape(c, true);
  detail::check_outputs(c, true, c.shape, "the arguments broadcast to");
  detail::ElementwisePlan plan;
  detail::plan_elementwise(c, true, plan);
  return plan.spec;
}
// An array over memory that is never touched: a borrowed buffer at a made-up address (each
// array its own, far apart), so argument binding and overlap checks run without a device.
ndarray meta(const Shape& s, dtype t = float32) {
  static std::uintptr_t next = 0;
  next += std::uintptr_t(1) << 40;
  const Shape st = c_strides(s, std::int64_t(t.itemsize()));
  const auto bytes = std::size_t(shape_size(s)) * t.itemsize();
  auto buffer = std::make_shared<Buffer>(reinterpret_cast<void*>(next), bytes, 0, [] {});
  return ndarray(std::move(buffer), s, st, 0, t);
}
}  // namespace

TEST_CASE("the plan tiles 2-D loops where an operand is transposed, and only those", "[ops]") {
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "plan_add");
  using codegen::Layout;
  const ndarray x = meta({8192, 8192}), y = meta({8192, 8192}), z = meta({8192, 8192});
  auto xt = plan_of(add, {x.T(), y, z});
  CHECK(xt.layout == Layout::tiled);
  CHECK(xt.ndim == 2);
  CHECK(xt.index_bits == 32);
  CHECK((xt.staged(0) && !xt.staged(1) && !xt.staged(2)));
  auto yt = plan_of(add, {y, x.T(), z});
  CHECK((yt.layout == Layout::tiled && !yt.staged(0) && yt.staged(1)));
  auto both = plan_of(add, {x.T(), y.T(), z});
  CHECK((both.layout == Layout::tiled && both.staged(0) && both.staged(1) && !both.staged(2)));
  auto out = plan_of(add, {x, y, z.T()});  // a transposed output is staged too
  CHECK((out.layout == Layout::tiled && !out.staged(0) && out.staged(2)));
  // Odd shapes collapse to 2-D and tile too; 1 x n and n x 1 collapse to 1-D.
  const ndarray a = meta({17, 8193}), b = meta({8193, 17}), c = meta({8193, 17});
  CHECK(plan_of(add, {a.T(), b, c}).layout == Layout::tiled);
  const ndarray r = meta({1, 1000}), s = meta({1000, 1}), t = meta({1000, 1});
  CHECK(plan_of(add, {r.T(), s, t}).layout == Layout::contiguous);
  // Broadcast row and column vectors read directly: no transposed operand, no tile.
  const ndarray row = meta({1, 8192}), col = meta({8192, 1});
  CHECK(plan_of(add, {row, y, z}).layout == Layout::strided);
  CHECK(plan_of(add, {col, y, z}).layout == Layout::strided);
  // A row vector beside a transposed operand: tiled, the vector read directly.
  auto mixed = plan_of(add, {row, x.T(), z});
  CHECK((mixed.layout == Layout::tiled && !mixed.staged(0) && mixed.staged(1)));
  // A 3-D loop keeps the strided path; so does a block size the tile was not written for.
  const ndarray x3 = meta({4, 64, 64}), y3 = meta({4, 64, 64}), z3 = meta({4, 64, 64});
  CHECK(plan_of(add, {x3.transpose({0, 2, 1}), y3, z3}).layout == Layout::strided);
  CHECK(plan_of(add, {x.T(), y, z}, {.block_size = 128}).layout == Layout::strided);
  CHECK(plan_of(add, {x.T(), y, z}, {.block_size = 256}).layout == Layout::tiled);
  // Past 2^31 elements the tiled kernel indexes with 64 bits.
  const ndarray bx = meta({65536, 65536}, int8), by = meta({65536, 65536}, int8), bz = meta({65536, 65536}, int8);
  auto big = plan_of(add, {bx.T(), by, bz});
  CHECK((big.layout == Layout::tiled && big.index_bits == 64));
  // Staged complex128 operands past 48 KiB of tiles fall back to the strided path.
  ElementwiseKernel add4("T a, T b, T c", "T z", "z = a + b + c", "plan_add3");
  const ndarray ca = meta({64, 64}, complex128), cb = meta({64, 64}, complex128),
                cc = meta({64, 64}, complex128), cz = meta({64, 64}, complex128);
  CHECK(plan_of(add4, {ca.T(), cb.T(), cc, cz}).layout == Layout::tiled);
  CHECK(plan_of(add4, {ca.T(), cb.T(), cc.T(), cz}).layout == Layout::strided);
}
