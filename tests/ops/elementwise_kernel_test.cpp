// ElementwiseKernel parts that need no GPU: construction checks, argument checks that come
// before any device work, results, and ahead-of-time compiles for sm_90.
#include "kiln/engine/elementwise_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "call/kernel_call.hpp"
#include "elementwise/elementwise_plan.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"
#include "support/random_layouts.hpp"
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
  CHECK_THROWS_WITH(k(1.0f),
                    Catch::Contains("my_kernel") && Catch::Contains("takes 2 arguments (x, y)") &&
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

TEST_CASE(
    "generated kernels compile with -minimal, and user code needing the runtime's types "
    "still compiles",
    "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const ElementwiseKernel plain("float32 x", "float32 z", "z = x * 2", "minimal_plain");
  const auto spec = plain.make_spec(std::vector<dtype>{float32}, {});
  const auto opts = plain.compile_request(spec, 90).options;
  CHECK(std::count(opts.begin(), opts.end(), "-minimal") == 1);
  CHECK_FALSE(plain.compile_for(spec, 90).cubin.empty());
  // cudaError_t is one of the types -minimal leaves out.
  const ElementwiseKernel runtime_types("float32 x", "float32 z",
                                        "cudaError_t e = cudaSuccess; z = x + float(e)",
                                        "minimal_runtime_types");
  CHECK_FALSE(
      runtime_types.compile_for(runtime_types.make_spec(std::vector<dtype>{float32}, {}), 90)
          .cubin.empty());
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
  CHECK_THROWS_WITH(add(x, 300, z),
                    Catch::Equals("kernel 'add': 300 does not fit parameter 'y' (int8)"));
  CHECK_THROWS_WITH(add(x, -129, z), Catch::Contains("-129 does not fit parameter 'y' (int8)"));
  CHECK_THROWS_WITH(add(x, 1, z, launch_options{.block_size = -1}),
                    Catch::Contains("block_size -1 is outside 1..1024"));
  CHECK_THROWS_WITH(add(x, 1, z, launch_options{.block_size = 2048}),
                    Catch::Contains("block_size 2048 is outside 1..1024"));
  CHECK_THROWS_WITH(
      add(no_data({2, 0}, int8), 1, no_data({0}, int8)),
      Catch::Contains("output 'z' has shape (0,) but the arguments broadcast to (2, 0)"));
  CHECK_THROWS_AS(add(no_data({2, 0}, int8), no_data({3, 0}, int8)), ShapeError);
}

TEST_CASE("an empty (default-constructed) ndarray argument is an error naming the parameter",
          "[ops]") {
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = x + y", "k");
  const ndarray empty_handle;
  CHECK_THROWS_AS(k(empty_handle, 1.0f), ValueError);
  CHECK_THROWS_WITH(k(empty_handle, 1.0f),
                    Catch::Contains("argument 'x' is an empty ndarray handle"));
  CHECK_THROWS_WITH(k(no_data({0}, float32), no_data({0}, float32), empty_handle),
                    Catch::Contains("argument 'z' is an empty ndarray handle"));
}

TEST_CASE("make_spec checks every layout field and names the allowed values", "[ops]") {
  ElementwiseKernel k("T x, raw T r", "T z", "z = x + r[0]", "k");
  const std::vector<dtype> f32{float32, float32};
  using codegen::Layout;
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = -1}),
                    Catch::Contains("ndim -1 is outside 1..32"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 300}),
                    Catch::Contains("ndim 300 is outside 1..32"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 0}),
                    Catch::Contains("ndim 0 is outside 1..32"));
  for (int bits : {0, 16, 128})
    CHECK_THROWS_WITH(k.make_spec(f32, {.index_bits = bits}), Catch::Contains("must be 32 or 64"));
  for (int w : {0, 3, 8, 260})
    CHECK_THROWS_WITH(k.make_spec(f32, {.vector_width = w}),
                      Catch::Contains("allowed 1, 2, 4 for these dtypes"));
  CHECK_THROWS_WITH(k.make_spec(std::vector<dtype>{complex128, complex128}, {.vector_width = 2}),
                    Catch::Contains("allowed 1 for these dtypes"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .vector_width = 8}),
                    Catch::Contains("allowed 1, 2, 4 for these dtypes"));
  CHECK(k.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .vector_width = 4}).vector_width ==
        4);
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .vector_width = 4, .staged = 1}),
      Catch::Contains("tiled and packed kernels take 1"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.raw_ndim = 33}),
                    Catch::Contains("raw_ndim 33 is outside 0..32"));
  // Tiled: two dims or more, at least one staged loop array, within the shared memory limit.
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 1, .staged = 1}),
                    Catch::Contains("ndim 1 is not possible here: tiled kernels take 2 or more"));
  CHECK(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 3, .staged = 1}).ndim == 3);
  // Sides over two axes: tiled with something staged, 1 to 3, an axis more for each side.
  const auto two =
      k.make_spec(f32, {.layout = Layout::tiled, .ndim = 4, .staged = 1, .two_axis_sides = 3});
  CHECK((two.cols_span_two() && two.rows_span_two()));
  CHECK(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 3, .staged = 1, .two_axis_sides = 2})
            .rows_span_two());
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::tiled, .ndim = 3, .staged = 1, .two_axis_sides = 3}),
      Catch::Contains("ndim 3 is not possible here: two_axis_sides 3 takes 4 or more"));
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::tiled, .ndim = 3, .staged = 1, .two_axis_sides = 4}),
      Catch::Contains("two_axis_sides 4 is not possible here"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 3, .two_axis_sides = 1}),
                    Catch::Contains("for tiled kernels with something staged"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 3, .two_axis_sides = 1}),
                    Catch::Contains("two_axis_sides 1 is not possible here"));
  // Runs: tiled, something staged, one axis a side; each staged array moves as runs.
  const auto runs =
      k.make_spec(f32, {.layout = Layout::tiled, .ndim = 3, .staged = 1, .runs = true});
  CHECK((runs.staged_run(0) && runs.tiled_runs() && !runs.staged(2)));
  CHECK(!k.make_spec(f32, {.layout = Layout::tiled, .ndim = 3, .staged = 1}).tiled_runs());
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .runs = true}),
                    Catch::Contains("runs is for tiled kernels with something staged"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .runs = true}),
                    Catch::Contains("runs is for tiled kernels"));
  CHECK_THROWS_WITH(
      k.make_spec(
          f32,
          {.layout = Layout::tiled, .ndim = 3, .staged = 1, .two_axis_sides = 1, .runs = true}),
      Catch::Contains("two_axis_sides 0"));
  // Runs move single elements down the rows (unit_rows 1), of dtypes of at most 8 bytes.
  const ElementwiseKernel h("T x, T y", "T z", "z = x + y", "make_spec_runs");
  const std::vector<dtype> h16(3, float16), h128(3, complex128);
  CHECK(h.make_spec(h16,
                    {.layout = Layout::tiled, .ndim = 2, .staged = 1, .unit_cols = 8, .runs = true})
            .staged_run(0));
  for (int unit_rows : {2, 4, 8})
    CHECK_THROWS_WITH(h.make_spec(h16, {.layout = Layout::tiled,
                                        .ndim = 2,
                                        .staged = 1,
                                        .unit_rows = unit_rows,
                                        .runs = true}),
                      Catch::Contains("runs is not possible for staged parameter 'x'"));
  CHECK_THROWS_WITH(
      h.make_spec(h128, {.layout = Layout::tiled, .ndim = 2, .staged = 1, .runs = true}),
      Catch::Contains("dtypes of at most 8 bytes"));
  // Nothing staged: row tiles (a broadcast or slice walked in tiles, every operand direct).
  const auto rows = k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2});
  CHECK((rows.layout == Layout::tiled && !rows.staged(0) && !rows.staged(1) && !rows.staged(2)));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .staged = 2}),
                    Catch::Contains("staged names raw parameter 'r'"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .staged = 8}),
                    Catch::Contains("past the last (2)"));
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .staged = 1}),
      Catch::Contains("staged is for tiled and packed kernels and gathered ones in groups"));
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .vector_width = 2, .staged = 1}),
      Catch::Contains("tiled and packed kernels take 1"));
  ElementwiseKernel wide("complex128 a, complex128 b, complex128 c", "complex128 z",
                         "z = a + b + c", "wide");
  const std::vector<dtype> c128(3, complex128);
  CHECK_THROWS_WITH(wide.make_spec(c128, {.layout = Layout::tiled, .ndim = 2, .staged = 7}),
                    Catch::Contains("61440 bytes of shared memory, over 49152"));
  // Gathered: 16 bytes of the widest array dtype, at most 4 bytes wide; unit_cols (the group
  // inputs step by) a power of two up to the vector width.
  CHECK(k.make_spec(f32, {.layout = Layout::gathered, .ndim = 3, .vector_width = 4}).ndim == 3);
  CHECK(k.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .unit_cols = 4})
            .unit_cols() == 4);
  CHECK(k.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .unit_cols = 2})
            .unit_cols() == 2);
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .unit_cols = 8}),
      Catch::Contains("gathered kernels take a power of two up to their vector_width (4)"));
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .unit_cols = 3}),
      Catch::Contains("unit_cols 3 is not possible here"));
  // Vectors are always 16 bytes.
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 2, .unit_cols = 2}),
      Catch::Contains("gathered kernels take 16 bytes of the widest array dtype (4)"));
  ElementwiseKernel xy("T x, T y", "T z", "z = x + y", "xy");
  // Inputs constant along the rows: gathered kernels of 2 dims or more, inputs only, never
  // also reading whole groups.
  const auto column_x = xy.make_spec(f32, {.layout = Layout::gathered,
                                           .ndim = 2,
                                           .vector_width = 4,
                                           .staged = 2,
                                           .row_constant = 1,
                                           .unit_cols = 2});
  CHECK((column_x.row_constant(0) && !column_x.row_constant(1) && column_x.staged(1)));
  CHECK_THROWS_WITH(xy.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .row_constant = 1}),
                    Catch::Contains("row_constant is for gathered kernels of 2 dims or more"));
  CHECK_THROWS_WITH(
      xy.make_spec(f32,
                   {.layout = Layout::gathered, .ndim = 1, .vector_width = 4, .row_constant = 1}),
      Catch::Contains("row_constant is for gathered kernels of 2 dims or more"));
  CHECK_THROWS_WITH(xy.make_spec(f32, {.layout = Layout::gathered,
                                       .ndim = 2,
                                       .vector_width = 4,
                                       .staged = 1,
                                       .row_constant = 1,
                                       .unit_cols = 2}),
                    Catch::Contains("row_constant and staged name the same input"));
  CHECK_THROWS_WITH(
      xy.make_spec(f32,
                   {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .row_constant = 4}),
      Catch::Contains("row_constant names parameter 2, which is not an array input"));
  const auto read_y = xy.make_spec(
      f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .staged = 2, .unit_cols = 4});
  CHECK((!read_y.staged(0) && read_y.staged(1) && !read_y.staged(2)));
  // Inputs laid out as the output: gathered kernels only, inputs only, read one way.
  const auto flat_x = xy.make_spec(f32, {.layout = Layout::gathered,
                                         .ndim = 3,
                                         .vector_width = 4,
                                         .row_constant = 2,
                                         .as_output = 1});
  CHECK((flat_x.as_output(0) && !flat_x.as_output(1) && flat_x.row_constant(1) &&
         !flat_x.row_constant(0)));
  CHECK_THROWS_WITH(xy.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .as_output = 1}),
                    Catch::Contains("as_output is for gathered kernels"));
  CHECK_THROWS_WITH(
      xy.make_spec(f32, {.layout = Layout::gathered,
                         .ndim = 2,
                         .vector_width = 4,
                         .row_constant = 1,
                         .as_output = 1}),
      Catch::Contains("as_output names an input that staged or row_constant names too"));
  CHECK_THROWS_WITH(
      xy.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .as_output = 4}),
      Catch::Contains("as_output names parameter 2, which is not an array input"));
  // Rows of a vector or more: gathered kernels of 2 dims or more.
  CHECK(xy.make_spec(f32,
                     {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .long_rows = true})
            .gathered_long_rows());
  CHECK(!xy.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 4})
             .gathered_long_rows());
  CHECK_THROWS_WITH(
      xy.make_spec(f32,
                   {.layout = Layout::gathered, .ndim = 1, .vector_width = 4, .long_rows = true}),
      Catch::Contains("long_rows is for gathered kernels of 2 dims or more"));
  // Packed: 3 or more dims, inputs staged only, one element per access.
  CHECK(xy.make_spec(f32, {.layout = Layout::packed, .ndim = 3, .staged = 3}).layout ==
        Layout::packed);
  CHECK_THROWS_WITH(xy.make_spec(f32, {.layout = Layout::packed, .ndim = 2, .staged = 3}),
                    Catch::Contains("packed kernels take 3 or more"));
  CHECK_THROWS_WITH(xy.make_spec(f32, {.layout = Layout::packed, .ndim = 3, .staged = 4}),
                    Catch::Contains("staged names output 'z'"));
  CHECK_THROWS_WITH(
      xy.make_spec(f32, {.layout = Layout::packed, .ndim = 3, .vector_width = 4, .staged = 3}),
      Catch::Contains("are 1 for packed kernels"));
  CHECK_THROWS_WITH(
      xy.make_spec(f32, {.layout = Layout::packed, .ndim = 3, .staged = 3, .unit_cols = 2}),
      Catch::Contains("are 1 for packed kernels"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::packed, .ndim = 3, .staged = 2}),
                    Catch::Contains("staged names raw parameter 'r'"));
  CHECK_THROWS_WITH(
      xy.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .staged = 2}),
      Catch::Contains("staged is for gathered kernels with groups of 2 or more"));
  CHECK_THROWS_WITH(
      xy.make_spec(
          f32,
          {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .staged = 4, .unit_cols = 4}),
      Catch::Contains("names parameter 2, which is not an array input"));
  CHECK_THROWS_WITH(
      k.make_spec(
          f32,
          {.layout = Layout::gathered, .ndim = 2, .vector_width = 4, .staged = 2, .unit_cols = 4}),
      Catch::Contains("names parameter 1, which is not an array input"));
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::gathered, .ndim = 2, .vector_width = 2}),
      Catch::Contains("gathered kernels take 16 bytes of the widest array dtype (4)"));
  CHECK_THROWS_WITH(wide.make_spec(c128, {.layout = Layout::gathered, .ndim = 2}),
                    Catch::Contains("at most 4 bytes wide"));
  // Pairs: tiled only, 1 or 2, arrays of at most 4 bytes, rows only with something staged.
  const auto paired = k.make_spec(
      f32, {.layout = Layout::tiled, .ndim = 2, .staged = 1, .unit_cols = 2, .unit_rows = 2});
  CHECK((paired.unit_cols() == 2 && paired.unit_rows() == 2));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::strided, .ndim = 2, .unit_cols = 2}),
                    Catch::Contains("layout unit_cols 2 is not possible here"));
  CHECK_THROWS_WITH(
      k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .staged = 1, .unit_cols = 4}),
      Catch::Contains("layout unit_cols 4 is not possible here"));
  CHECK_THROWS_WITH(k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .unit_rows = 2}),
                    Catch::Contains("(rows: with a staged parameter)"));
  CHECK_THROWS_WITH(wide.make_spec(c128, {.layout = Layout::tiled, .ndim = 2, .unit_cols = 2}),
                    Catch::Contains("at most 4 bytes wide"));
  // float16 and int8 by up to 8 elements per access; never more, never a non-power of two.
  ElementwiseKernel g("T x, T y", "T z", "z = x + y", "units");
  const std::vector<dtype> f16(3, float16), i8(3, int8);
  CHECK(g.make_spec(
             f16, {.layout = Layout::tiled, .ndim = 2, .staged = 1, .unit_cols = 8, .unit_rows = 8})
            .log2_unit_rows == 3);
  CHECK(g.make_spec(i8, {.layout = Layout::tiled, .ndim = 2, .unit_cols = 8}).log2_unit_cols == 3);
  CHECK_THROWS_WITH(g.make_spec(f16, {.layout = Layout::tiled, .ndim = 2, .unit_cols = 16}),
                    Catch::Contains("layout unit_cols 16 is not possible here") &&
                        Catch::Contains("here up to 8"));
  CHECK_THROWS_WITH(g.make_spec(i8, {.layout = Layout::tiled, .ndim = 2, .unit_cols = 6}),
                    Catch::Contains("layout unit_cols 6 is not possible here"));
  CHECK_THROWS_WITH(g.make_spec(i8, {.layout = Layout::tiled, .ndim = 2, .unit_cols = 16}),
                    Catch::Contains("layout unit_cols 16 is not possible here"));
  const auto tiled = k.make_spec(f32, {.layout = Layout::tiled, .ndim = 2, .staged = 5});
  CHECK(tiled.ndim == 2);
  CHECK((tiled.staged(0) && !tiled.staged(1) && tiled.staged(2)));
  CHECK(k.make_spec(f32, {.vector_width = 4}).vector_width == 4);
}

TEST_CASE("ahead of time, a definition and dtypes give every layout a call can ask for", "[ops]") {
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = x + y", "aot");
  const auto specs = k.specs({.dtypes = {float32, float32}, .max_ndim = 3});
  // Contiguous widths 1, 2, 4, strided ndim 1..3 (float32: one element at a time), gathered
  // ndim 1..3 (z by 4; x or y laid out as the output or neither; from ndim 2 with inputs
  // stepped one by one, by pairs and by fours, each input pattern (none, x, y, both) constant
  // along the rows and, in groups, each reading whole groups apart from those and from the
  // one laid out as the output; where every input is constant along the rows or laid out as
  // the output, groups under a vector for rows of a vector or more too), and tiled ndim 2..3 with
  // nothing (row tiles: by one element and by pairs along the cols), x, y or both transposed (units
  // of cols and rows: 1 and 1, 2 and 2, 2 and 1, 1 and 2; at ndim 3 each staged one also with its
  // cols or its rows over two axes, and each staged one by ones down the rows also as runs),
  // each with 32- and 64-bit
  // indices. Packed ndim 3 with both
  // inputs staged. Interleaved ndim 2..3, short extents 2..8, widths 1, 2 and 4.
  const int disjoint_pairs = 9;  // (read whole, constant): of {none, x, y, both}, sharing none
  // Per ndim from 2: one by one, nothing or x or y laid out as the output: 4 + 2 + 2 constant
  // patterns; in groups, the disjoint pairs and, beside x (or y), 3 pairs of the other.
  // Rows of a vector or more (groups of 1 and 2): both constant, or one beside the other
  // laid out as the output.
  const int by_one = 4 + 2 * 2, in_groups = disjoint_pairs + 2 * 3, long_rows_patterns = 3;
  const int gathered_per_width = 3 + 2 * (by_one + 2 * in_groups + 2 * long_rows_patterns);
  // ndim 2, ndim 3 (sides 0, 1, 2), each staged pattern and unit pair with rows by one also
  // as runs
  const int tiled_per_bits = (2 + 3 * 4 + 3 * 2) + (2 + 3 * 4 * 3 + 3 * 2);
  const int interleaved_per_bits = 2 * 7 * 3;
  CHECK(specs.size() ==
        2 * (3 + 3 + gathered_per_width + tiled_per_bits + 1 + interleaved_per_bits));
  int gathered = 0, gathered_pairs = 0, read_whole = 0, constant = 0, as_output = 0, long_rows = 0;
  for (const auto& s : specs)
    if (s.layout == codegen::Layout::gathered) {
      ++gathered;
      CHECK(s.vector_width == 4);
      gathered_pairs += s.unit_cols() == 2;
      CHECK(!s.staged(2));  // outputs are stored as vectors anyway
      const bool whole = s.params[0].staged == 1 || s.params[1].staged == 1;
      read_whole += whole;
      constant += s.row_constant(0) || s.row_constant(1);
      as_output += s.as_output(0) || s.as_output(1);
      CHECK(!(s.as_output(0) && s.as_output(1)));  // both: a contiguous loop
      long_rows += s.gathered_long_rows();
      if (whole) CHECK(s.unit_cols() > 1);
      if (s.row_constant(0) || s.row_constant(1)) CHECK(s.ndim > 1);
      if (s.gathered_long_rows())
        CHECK((s.ndim > 1 && s.unit_cols() < 4 && !whole && (s.row_constant(0) || s.as_output(0)) &&
               (s.row_constant(1) || s.as_output(1))));
    }
  CHECK(gathered == 2 * gathered_per_width);
  CHECK(gathered_pairs == 2 * 2 * (in_groups + long_rows_patterns));
  // Reading whole groups: x, y or both with nothing constant, x with y constant and the
  // reverse (5), and y beside x laid out as the output or the reverse (2), per group size,
  // per ndim.
  CHECK(read_whole == 2 * 2 * 2 * (5 + 2));
  // Constant along the rows: x, y or both, and one beside the other laid out as the output,
  // per group size (and with one input reading whole groups: 2 more per group of 2 or more),
  // per ndim; and the long-row patterns (all 3 have one).
  CHECK(constant == 2 * 2 * ((3 + 2) + 2 * (5 + 2) + 2 * long_rows_patterns));
  // x or y laid out as the output: 2 at ndim 1; from ndim 2, 4 one by one and 6 per group
  // size, and 2 per long-row group size.
  CHECK(as_output == 2 * (2 + 2 * (4 + 2 * 6 + 2 * 2)));
  CHECK(long_rows == 2 * 2 * 2 * long_rows_patterns);
  int contiguous4 = 0, strided3_64 = 0, strided2_w1 = 0, tiled_x = 0, tiled_both = 0, tiled3 = 0,
      rows2 = 0, cols_two = 0, rows_two = 0, runs = 0;
  for (const auto& s : specs) {
    runs += s.tiled_runs();
    if (s.tiled_runs()) CHECK((s.two_axis_sides == 0 && s.staged_run(0) == s.staged(0)));
    cols_two += s.cols_span_two();
    rows_two += s.rows_span_two();
    if (s.two_axis_sides != 0) CHECK((s.layout == codegen::Layout::tiled && s.ndim == 3));
    contiguous4 += s.layout == codegen::Layout::contiguous && s.vector_width == 4;
    strided3_64 += s.layout == codegen::Layout::strided && s.ndim == 3 && s.index_bits == 64;
    strided2_w1 +=
        s.layout == codegen::Layout::strided && s.ndim == 2 && s.vector_width == 1 && s.unroll == 4;
    const bool tiled = s.layout == codegen::Layout::tiled && s.ndim == 2 && !s.staged(2);
    tiled_x += tiled && s.staged(0) && !s.staged(1);
    tiled_both += tiled && s.staged(0) && s.staged(1);
    rows2 += tiled && !s.staged(0) && !s.staged(1);
    tiled3 += s.layout == codegen::Layout::tiled && s.ndim == 3;
  }
  CHECK(contiguous4 == 2);
  CHECK(strided3_64 == 1);
  CHECK(strided2_w1 == 2);
  CHECK(tiled_x == 2 * (4 + 2));  // unit pairs, the two with rows by one also as runs
  CHECK(tiled_both == 2 * (4 + 2));
  CHECK(tiled3 == 2 * (2 + 3 * 4 * 3 + 3 * 2));
  CHECK(runs == 2 * 2 * 3 * 2);  // ndim 2 and 3 x staged patterns x unit pairs with rows by one
  CHECK(cols_two == 2 * 3 * 4);  // staged patterns x unit pairs, per index width
  CHECK(rows_two == 2 * 3 * 4);
  CHECK(rows2 == 2 * 2);
  int pairs = 0;
  for (const auto& s : specs)
    if (s.layout == codegen::Layout::tiled && s.unit_cols() == 2) {
      ++pairs;
      bool any_staged = false;
      for (int k = 0; k < 3; ++k) any_staged |= s.staged(k);
      if (!any_staged) CHECK(s.unit_rows() == 1);  // rows take units only where staged
    }
  CHECK(pairs == 2 * ((1 + 3 * (2 + 1)) + (1 + 3 * 2 * 3 + 3 * 1)));
  // float16 and int8 take every unit up to 8 elements per access, 1, 2, 4 and 8: each side
  // alone (the other by ones) or both sides alike; those with rows by one also as runs.
  const ElementwiseKernel gk("T x, T y", "T z", "z = x + y", "aot_units");
  auto tiled_units = [&](dtype t) {
    std::map<std::pair<int, int>, int> n;  // (cols unit, rows unit) -> staged tiled specs
    for (const auto& s : gk.specs({.dtypes = {t, t}, .max_ndim = 2, .index64 = false}))
      if (s.layout == codegen::Layout::tiled) {
        bool any_staged = false;
        for (int j = 0; j < 3; ++j) any_staged |= s.staged(j);
        if (any_staged)
          ++n[{s.unit_cols(), s.unit_rows()}];
        else
          CHECK(s.unit_rows() == 1);
        const auto paired = codegen::tiled_units(s.unit_cols(), s.unit_rows());
        CHECK((paired.cols == s.unit_cols() && paired.rows == s.unit_rows()));
      }
    return n;
  };
  using Units = std::map<std::pair<int, int>, int>;
  // Rows by one: 3 staged patterns, each also as runs; rows by 2 or more: 3.
  CHECK(tiled_units(float32) == Units{{{1, 1}, 6}, {{1, 2}, 3}, {{2, 1}, 6}, {{2, 2}, 3}});
  const Units halves{{{1, 1}, 6}, {{1, 2}, 3}, {{1, 4}, 3}, {{1, 8}, 3}, {{2, 1}, 6},
                     {{2, 2}, 3}, {{4, 1}, 6}, {{4, 4}, 3}, {{8, 1}, 6}, {{8, 8}, 3}};
  CHECK(tiled_units(float16) == halves);
  CHECK(tiled_units(int8) == halves);
  // The pairing itself: each side its own where the other moves one element, else the smaller.
  CHECK((codegen::tiled_units(8, 1).cols == 8 && codegen::tiled_units(8, 1).rows == 1));
  CHECK((codegen::tiled_units(1, 4).cols == 1 && codegen::tiled_units(1, 4).rows == 4));
  CHECK((codegen::tiled_units(8, 2).cols == 2 && codegen::tiled_units(8, 2).rows == 2));
  // float64 moves 8 bytes per access already: no pairs, no gathered loops.
  const ElementwiseKernel k64("float64 x, float64 y", "float64 z", "z = x + y", "aot64");
  for (const auto& s : k64.specs({.dtypes = {float64, float64}, .max_ndim = 2}))
    CHECK(
        (s.log2_unit_cols == 0 && s.log2_unit_rows == 0 && s.layout != codegen::Layout::gathered));
  // Strided widths are the planner's: float16 by 1, 4 and 8 (8 and 16 bytes), int8 by 1, 8, 16.
  const ElementwiseKernel g("T x, T y", "T z", "z = x + y", "aot_generic");
  auto strided_widths = [&](dtype t) {
    std::set<int> w;
    for (const auto& s : g.specs({.dtypes = {t, t}, .max_ndim = 2, .index64 = false}))
      if (s.layout == codegen::Layout::strided && s.ndim == 2) w.insert(s.vector_width);
    return w;
  };
  CHECK(strided_widths(float16) == std::set<int>{1, 4, 8});
  CHECK(strided_widths(int8) == std::set<int>{1, 8, 16});
  CHECK(strided_widths(float64) == std::set<int>{1});
  // A scalar input is never staged; max_ndim 1 prepares no tiled kernel.
  for (const auto& s : k.specs({.dtypes = {float32, float32}, .scalar_inputs = {1}}))
    CHECK(!s.staged(1));
  for (const auto& s : k.specs({.dtypes = {float32, float32}, .max_ndim = 1}))
    CHECK(s.layout != codegen::Layout::tiled);
  const auto scalar_y =
      k.specs({.dtypes = {float32, float32}, .scalar_inputs = {1}, .index64 = false});
  for (const auto& s : scalar_y) CHECK(s.kind(1) == codegen::OperandKind::scalar);
  CHECK(k.compile_requests({.dtypes = {float32, float32}, .max_ndim = 1}, 80).front().arch == 80);
  CHECK_THROWS_WITH(k.specs({.dtypes = {float32, float32}, .scalar_inputs = {2}}),
                    Catch::Contains("scalar input 2 is not an input"));
  CHECK_THROWS_AS(k.specs({.dtypes = {float64, float32}}), TypeError);
}

namespace {
// The layout plan of k(args...) on metadata-only arrays (the planner needs no device).
codegen::ElementwiseSpec plan_of(const ElementwiseKernel& k, std::vector<kernel_arg> args,
                                 launch_options options = {}, std::uint64_t* scattered = nullptr) {
  args.emplace_back(options);
  detail::KernelCall c(k.definition());
  const auto bound = detail::take_launch_options(c, args);
  detail::check_argument_count(c, bound);
  detail::bind_arguments(c, bound);
  detail::decide_loop_shape(c, true);
  detail::check_outputs(c, true, c.shape, "the arguments broadcast to");
  detail::ElementwisePlan plan;
  detail::plan_elementwise(c, k.definition(), true, plan);
  if (scattered) *scattered = plan.scattered;
  return plan.spec;
}
codegen::ElementwiseSpec plan_of(const ElementwiseKernel& k, std::initializer_list<ndarray> arrays,
                                 launch_options options = {}, std::uint64_t* scattered = nullptr) {
  return plan_of(k, std::vector<kernel_arg>(arrays.begin(), arrays.end()), options, scattered);
}
std::uint64_t scattered_of(const ElementwiseKernel& k, std::initializer_list<ndarray> arrays) {
  std::uint64_t mask = 0;
  plan_of(k, arrays, {}, &mask);
  return mask;
}
using test::untouched;
}  // namespace

TEST_CASE("the plan tiles 2-D loops where an operand is transposed, and only those", "[ops]") {
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "plan_add");
  using codegen::Layout;
  const ndarray x = untouched({8192, 8192}), y = untouched({8192, 8192}),
                z = untouched({8192, 8192});
  auto xt = plan_of(add, {x.T(), y, z});
  CHECK(xt.layout == Layout::tiled);
  CHECK(xt.ndim == 2);
  CHECK(xt.index_bits == 32);
  CHECK((xt.staged(0) && !xt.staged(1) && !xt.staged(2)));
  auto yt = plan_of(add, {y, x.T(), z});
  CHECK((yt.layout == Layout::tiled && !yt.staged(0) && yt.staged(1)));
  auto both = plan_of(add, {x.T(), y.T(), z});
  CHECK((both.layout == Layout::tiled && both.staged(0) && both.staged(1) && !both.staged(2)));
  // A transposed output orders the loop: the inputs become the transposed operands.
  auto out = plan_of(add, {x, y, z.T()});
  CHECK((out.layout == Layout::tiled && out.staged(0) && out.staged(1) && !out.staged(2)));
  // Odd shapes collapse to 2-D and tile too; 1 x n and n x 1 collapse to 1-D.
  const ndarray a = untouched({17, 8193}), b = untouched({8193, 17}), c = untouched({8193, 17});
  CHECK(plan_of(add, {a.T(), b, c}).layout == Layout::tiled);
  // float32 moves pairs where both tiled axes hold whole pairs (8192 x 8192); 17 columns do
  // not, and the staged rows (8193) do not either; 18 columns of a transposed (8193, 18) hold
  // pairs while its 8193 rows do not: pairs along the cols only.
  CHECK((xt.unit_cols() == 2 && xt.unit_rows() == 2));
  CHECK((plan_of(add, {a.T(), b, c}).unit_cols() == 1 &&
         plan_of(add, {a.T(), b, c}).unit_rows() == 1));
  const ndarray a18 = untouched({18, 8193}), b18 = untouched({8193, 18});
  const auto odd_rows = plan_of(add, {a18.T(), b18, untouched({8193, 18})});
  CHECK(
      (odd_rows.layout == Layout::tiled && odd_rows.unit_cols() == 2 && odd_rows.unit_rows() == 1));
  // 1- and 2-byte dtypes move 8 elements per access where both axes hold whole units, and
  // the largest unit that fits where they do not.
  const ndarray h = untouched({8192, 8192}, float16), h2 = untouched({8192, 8192}, float16);
  auto ht = plan_of(add, {h.T(), h2, untouched({8192, 8192}, float16)});
  CHECK((ht.layout == Layout::tiled && ht.unit_cols() == 8 && ht.unit_rows() == 8));
  const ndarray b8 = untouched({4096, 4096}, int8);
  auto bt = plan_of(add, {b8.T(), untouched({4096, 4096}, int8), untouched({4096, 4096}, int8)});
  CHECK((bt.unit_cols() == 8 && bt.unit_rows() == 8));
  const ndarray h6 = untouched({1000, 4098}, float16);  // cols hold pairs, not fours
  auto hp =
      plan_of(add, {h6.T(), untouched({4098, 1000}, float16), untouched({4098, 1000}, float16)});
  CHECK((hp.layout == Layout::tiled && hp.unit_cols() == 2 && hp.unit_rows() == 2));
  // float16 moved by 16-byte units both ways takes 16 elements a thread; smaller units, and
  // int8's 8-byte units, keep 8.
  CHECK(codegen::tiled_elements_per_thread(ht) == 16);
  CHECK(codegen::tiled_elements_per_thread(hp) == 8);
  CHECK(codegen::tiled_elements_per_thread(bt) == 8);
  // A view one element in is aligned for no unit: it moves one element per access while the
  // aligned operands on the other side keep theirs; odd cols (16677) cost the cols their units,
  // not the staged rows.
  const ndarray hw = untouched({8192, 8193}, float16);
  auto hs =
      plan_of(add, {hw(all, slice(1, std::nullopt)).T(), h2, untouched({8192, 8192}, float16)});
  CHECK((hs.layout == Layout::tiled && hs.unit_cols() == 8 && hs.unit_rows() == 1));
  const ndarray ho = untouched({16677, 4024}, float16);
  auto hodd =
      plan_of(add, {ho.T(), untouched({4024, 16677}, float16), untouched({4024, 16677}, float16)});
  CHECK((hodd.layout == Layout::tiled && hodd.unit_cols() == 1 && hodd.unit_rows() == 8));
  const ndarray r = untouched({1, 1000}), s = untouched({1000, 1}), t = untouched({1000, 1});
  CHECK(plan_of(add, {r.T(), s, t}).layout == Layout::contiguous);
  // Broadcast row and column vectors beside a full operand read directly: no transposed
  // operand, no tile (the contiguous output by vectors, the inputs gathered).
  const ndarray row = untouched({1, 8192}), col = untouched({8192, 1});
  CHECK(plan_of(add, {row, y, z}).layout == Layout::gathered);
  CHECK(plan_of(add, {col, y, z}).layout == Layout::gathered);
  // Both broadcast (an outer sum) of float64: row tiles, nothing staged.
  const ndarray row64 = untouched({1, 8192}, float64), col64 = untouched({8192, 1}, float64),
                z64 = untouched({8192, 8192}, float64);
  auto row_plan = plan_of(add, {row64, col64, z64});
  CHECK((row_plan.layout == Layout::tiled && !row_plan.staged(0) && !row_plan.staged(1) &&
         !row_plan.staged(2) && row_plan.unit_cols() == 1));
  // A row vector beside a transposed operand: tiled, the vector read directly.
  auto mixed = plan_of(add, {row, x.T(), z});
  CHECK((mixed.layout == Layout::tiled && !mixed.staged(0) && mixed.staged(1)));
  // A block size the tile was not written for keeps an untiled loop.
  CHECK(plan_of(add, {x.T(), y, z}, {.block_size = 128}).layout == Layout::gathered);
  CHECK(plan_of(add, {x.T(), y, z}, {.block_size = 256}).layout == Layout::tiled);
  // Past 2^31 elements the tiled kernel indexes with 64 bits.
  const ndarray bx = untouched({65536, 65536}, int8), by = untouched({65536, 65536}, int8),
                bz = untouched({65536, 65536}, int8);
  auto big = plan_of(add, {bx.T(), by, bz});
  CHECK((big.layout == Layout::tiled && big.index_bits == 64));
  // Staged complex128 operands past 48 KiB of tiles fall back to the strided path.
  ElementwiseKernel add4("T a, T b, T c", "T z", "z = a + b + c", "plan_add3");
  const ndarray ca = untouched({64, 64}, complex128), cb = untouched({64, 64}, complex128),
                cc = untouched({64, 64}, complex128), cz = untouched({64, 64}, complex128);
  CHECK(plan_of(add4, {ca.T(), cb.T(), cc, cz}).layout == Layout::tiled);
  CHECK(plan_of(add4, {ca.T(), cb.T(), cc.T(), cz}).layout == Layout::strided);
}

TEST_CASE("a short side of a tile runs over two axes where the operands along it run on", "[ops]") {
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "plan_two_axis_add");
  ElementwiseKernel indexed("T x, T y", "T z", "z = x + y + T(i)", "plan_two_axis_index");
  using codegen::Layout;
  // Cols: x(14, 34, 224, 611) permuted (2, 3, 1, 0) into (224, 611, 34, 14): x runs along the
  // 224 x 611 rows (merged); y and z run on from the 14 cols into the 34 axis: 476 cols, which
  // hold pairs.
  const ndarray x = untouched({14, 34, 224, 611}).transpose(Shape{2, 3, 1, 0});
  const ndarray y = untouched({224, 611, 34, 14}), z = untouched({224, 611, 34, 14});
  const auto cols = plan_of(add, {x, y, z});
  CHECK((cols.layout == Layout::tiled && cols.ndim == 3 && cols.staged(0) && !cols.staged(1)));
  CHECK((cols.cols_span_two() && !cols.rows_span_two() && cols.unit_cols() == 2));
  // The flat index runs on there too (z is C-contiguous): the same plan where the code reads i.
  CHECK(plan_of(indexed, {x, y, z}).cols_span_two());
  // Rows: x(352, 132, 241, 6) permuted (2, 1, 3, 0) runs along 6 rows and on into the 241
  // axis; the flat index does not, so code that reads i keeps the rows on one axis.
  const ndarray xr = untouched({352, 132, 241, 6}, float16).transpose(Shape{2, 1, 3, 0});
  const ndarray yr = untouched({241, 132, 6, 352}, float16),
                zr = untouched({241, 132, 6, 352}, float16);
  const auto rows = plan_of(add, {xr, yr, zr});
  CHECK((rows.layout == Layout::tiled && rows.staged(0) && rows.rows_span_two() &&
         !rows.cols_span_two()));
  const auto rows_i = plan_of(indexed, {xr, yr, zr});
  CHECK((rows_i.layout == Layout::tiled && rows_i.two_axis_sides == 0));
  // Both: x(12, 9, 30, 20) reversed into (20, 30, 9, 12): 20 rows on into 30, 12 cols on into 9.
  const ndarray xb = untouched({12, 9, 30, 20}).transpose(Shape{3, 2, 1, 0});
  const auto both = plan_of(add, {xb, untouched({20, 30, 9, 12}), untouched({20, 30, 9, 12})});
  CHECK((both.layout == Layout::tiled && both.ndim == 4 && both.two_axis_sides == 3));
  // Inputs into a permuted output (25, 13, 16, 33) from a (16, 13, 33, 25) base: the loop
  // follows the output, so the inputs are staged, along 33 rows that run on into their 16 axis.
  const ndarray op = untouched({16, 13, 33, 25}).transpose(Shape{3, 1, 0, 2});
  const auto outp = plan_of(add, {untouched({25, 13, 16, 33}), untouched({25, 13, 16, 33}), op});
  CHECK((outp.layout == Layout::tiled && outp.staged(0) && outp.staged(1) && !outp.staged(2) &&
         outp.two_axis_sides == 2));
  // The GPU test's smaller shapes plan the same sides.
  CHECK(plan_of(add, {untouched({14, 34, 20, 61}).transpose(Shape{2, 3, 1, 0}),
                      untouched({20, 61, 34, 14}), untouched({20, 61, 34, 14})})
            .two_axis_sides == 1);
  CHECK(plan_of(add, {untouched({52, 13, 41, 6}).transpose(Shape{2, 1, 3, 0}),
                      untouched({41, 13, 6, 52}), untouched({41, 13, 6, 52})})
            .two_axis_sides == 2);
  // Sides the plain tile serves keep one axis (128 cols: whole tiles of 512-byte lines), as
  // do short ones whose operands do not run on (x beside y transposed the other way: y's cols
  // jump); 130 cols pad their 32-col tiles to 160 and run on.
  const ndarray xl = untouched({128, 40, 200, 611}).transpose(Shape{2, 3, 1, 0});
  CHECK(plan_of(add, {xl, untouched({200, 611, 40, 128}), untouched({200, 611, 40, 128})})
            .two_axis_sides == 0);
  const ndarray x130 = untouched({130, 40, 200, 611}).transpose(Shape{2, 3, 1, 0});
  CHECK(plan_of(add, {x130, untouched({200, 611, 40, 130}), untouched({200, 611, 40, 130})})
            .two_axis_sides == 1);
  const ndarray yj = untouched({224, 611, 14, 34}).transpose(Shape{0, 1, 3, 2});
  const auto jumps = plan_of(add, {x, yj, z});
  CHECK((jumps.layout != Layout::tiled || !jumps.cols_span_two()));
}

TEST_CASE("packed kernels compile for sm_90 for every dtype class, staged pattern and width",
          "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const ElementwiseKernel k("T x, T y", "T z", "z = x - y + T(i & 1)", "packed_compile");
  for (dtype t : {bool_, int8, float16, bfloat16, int32, float32, float64, complex128}) {
    INFO(t.name());
    int packed = 0;
    for (const auto& s : k.specs({.dtypes = {t, t}, .max_ndim = 4}))
      if (s.layout == codegen::Layout::packed) {
        ++packed;
        CHECK_FALSE(k.compile_for(s, 90).cubin.empty());
      }
    CHECK(packed == 2 * 2);  // ndim 3 and 4, both inputs staged; 32- and 64-bit indices
  }
}

TEST_CASE("two inputs permuted differently run in packed boxes", "[ops]") {
  ElementwiseKernel sub("T x, T y", "T z", "z = x - y", "plan_sub_packed");
  using codegen::Layout;
  // (288, 320, 39, 19): x runs fastest along axis 2, y along axis 0, z along the last. A tile
  // pairs one axis with the last; a box of (8 of axis 0, axis 2, axis 3) holds both.
  const ndarray x = untouched({19, 320, 288, 39}).transpose(Shape{2, 1, 3, 0});
  const ndarray y = untouched({19, 39, 320, 288}).transpose(Shape{3, 2, 1, 0});
  const ndarray z = untouched({288, 320, 39, 19});
  REQUIRE(x.shape() == z.shape());
  REQUIRE(y.shape() == z.shape());
  for (const auto& [a, b] : {std::pair{x, y}, std::pair{y, x}}) {
    const auto p = plan_of(sub, {a, b, z});
    CHECK((p.layout == Layout::packed && p.ndim == 4 && p.staged(0) && p.staged(1) &&
           !p.staged(2) && p.vector_width == 1));
  }
  // Reversed along its axis, y is staged all the same; float64 and complex128 boxes fit too.
  const slice rev(std::nullopt, std::nullopt, -1);
  CHECK(plan_of(sub, {x, y(rev, all, all, all), z}).layout == Layout::packed);
  for (dtype t : {float64, complex128}) {
    const ndarray xt = untouched({19, 320, 288, 39}, t).transpose(Shape{2, 1, 3, 0});
    const ndarray yt = untouched({19, 39, 320, 288}, t).transpose(Shape{3, 2, 1, 0});
    CHECK(plan_of(sub, {xt, yt, untouched({288, 320, 39, 19}, t)}).layout == Layout::packed);
  }
  // The GPU tests' shapes (elementwise_layouts_gpu_test.cpp) run in boxes in every dtype.
  for (dtype t : {bool_, int8, uint16, int32, int64, float16, bfloat16, float32, float64, complex64,
                  complex128}) {
    INFO(t.name());
    CHECK(plan_of(sub, {untouched({9, 7, 40, 32}, t).transpose(Shape{2, 1, 3, 0}),
                        untouched({9, 32, 7, 40}, t).transpose(Shape{3, 2, 1, 0}),
                        untouched({40, 7, 32, 9}, t)})
              .layout == Layout::packed);
    CHECK(plan_of(sub, {untouched({17, 3, 50, 36}, t).transpose(Shape{2, 1, 3, 0}),
                        untouched({17, 36, 3, 50}, t).transpose(Shape{3, 2, 1, 0}),
                        untouched({50, 3, 36, 17}, t)})
              .layout == Layout::packed);
  }
  const auto big = plan_of(sub, {untouched({8, 1366, 4096, 48}, int8).transpose(Shape{2, 1, 3, 0}),
                                 untouched({8, 48, 1366, 4096}, int8).transpose(Shape{3, 2, 1, 0}),
                                 untouched({4096, 1366, 48, 8}, int8)});
  CHECK((big.layout == Layout::packed && big.index_bits == 64));
  // One staged axis (permuted alike, or beside a contiguous or broadcast input): a tile serves,
  // however short its axes.
  CHECK(plan_of(sub, {x, x, z}).layout == Layout::tiled);
  CHECK(plan_of(sub, {x, z, z}).layout == Layout::tiled);
  CHECK(plan_of(sub, {x, untouched({288, 1, 1, 1}), z}).layout == Layout::tiled);
  // A short axis of 6 beside 100, x contiguous along it: an interleaved loop, no tile.
  const ndarray s6 = untouched({37, 100, 6}).transpose(Shape{0, 2, 1});
  CHECK(plan_of(sub, {s6, untouched({37, 6, 100}), untouched({37, 6, 100})}).layout ==
        Layout::interleaved);
  // A box that would read int8 four bytes at a time along y's axis (axis 2 x axis 3 leaves
  // room for 4 of axis 0): a tile and a copy of y instead.
  const ndarray xi = untouched({19, 330, 2048, 169}, int8).transpose(Shape{2, 1, 3, 0});
  const ndarray yi = untouched({19, 169, 330, 2048}, int8).transpose(Shape{3, 2, 1, 0});
  const auto i8 = plan_of(sub, {xi, yi, untouched({2048, 330, 169, 19}, int8)});
  CHECK(i8.layout == Layout::tiled);
  // Into an output not contiguous along the loop's last axis (reading the flat index keeps
  // the loop's order), and with a block size other than 256: no boxes.
  ElementwiseKernel indexed("T x, T w", "T z", "z = x - w + (T)i", "plan_packed_index");
  CHECK(plan_of(indexed, {x, z, y}).layout != Layout::packed);
  CHECK(plan_of(sub, {x, y, z}, {.block_size = 128}).layout != Layout::packed);
  // Reading the flat index with a C-contiguous output: boxes, i from the loop's steps.
  CHECK(plan_of(indexed, {x, y, z}).layout == Layout::packed);
}

TEST_CASE("inputs permuted against both axes of a tile are copied to C order first", "[ops]") {
  ElementwiseKernel sub("T x, T y", "T z", "z = x - y", "plan_sub_scattered");
  // (288, 320, 390, 190): x runs fastest along axis 2, y along axis 0, z along the last, all
  // too long for a box (axis 0 x axis 3 alone is 214 KiB of float32). The tile pairs x's axis
  // with the last; y would be read a sector per element.
  const ndarray x = untouched({190, 320, 288, 390}).transpose(Shape{2, 1, 3, 0});
  const ndarray y = untouched({190, 390, 320, 288}).transpose(Shape{3, 2, 1, 0});
  const ndarray z = untouched({288, 320, 390, 190});
  REQUIRE(x.shape() == z.shape());
  REQUIRE(y.shape() == z.shape());
  CHECK(scattered_of(sub, {x, y, z}) == 0b10);
  CHECK(scattered_of(sub, {y, x, z}) == 0b10);  // the tile follows the first permuted input
  // Permuted like the tile's operand (staged with it), contiguous, or broadcast: read in place.
  CHECK(scattered_of(sub, {x, x, z}) == 0);
  CHECK(scattered_of(sub, {x, z, z}) == 0);
  CHECK(scattered_of(sub, {x, untouched({288, 1, 1, 1}), z}) == 0);
  // Broadcast along the last axis (one element a tile row), however it runs elsewhere.
  const ndarray yb =
      untouched({190, 390, 320, 288}).transpose(Shape{3, 2, 1, 0})(all, all, all, slice(0, 1));
  CHECK(scattered_of(sub, {x, yb, z}) == 0);
  // Into an output not in C order, a copy in C order would not run along the loop.
  const ndarray zt = untouched({190, 390, 320, 288}).transpose(Shape{3, 2, 1, 0});
  CHECK(scattered_of(sub, {x, y, zt}) == 0);
  // Under 4 MiB a second launch costs more than it saves.
  const ndarray xs = untouched({190, 4, 28, 39}).transpose(Shape{2, 1, 3, 0});
  const ndarray ys = untouched({190, 39, 4, 28}).transpose(Shape{3, 2, 1, 0});
  CHECK(scattered_of(sub, {xs, ys, untouched({28, 4, 39, 190})}) == 0);
  // Outputs are written in place, whatever their layout.
  ElementwiseKernel two("T x", "T y, T w", "y = x; w = x", "plan_two_outputs");
  CHECK(scattered_of(two, {x, z, y}) == 0);
}

TEST_CASE("every plan a call makes is among the ahead-of-time specs of its dtypes", "[ops]") {
  // kiln-cache precompiles specs(); a call whose plan is not among them would compile at run
  // time on a deployment that forbids it.
  const ElementwiseKernel k("T x, T y", "T z", "z = x + y", "plan_in_aot");
  const slice rev(std::nullopt, std::nullopt, -1);
  for (dtype t : {float32, float16, int8, float64, complex128}) {
    INFO(t.name());
    const auto aot = k.specs({.dtypes = {t, t}, .max_ndim = 4});
    // The fields the generated code depends on (ahead-of-time specs carry the target's raw_ndim
    // on every parameter, which a non-raw array's code never reads).
    auto listed = [&](const codegen::ElementwiseSpec& p) {
      return std::any_of(aot.begin(), aot.end(), [&](const codegen::ElementwiseSpec& s) {
        bool same = s.layout == p.layout && s.ndim == p.ndim && s.index_bits == p.index_bits &&
                    s.vector_width == p.vector_width && s.unroll == p.unroll &&
                    s.nparams == p.nparams;
        for (int q = 0; q < p.nparams && same; ++q)
          same = s.param_dtype(q) == p.param_dtype(q) && s.kind(q) == p.kind(q) &&
                 s.staged(q) == p.staged(q);
        return same;
      });
    };
    const ndarray col = untouched({512, 1}, t), row = untouched({1, 512}, t),
                  sq = untouched({512, 512}, t);
    const ndarray x4 = untouched({8, 64, 28, 28}, t), c4 = untouched({1, 64, 1, 1}, t);
    const ndarray wide = untouched({512, 1024}, t), odd = untouched({300, 6}, t),
                  odd_col = untouched({300, 1}, t);
    const ndarray cube = untouched({16, 32, 64}, t), cube_t = untouched({64, 16, 32}, t);
    const ndarray p4 = untouched({4, 8, 16, 32}, t), p4z = untouched({32, 16, 8, 4}, t);
    const std::vector<std::vector<ndarray>> calls = {
        {col, row, sq},                                  // outer
        {sq, untouched({512}, t), sq},                   // row vector
        {x4, c4, x4},                                    // per channel
        {odd_col, untouched({6}, t), odd},               // short last axis
        {wide(all, slice(0, std::nullopt, 2)), sq, sq},  // stepped
        {wide(all, slice(8, 520, 1)), sq, sq},           // aligned window
        {wide(all, slice(1, 513, 1)), sq, sq},           // misaligned window
        {sq(rev, rev), sq, sq},                          // reversed
        {sq.T(), sq, sq},                                // 2-D transpose
        {sq, sq, sq.T()},                                // transposed output
        {cube.transpose({2, 0, 1}), cube_t, cube_t},     // 3-D permutation
        {p4.transpose({3, 2, 1, 0}), p4z, p4z},          // 4-D reversal of axes
        {cube.transpose({1, 0, 2}), untouched({32, 16, 64}, t),
         untouched({32, 16, 64}, t)},  // leading axes
    };
    for (std::size_t j = 0; j < calls.size(); ++j) {
      INFO("call " << j);
      const auto plan = plan_of(k, {calls[j][0], calls[j][1], calls[j][2]});
      CHECK(plan.layout != codegen::Layout::contiguous);
      CHECK(listed(plan));
    }
  }
}

TEST_CASE("contiguous windows off their vectors keep the outputs' vectors in a gathered loop",
          "[ops]") {
  // np.diff's x[1:] - x[:-1]: every operand contiguous, an input off its 16-byte vectors. For
  // 1- to 4-byte dtypes whose contiguous vectors would move under 8 bytes, a gathered loop
  // writes the output by whole vectors and reads only that input element by element; the
  // plan is among the ahead-of-time specs.
  using codegen::Layout;
  using codegen::OperandSpec;
  test::ScopedEnv memory("KILN_CACHE_IN_MEMORY", "1");
  const ElementwiseKernel k("T x, T y", "T z", "z = x - y", "plan_windows");
  const std::int64_t n = 1 << 20;
  auto window = [&](dtype t, std::int64_t from) {
    return untouched({n + 16}, t)(slice(from, from + n));
  };
  for (dtype t : {float16, bfloat16, int8, float32, int32}) {
    INFO(t.name());
    std::set<std::string> keys;
    for (const auto& spec : k.specs({.dtypes = {t, t}, .max_ndim = 2}))
      keys.insert(test::spec_key(spec));
    const int vw = int(16 / t.itemsize());
    const auto diff = plan_of(k, {window(t, 1), window(t, 0), untouched({n}, t)});
    CHECK(diff.layout == Layout::gathered);
    CHECK(diff.ndim == 1);
    CHECK(diff.vector_width == vw);
    CHECK(diff.params[0].staged == OperandSpec::gathered_by_element);
    CHECK(diff.params[1].staged == OperandSpec::gathered_as_output);
    CHECK(keys.count(test::spec_key(diff)) == 1);
    const auto both = plan_of(k, {window(t, 1), window(t, 3), untouched({n}, t)});
    CHECK(both.layout == Layout::gathered);
    CHECK(both.params[0].staged == OperandSpec::gathered_by_element);
    CHECK(both.params[1].staged == OperandSpec::gathered_by_element);
    CHECK(keys.count(test::spec_key(both)) == 1);
    // An output off its vectors keeps the contiguous loop at the width every operand allows,
    // four vectors a thread.
    const auto out_off = plan_of(k, {window(t, 0), window(t, 0), window(t, 1)});
    CHECK(out_off.layout == Layout::contiguous);
    CHECK(out_off.vector_width == 1);
    CHECK(out_off.unroll == 4);
    CHECK(keys.count(test::spec_key(out_off)) == 1);
    // Both compile for sm_90.
    CHECK_FALSE(k.compile_for(diff, 90).cubin.empty());
    CHECK_FALSE(k.compile_for(out_off, 90).cubin.empty());
    // Vectors of 8 bytes or more stay contiguous.
    if (t.itemsize() <= 2) {
      const std::int64_t eight = 8 / std::int64_t(t.itemsize());
      const auto eights = plan_of(k, {window(t, eight), window(t, 0), untouched({n}, t)});
      CHECK(eights.layout == Layout::contiguous);
      CHECK(eights.vector_width == eight);
      CHECK(eights.unroll == 2);
    }
  }
  // 8-byte dtypes move 8 bytes an access one element at a time: contiguous.
  const auto f64 = plan_of(k, {window(float64, 1), window(float64, 0), untouched({n}, float64)});
  CHECK(f64.layout == Layout::contiguous);
  CHECK(f64.vector_width == 1);
  CHECK(f64.unroll == 2);
  // Aligned windows keep the contiguous loop's full vectors.
  const auto aligned =
      plan_of(k, {window(float16, 8), window(float16, 0), untouched({n}, float16)});
  CHECK(aligned.layout == Layout::contiguous);
  CHECK(aligned.vector_width == 8);
}

TEST_CASE("a short axis beside a long one runs interleaved, transposed in registers", "[ops]") {
  // Images between channels-last and channels-first (2 to 8 channels) and tall narrow matrices
  // transposed: each thread takes S vectors of every operand, an interleaved one's as one run.
  // The widest vector every operand's alignment allows; the plan is among the ahead-of-time
  // specs and compiles for sm_90; a per-channel value is read once a row; 9 channels and an
  // input stepped along the pixels take other loops.
  using codegen::Layout;
  test::ScopedEnv memory("KILN_CACHE_IN_MEMORY", "1");
  const ElementwiseKernel k("T x, T y", "T z", "z = x - y", "plan_interleaved");
  for (dtype t : {int8, float16, float32, float64, complex128}) {
    INFO(t.name());
    std::set<std::string> keys;
    for (const auto& spec : k.specs({.dtypes = {t, t}, .max_ndim = 3}))
      keys.insert(test::spec_key(spec));
    const int widest = int(16 / t.itemsize());
    for (const std::int64_t ch : {2, 3, 4, 8}) {
      INFO(ch << " channels");
      const int w = std::min<int>(widest, int(codegen::kMaxInterleavedGroup / ch));
      const auto to_first =
          plan_of(k, {untouched({6, 64, 64, ch}, t).transpose({0, 3, 1, 2}),
                      untouched({6, ch, 64, 64}, t), untouched({6, ch, 64, 64}, t)});
      CHECK(to_first.layout == Layout::interleaved);
      CHECK(to_first.ndim == 3);
      CHECK(to_first.interleave() == ch);
      CHECK(to_first.vector_width == w);
      CHECK(keys.count(test::spec_key(to_first)) == 1);
      const auto to_last =
          plan_of(k, {untouched({6, ch, 64, 64}, t).transpose({0, 2, 3, 1}),
                      untouched({6, 64, 64, ch}, t), untouched({6, 64, 64, ch}, t)});
      CHECK(to_last.layout == Layout::interleaved);
      CHECK(to_last.interleave() == ch);
      CHECK(to_last.vector_width == w);
      CHECK(keys.count(test::spec_key(to_last)) == 1);
      CHECK_FALSE(k.compile_for(to_first, 90).cubin.empty());
    }
    // (n, 3).T: rows of an odd n start off the vectors (one element a group); of whole
    // vectors, the widest.
    const auto odd =
        plan_of(k, {untouched({1001, 3}, t).T(), untouched({3, 1001}, t), untouched({3, 1001}, t)});
    CHECK(odd.layout == Layout::interleaved);
    CHECK(odd.ndim == 2);
    CHECK(odd.vector_width == 1);
    CHECK(keys.count(test::spec_key(odd)) == 1);
    CHECK_FALSE(k.compile_for(odd, 90).cubin.empty());
    const auto whole =
        plan_of(k, {untouched({1024, 3}, t).T(), untouched({3, 1024}, t), untouched({3, 1024}, t)});
    CHECK(whole.layout == Layout::interleaved);
    CHECK(whole.vector_width == widest);
    // Another block size than the groups' 256 plans the loop without them, as tiles do.
    const auto blocked =
        plan_of(k, {untouched({1024, 3}, t).T(), untouched({3, 1024}, t), untouched({3, 1024}, t)},
                {.block_size = 128});
    CHECK(blocked.layout != Layout::interleaved);
    CHECK(plan_of(k,
                  {untouched({1024, 3}, t).T(), untouched({3, 1024}, t), untouched({3, 1024}, t)},
                  {.block_size = 256})
              .layout == Layout::interleaved);
    // A per-channel value (stride 0 along L) is read once a row.
    const auto per_channel = plan_of(
        k, {untouched({6, 64, 64, 3}, t).transpose({0, 3, 1, 2}),
            untouched({1, 3, 1, 1}, t).broadcast_to({6, 3, 64, 64}), untouched({6, 3, 64, 64}, t)});
    CHECK(per_channel.layout == Layout::interleaved);
    CHECK(keys.count(test::spec_key(per_channel)) == 1);
    // Past the interleaved loop's reach: 9 channels, and an input stepped along the pixels.
    const auto nine = plan_of(k, {untouched({6, 64, 64, 9}, t).transpose({0, 3, 1, 2}),
                                  untouched({6, 9, 64, 64}, t), untouched({6, 9, 64, 64}, t)});
    CHECK(nine.layout != Layout::interleaved);
    const auto stepped =
        plan_of(k, {untouched({6, 64, 64, 3}, t).transpose({0, 3, 1, 2}),
                    untouched({6, 3, 64, 128}, t)(all, all, all, slice(0, std::nullopt, 2)),
                    untouched({6, 3, 64, 64}, t)});
    CHECK(stepped.layout != Layout::interleaved);
  }
  // 64-bit indices compile too; a loop whose code reads i keeps it in C order (GPU tests).
  const ElementwiseKernel ki("T x", "T z", "z = x + (T)i", "plan_interleaved_index");
  auto spec = plan_of(
      ki, {untouched({2, 40, 3}, float32).transpose({0, 2, 1}), untouched({2, 3, 40}, float32)});
  CHECK(spec.layout == Layout::interleaved);
  CHECK_FALSE(ki.compile_for(spec, 90).cubin.empty());
  spec.index_bits = 64;
  CHECK_FALSE(ki.compile_for(spec, 90).cubin.empty());
  // Exact layouts: the short extent 2..8, two dims or more, S x vector_width at most 64.
  const std::vector<dtype> i8{int8, int8};
  CHECK(k.make_spec(i8,
                    {.layout = Layout::interleaved, .ndim = 3, .vector_width = 16, .interleave = 4})
            .interleave() == 4);
  for (int s : {0, 1, 9})
    CHECK_THROWS_WITH(k.make_spec(i8, {.layout = Layout::interleaved, .ndim = 3, .interleave = s}),
                      Catch::Contains(fmt::format("interleave {} is not possible here", s)));
  CHECK_THROWS_WITH(k.make_spec(i8, {.layout = Layout::strided, .ndim = 3, .interleave = 3}),
                    Catch::Contains("0 for every other layout"));
  CHECK_THROWS_WITH(k.make_spec(i8, {.layout = Layout::interleaved, .ndim = 1, .interleave = 3}),
                    Catch::Contains("interleaved kernels take 2 or more"));
  CHECK_THROWS_WITH(
      k.make_spec(i8,
                  {.layout = Layout::interleaved, .ndim = 2, .vector_width = 16, .interleave = 8}),
      Catch::Contains("at most 64 (here 128)"));
}

TEST_CASE("every plan of a random layout is among the ahead-of-time specs of its binding",
          "[ops]") {
  // kiln-cache precompiles specs(): a call whose plan is not among them would compile at run
  // time, or fail where KILN_DISALLOW_COMPILE forbids it. Seeded draws of every layout family
  // (broadcasts, one-element inputs among them, permutations of the inputs or the output,
  // slices with offsets, steps and reversals, and mixes), every dtype class, and a host scalar
  // wider than the arrays; each call's binding as a user would write it: the dtypes, which
  // inputs are C++ scalars and which are one-element arrays.
  const ElementwiseKernel sub("T x, T y", "T z", "z = x - y", "aot_random_sub");
  const ElementwiseKernel scale("T x, float64 s", "T z", "z = x * s", "aot_random_scale");
  const dtype types[] = {float32, float16, bfloat16, float64, int8, int32, complex64};
  std::mt19937_64 g(20261201);
  auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(g)); };
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(g) < p; };
  std::map<std::string, std::set<std::string>> listed;  // binding -> its specs' keys
  int draws = 0, one_element = 0, scalars = 0, missing = 0;
  for (int draw = 0; draw < 2500; ++draw) {
    const dtype t = types[pick(7)];
    const int nd = 1 + pick(4);
    const double elements = chance(0.1) ? 3e9 : chance(0.5) ? 2e7 : 3e5;  // some past 2^31
    const Shape s = test::random_shape(g, nd, elements);
    const int family = pick(4);
    ndarray x, y, z;
    if (family == 0) {  // broadcasts into a contiguous output
      x = test::untouched(test::broadcast_shape(g, s, 0.4), t);
      y = test::untouched(test::broadcast_shape(g, s, 0.5), t);
      z = test::untouched(s, t);
    } else if (family == 1) {  // permuted inputs or output
      const int which = pick(3);
      x = which == 2 ? test::untouched(s, t) : test::random_view(g, s, t, true, false);
      y = which == 1 ? test::random_view(g, s, t, true, false) : test::untouched(s, t);
      z = which == 2 ? test::random_view(g, s, t, true, false) : test::untouched(s, t);
    } else if (family == 2) {  // slices
      x = test::random_view(g, s, t, false, true);
      y = chance(0.5) ? test::random_view(g, s, t, false, true) : test::untouched(s, t);
      z = chance(0.25) ? test::random_view(g, s, t, false, true) : test::untouched(s, t);
    } else {  // a permuted slice against a broadcast, into a maybe sliced output
      x = test::random_view(g, s, t, true, true);
      y = test::untouched(test::broadcast_shape(g, s, 0.5), t);
      z = chance(0.3) ? test::random_view(g, s, t, false, true) : test::untouched(s, t);
    }
    const bool scalar = draw % 4 == 3;
    const ElementwiseKernel& k = scalar ? scale : sub;
    aot_target binding{.dtypes = {t, scalar ? float64 : t}, .max_ndim = 4};
    if (scalar) binding.scalar_inputs = {1};
    if (test::is_one_element(x)) binding.uniform_inputs.push_back(0);
    if (!scalar && test::is_one_element(y)) binding.uniform_inputs.push_back(1);
    std::string name = fmt::format("{} {}", k.name(), t.name());
    for (int u : binding.uniform_inputs) name += fmt::format(" uniform {}", u);
    auto& keys = listed[name];
    if (keys.empty())
      for (const auto& spec : k.specs(binding)) keys.insert(test::spec_key(spec));
    const auto plan = scalar ? plan_of(k, {x, 2.5, z}) : plan_of(k, {x, y, z});
    ++draws;
    one_element += !binding.uniform_inputs.empty();
    scalars += scalar;
    if (keys.count(test::spec_key(plan))) continue;
    if (++missing > 5) continue;  // the first few name their layouts
    INFO("draw " << draw << ", " << name << "; x " << test::describe(x) << "; y "
                 << (scalar ? std::string("a scalar") : test::describe(y)) << "; z "
                 << test::describe(z));
    CHECK(keys.count(test::spec_key(plan)) == 1);
  }
  CHECK(missing == 0);
  CHECK(draws == 2500);
  CHECK(one_element > 200);  // the draws reach one-element inputs, alone and paired
  CHECK(scalars > 500);
}

TEST_CASE(
    "every plan of a random layout is among the ahead-of-time specs - three inputs, a kernel "
    "that reads i, two outputs",
    "[ops]") {
  // A call may stage, read by groups, read once a row or read as the output any subset of the
  // inputs (three: every subset is listed), and stage outputs where the loop does not follow
  // them: the first one of a kernel that reads i (the loop keeps C order), and any other.
  const ElementwiseKernel fma("T x, T y, T w", "T z", "z = x * y + w", "aot_random_fma");
  const ElementwiseKernel indexed("T x, T y", "T z", "z = x - y + (T)(i & 1)", "aot_random_i");
  const ElementwiseKernel two("T x, T y", "T z, T v", "z = x - y; v = x + y", "aot_random_two");
  const dtype types[] = {float32, float16, float64, int8, int32};
  std::mt19937_64 g(20261207);
  auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(g)); };
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(g) < p; };
  std::map<std::string, std::set<std::string>> listed;  // binding -> its specs' keys
  int draws = 0, missing = 0, some_inputs_staged = 0, outputs_staged = 0, some_read_whole = 0;
  for (int draw = 0; draw < 3000; ++draw) {
    const dtype t = types[pick(5)];
    const int kind = draw % 3;
    const ElementwiseKernel& k = kind == 0 ? fma : kind == 1 ? indexed : two;
    const Shape s = test::random_shape(g, 1 + pick(4), chance(0.5) ? 2e7 : 3e5);
    std::vector<ndarray> arrays;
    if (kind == 0) {
      const int family = pick(4);
      for (int j = 0; j < 3; ++j)
        arrays.push_back(
            family == 0 ? test::untouched(test::broadcast_shape(g, s, 0.4), t)
            : family == 1
                ? (chance(0.5) ? test::random_view(g, s, t, true, false) : test::untouched(s, t))
            : family == 2
                ? (chance(0.6) ? test::random_view(g, s, t, false, true) : test::untouched(s, t))
                : (chance(0.4) ? test::random_view(g, s, t, true, true)
                               : test::untouched(test::broadcast_shape(g, s, 0.5), t)));
      arrays.push_back(test::untouched(s, t));
    } else {
      for (int j = 0; j < 2; ++j)
        arrays.push_back(chance(0.3) ? test::random_view(g, s, t, true, false)
                                     : test::untouched(s, t));
      for (int j = 0; j < kind; ++j)
        arrays.push_back(chance(0.6) ? test::random_view(g, s, t, true, false)
                                     : test::untouched(s, t));
    }
    const int nin = kind == 0 ? 3 : 2;
    aot_target binding{.dtypes = std::vector<dtype>(std::size_t(nin), t), .max_ndim = 4};
    for (int j = 0; j < nin; ++j)
      if (test::is_one_element(arrays[std::size_t(j)])) binding.uniform_inputs.push_back(j);
    std::string name = fmt::format("{} {}", k.name(), t.name());
    for (int u : binding.uniform_inputs) name += fmt::format(" uniform {}", u);
    auto& keys = listed[name];
    if (keys.empty())
      for (const auto& spec : k.specs(binding)) keys.insert(test::spec_key(spec));
    const auto plan = plan_of(k, std::vector<kernel_arg>(arrays.begin(), arrays.end()));
    ++draws;
    int staged_inputs = 0;
    for (int j = 0; j < nin; ++j) staged_inputs += plan.staged(j);
    some_inputs_staged += kind == 0 && staged_inputs == 2;
    some_read_whole += kind == 0 && plan.layout == codegen::Layout::gathered &&
                       (plan.as_output(0) + plan.as_output(1) + plan.as_output(2)) == 2;
    for (int j = nin; j < int(arrays.size()); ++j) outputs_staged += plan.staged(j);
    if (keys.count(test::spec_key(plan))) continue;
    if (++missing > 5) continue;  // the first few name their layouts
    std::string views;
    for (const auto& a : arrays) views += "; " + test::describe(a);
    INFO("draw " << draw << ", " << name << views);
    CHECK(keys.count(test::spec_key(plan)) == 1);
  }
  CHECK(missing == 0);
  CHECK(draws == 3000);
  // The draws reach what the lists gained: two of three inputs staged (tiled or packed) or laid
  // out as the output, and staged outputs.
  CHECK(some_inputs_staged > 20);
  CHECK(some_read_whole > 20);
  CHECK(outputs_staged > 200);
}

TEST_CASE("one-element inputs and scalars wider than the arrays have their own ahead-of-time specs",
          "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  using codegen::Layout;
  using codegen::OperandKind;
  // x - m with m a 0-d array (x - x.mean()): every spec reads m once per thread, and the
  // plan of such a call is among them; one-element inputs are no array operands, so the
  // patterns over array inputs (staged, constant along the rows) leave them out.
  const ElementwiseKernel sub("T x, T y", "T z", "z = x - y", "aot_uniform_sub");
  const auto m = sub.specs({.dtypes = {float16, float16}, .uniform_inputs = {1}});
  REQUIRE(!m.empty());
  std::set<Layout> layouts;
  for (const auto& s : m) {
    CHECK(s.kind(1) == OperandKind::uniform);
    CHECK(s.params[1].staged == 0);
    layouts.insert(s.layout);
  }
  CHECK(layouts == std::set<Layout>{Layout::contiguous, Layout::strided, Layout::gathered,
                                    Layout::tiled,
                                    Layout::interleaved});  // no packed box: one array input
  const ndarray x = test::untouched({4096, 4097}, float16),
                z = test::untouched({4096, 4097}, float16);
  for (const ndarray& mean : {test::untouched({}, float16), test::untouched({1, 1}, float16)}) {
    const std::string key = test::spec_key(plan_of(sub, {x, mean, z}));
    CHECK(std::any_of(m.begin(), m.end(), [&](const auto& s) { return test::spec_key(s) == key; }));
  }
  // Fewer than the all-array list (no patterns of the one-element input), and as many for
  // either input; both one-element (a broadcast of two values) has specs of its own too.
  const auto all = sub.specs({.dtypes = {float16, float16}});
  CHECK(m.size() < all.size());
  CHECK(sub.specs({.dtypes = {float16, float16}, .uniform_inputs = {0}}).size() == m.size());
  const auto both = sub.specs({.dtypes = {float16, float16}, .uniform_inputs = {0, 1}});
  CHECK(std::all_of(both.begin(), both.end(), [](const auto& s) {
    return s.kind(0) == OperandKind::uniform && s.kind(1) == OperandKind::uniform;
  }));
  // Every layout class compiles for sm_90 with the one-element input, float16 and float32.
  for (dtype t : {float16, float32}) {
    std::set<Layout> compiled;
    for (const auto& s : sub.specs({.dtypes = {t, t}, .uniform_inputs = {1}, .index64 = false}))
      if (compiled.insert(s.layout).second) {
        const auto req = sub.compile_request(s, 90);
        INFO(req.source);
        CHECK_NOTHROW(cache::compile_cached(req));
      }
    CHECK(compiled.size() == 5);
  }
  // A float64 scale of float16 arrays (a C++ double): the vectors are the arrays' (16 bytes of
  // float16), as a call plans them; before, specs() narrowed them to the scalar's width or
  // threw on the gathered ones.
  const ElementwiseKernel scale("T x, float64 s", "T z", "z = x * s", "aot_wide_scalar");
  const auto wide = scale.specs({.dtypes = {float16, float64}, .scalar_inputs = {1}});
  int widest = 0;
  for (const auto& s : wide) widest = std::max(widest, int(s.vector_width));
  CHECK(widest == 8);
  const std::string planned = test::spec_key(plan_of(scale, {x, 2.5, z}));
  CHECK(std::any_of(wide.begin(), wide.end(),
                    [&](const auto& s) { return test::spec_key(s) == planned; }));
  // An exact layout with the call's kinds (target.only).
  const auto exact = scale.specs({.dtypes = {float16, float64},
                                  .scalar_inputs = {1},
                                  .only = elementwise_layout{.vector_width = 8}});
  REQUIRE(exact.size() == 1);
  CHECK((exact[0].vector_width == 8 && exact[0].kind(1) == OperandKind::scalar));
  // Placeholders resolve as in a call: a scalar does not bind T (CuPy's rule), so a double
  // scale of float16 arrays is float16 in the kernel, as k(x, 2.5) is.
  const auto weak = sub.specs({.dtypes = {float16, float64}, .scalar_inputs = {1}});
  CHECK(weak.front().param_dtype(1) == float16);
  // Bad bindings name what is wrong.
  CHECK_THROWS_WITH(sub.specs({.dtypes = {float16, float16}, .uniform_inputs = {2}}),
                    Catch::Contains("uniform input 2 is not an input (0..1)"));
  CHECK_THROWS_WITH(
      sub.specs({.dtypes = {float16, float16}, .scalar_inputs = {1}, .uniform_inputs = {1}}),
      Catch::Contains("input 1 is in both scalar_inputs and uniform_inputs"));
  const ElementwiseKernel raw("T x, raw T r", "T z", "z = x + r[0]", "aot_uniform_raw");
  // A raw parameter a call gives a scalar is a scalar (set_scalar_or_raw), ahead of time too.
  for (const auto& s : raw.specs({.dtypes = {float32, float32}, .scalar_inputs = {1}}))
    CHECK(s.kind(1) == OperandKind::scalar);
  CHECK_THROWS_WITH(raw.specs({.dtypes = {float32, float32}, .uniform_inputs = {1}}),
                    Catch::Contains("uniform input 1 is raw parameter 'r'"));
  CHECK_THROWS_WITH(
      sub.specs({.dtypes = {float32, float32},
                 .uniform_inputs = {1},
                 .only = elementwise_layout{.layout = Layout::tiled, .ndim = 2, .staged = 2}}),
      Catch::Contains("staged names one-element (uniform) parameter 'y'"));
  CHECK_THROWS_WITH(sub.specs({.dtypes = {float32, float32},
                               .uniform_inputs = {1},
                               .only = elementwise_layout{.layout = Layout::gathered,
                                                          .ndim = 2,
                                                          .vector_width = 4,
                                                          .row_constant = 2}}),
                    Catch::Contains("row_constant names parameter 1, which is not an array input"));
}

TEST_CASE("the plan of each layout family, N-D permutations, broadcasts and slices", "[ops]") {
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "plan_family_add");
  using codegen::Layout;
  using codegen::OperandKind;
  SECTION(
      "broadcasts into a contiguous output are gathered, 16-bit dtypes take vectors along the "
      "last axis where it holds them, float64 row tiles") {
    // The outer sum x(8192, 1) + y(1, 8192): float32 gathered, z by 4.
    const ndarray col = untouched({8192, 1}), row = untouched({1, 8192}),
                  z = untouched({8192, 8192});
    auto outer = plan_of(add, {col, row, z});
    CHECK(outer.layout == Layout::gathered);
    CHECK(outer.ndim == 2);
    CHECK(outer.vector_width == 4);
    CHECK((outer.kind(0) == OperandKind::array && outer.kind(1) == OperandKind::array));
    // An output that is not contiguous (every other column of a wider array): row tiles.
    const ndarray wide = untouched({8192, 16384});
    auto stepped_out = plan_of(add, {col, row, wide(all, slice(0, std::nullopt, 2))});
    CHECK((stepped_out.layout == Layout::tiled && !stepped_out.staged(2)));
    // float16: y and z by 16 bytes, x once per vector.
    const ndarray hcol = untouched({8192, 1}, float16), hrow = untouched({1, 8192}, float16),
                  hz = untouched({8192, 8192}, float16);
    auto houter = plan_of(add, {hcol, hrow, hz});
    CHECK((houter.layout == Layout::strided && houter.vector_width == 8 && houter.unroll == 2));
    // NCHW plus a per-channel (1, C, 1, 1): H and W merge; three planned axes.
    const ndarray x4 = untouched({8, 64, 28, 28}), b = untouched({1, 64, 1, 1}),
                  z4 = untouched({8, 64, 28, 28});
    auto nchw = plan_of(add, {x4, b, z4});
    CHECK((nchw.layout == Layout::gathered && nchw.ndim == 3 && nchw.vector_width == 4));
    // 784 elements a row hold whole vectors of 4: no vector crosses a row (unit_cols = 4);
    // rows of 8192 (the outer difference's) do too, rows of 30 do not. x4, laid out as the
    // output, reads vectors where z4's are (staged 3); inputs along the rows with unit steps,
    // aligned, read whole groups (staged 1): the outer sum's row, not x4 from an odd offset
    // or by every other element; the per-channel vector and the column are constant along
    // the rows (staged 2: one read per row).
    auto how = [](const codegen::ElementwiseSpec& s, int k) {
      return int(s.params[std::size_t(k)].staged);
    };
    CHECK(nchw.unit_cols() == 4);
    CHECK(outer.unit_cols() == 4);
    CHECK((how(nchw, 0) == 3 && how(nchw, 1) == 2 && how(nchw, 2) == 0));
    CHECK((nchw.as_output(0) && !nchw.as_output(1) && !outer.as_output(1)));
    CHECK((how(outer, 0) == 2 && how(outer, 1) == 1 && how(outer, 2) == 0));
    CHECK((nchw.row_constant(1) && outer.row_constant(0) && !outer.row_constant(1)));
    const ndarray x5 = untouched({8, 64, 28, 29}), x56 = untouched({8, 64, 28, 56});
    auto offset = plan_of(add, {x5(all, all, all, slice(1, std::nullopt)), b, z4});
    CHECK((offset.layout == Layout::gathered && offset.unit_cols() == 4 && how(offset, 0) == 0));
    auto stepped = plan_of(add, {x56(all, all, all, slice(0, std::nullopt, 2)), b, z4});
    CHECK((stepped.layout == Layout::gathered && stepped.unit_cols() == 4 && how(stepped, 0) == 0));
    // Rows of 30 hold whole pairs: z by vectors of 4 that cross rows between pairs, inputs
    // stepped by pairs; the one that runs along the rows (the row vector) loads each pair.
    // The column is constant along the rows. Two columns step by pairs too, both constant;
    // rows of 29 element by element.
    const ndarray odd = untouched({512, 30}), odd_col = untouched({512, 1}),
                  odd_row = untouched({30});
    auto odd_rows = plan_of(add, {odd_col, odd_row, odd});
    CHECK((odd_rows.layout == Layout::gathered && odd_rows.vector_width == 4 &&
           odd_rows.unit_cols() == 2 && odd_rows.unroll == 2 && how(odd_rows, 1) == 1 &&
           how(odd_rows, 0) == 2));
    auto odd_cols = plan_of(add, {odd_col, odd_col, odd});
    CHECK((odd_cols.layout == Layout::gathered && odd_cols.vector_width == 4 &&
           odd_cols.unit_cols() == 2 && how(odd_cols, 0) == 2 && how(odd_cols, 1) == 2));
    auto rows29 = plan_of(add, {odd_col, untouched({29}), untouched({512, 29})});
    CHECK((rows29.layout == Layout::gathered && rows29.vector_width == 4 &&
           rows29.unit_cols() == 1 && how(rows29, 0) == 2 && how(rows29, 1) == 0));
    // Rows of 30 hold a vector of 4 or more: with both inputs constant along them, a vector
    // crosses one row end at most (found once); a row vector stepped along them keeps the
    // running wrap (registers). Rows of 17925 (NCHW's H x W, odd) minus a per-channel mean:
    // x laid out as the output, read by vectors although the rows hold no pairs; rows of 2
    // (float32) or 6 (float16, vectors of 8) cross several ends.
    CHECK((!rows29.gathered_long_rows() && !odd_rows.gathered_long_rows() &&
           odd_cols.gathered_long_rows() && !outer.gathered_long_rows()));
    auto std9 = plan_of(add, {untouched({416, 9, 15, 1195}), untouched({1, 9, 1, 1}),
                              untouched({416, 9, 15, 1195})});
    CHECK((std9.layout == Layout::gathered && std9.ndim == 3 && std9.unit_cols() == 1 &&
           std9.gathered_long_rows() && how(std9, 0) == 3 && how(std9, 1) == 2));
    auto rows2 = plan_of(add, {odd_col, untouched({2}), untouched({512, 2})});
    CHECK((rows2.layout == Layout::gathered && rows2.unit_cols() == 2 &&
           !rows2.gathered_long_rows()));
    // float16 rows of 1226 (2 x 613) under a batch axis: z by 16 bytes, inputs by pairs, both
    // loading them.
    auto h1226 = plan_of(add, {untouched({285, 1226}, float16), untouched({1, 1, 1226}, float16),
                               untouched({192, 285, 1226}, float16)});
    CHECK((h1226.layout == Layout::gathered && h1226.vector_width == 8 && h1226.unit_cols() == 2 &&
           how(h1226, 0) == 1 && how(h1226, 1) == 1));
    // Rows of 10 float16, both inputs broadcast along them: pairs, both constant along the rows.
    auto h10 = plan_of(add, {untouched({21, 803, 384, 1}, float16), untouched({803, 1, 1}, float16),
                             untouched({21, 803, 384, 10}, float16)});
    CHECK((h10.layout == Layout::gathered && h10.ndim == 4 && h10.vector_width == 8 &&
           h10.unit_cols() == 2 && how(h10, 0) == 2 && how(h10, 1) == 2));
    // Every input constant along the rows: one load a row, one vector a thread; with an input
    // loading groups, two.
    CHECK((h10.unroll == 1 && odd_cols.unroll == 1 && nchw.unroll == 2 && h1226.unroll == 2));
    // The per-channel vector into a larger output.
    const ndarray z5 = untouched({8, 64, 32, 64});
    auto per_channel = plan_of(add, {untouched({64, 1, 64}), untouched({1, 32, 1}), z5});
    CHECK((per_channel.layout == Layout::gathered && per_channel.ndim == 4));
    const ndarray h4 = untouched({8, 64, 28, 28}, bfloat16),
                  hb = untouched({1, 64, 1, 1}, bfloat16);
    CHECK(plan_of(add, {h4, hb, h4}).vector_width == 8);  // 784 = 98 x 8
    // A last axis of 6 float16 holds no vector of 8 bytes or more: gathered, z by 8, inputs by
    // pairs (the row vector loading them); two columns: z by 8 too.
    const ndarray h = untouched({512, 1}, float16), h6 = untouched({512, 6}, float16),
                  hr = untouched({6}, float16);
    const auto pairs = plan_of(add, {h, hr, h6});
    CHECK((pairs.layout == Layout::gathered && pairs.vector_width == 8 && pairs.unit_cols() == 2 &&
           pairs.unroll == 2 && pairs.staged(1) && !pairs.gathered_long_rows()));
    CHECK((plan_of(add, {h, h, h6}).layout == Layout::gathered &&
           plan_of(add, {h, h, h6}).vector_width == 8));
    // Planes of the last two axes shorter than 8 vectors would unravel too often: strided.
    const ndarray h2 = untouched({4, 1}, float16), h2z = untouched({4, 6}, float16);
    auto small = plan_of(add, {h2, h2, h2z});
    CHECK((small.layout == Layout::strided && small.vector_width == 1 && small.unroll == 4));
    // float64: row tiles where a tile wastes at most a tenth of its threads, else strided: a
    // last axis of 28 would idle an eighth of a 32-column tile; 30 does not.
    const ndarray f28 = untouched({4096, 28}, float64), f1 = untouched({4096, 1}, float64),
                  fr = untouched({28}, float64);
    CHECK(plan_of(add, {f1, fr, f28}).layout == Layout::strided);
    const ndarray f30 = untouched({4096, 30}, float64), fr30 = untouched({30}, float64);
    CHECK(plan_of(add, {f1, fr30, f30}).layout == Layout::tiled);
    // Size-1 axes anywhere drop out: (1, 300, 1, 8) + (64, 1, 1, 1) is a 2-D loop.
    const ndarray p = untouched({1, 300, 1, 8}), q = untouched({64, 1, 1, 1}),
                  pz = untouched({64, 300, 1, 8});
    auto ones = plan_of(add, {p, q, pz});
    CHECK((ones.layout == Layout::gathered && ones.ndim == 2));
  }
  SECTION("slices keep vectors where aligned, and negative steps read vectors reversed") {
    const ndarray x = untouched({4096, 4096}, float16), y = untouched({4096, 2048}, float16),
                  z = untouched({4096, 2048}, float16);
    auto stepped = plan_of(add, {x(all, slice(0, std::nullopt, 2)), y, z});  // x[:, ::2]
    CHECK((stepped.layout == Layout::strided && stepped.vector_width == 8));
    auto window = plan_of(add, {x(slice(0, 4096, 1), slice(8, 2056, 1)), y, z});  // 16-byte offset
    CHECK((window.layout == Layout::strided && window.vector_width == 8));
    auto half_window = plan_of(add, {x(slice(0, 4096, 1), slice(4, 2052, 1)), y, z});  // 8 bytes
    CHECK((half_window.layout == Layout::strided && half_window.vector_width == 4));
    // 2 bytes off: no vector along the last axis; gathered, z by 8.
    auto shifted = plan_of(add, {x(all, slice(1, 2049, 1)), y, z});
    CHECK((shifted.layout == Layout::gathered && shifted.vector_width == 8 && shifted.unroll == 2));
    // Only gathers (no operand with a unit stride), collapsing to one axis: the strided loop.
    const ndarray g = untouched({4096, 4096}, float16);
    auto gathers = plan_of(add, {x(all, slice(0, std::nullopt, 2)),
                                 x(all, slice(1, std::nullopt, 2)), g(all, slice(0, 4096, 2))});
    CHECK((gathers.layout == Layout::strided && gathers.ndim == 1 && gathers.vector_width == 1 &&
           gathers.unroll == 4));
    const ndarray v = untouched({1 << 20}, float16), w = untouched({1 << 20}, float16);
    auto reversed = plan_of(add, {v(slice(std::nullopt, std::nullopt, -1)), w, w});
    CHECK((reversed.layout == Layout::strided && reversed.ndim == 1 && reversed.vector_width == 8));
    auto rows_reversed =
        plan_of(add, {x(slice(std::nullopt, std::nullopt, -1), slice(0, 2048, 1)), y, z});
    CHECK((rows_reversed.layout == Layout::strided && rows_reversed.vector_width == 8));
    // float32 slices into a contiguous output: gathered, z by 4.
    const ndarray f = untouched({4096, 4096}), fy = untouched({4096, 2048});
    auto f32_window = plan_of(add, {f(all, slice(0, 2048, 1)), fy, fy});
    CHECK((f32_window.layout == Layout::gathered && f32_window.vector_width == 4));
    const ndarray fv = untouched({1 << 20});
    auto f32_reversed = plan_of(add, {fv(slice(std::nullopt, std::nullopt, -1)), fv, fv});
    CHECK((f32_reversed.layout == Layout::gathered && f32_reversed.ndim == 1));
    // float64 keeps the strided loop, one element per item.
    const ndarray dv = untouched({1 << 20}, float64);
    CHECK(plan_of(add, {dv(slice(std::nullopt, std::nullopt, -1)), dv, dv}).layout ==
          Layout::strided);
  }
  SECTION("N-D permutations tile (rows axis, last axis) over the batch axes") {
    const ndarray x = untouched({16, 256, 512}), y = untouched({16, 512, 256}),
                  z = untouched({16, 512, 256});
    auto batched = plan_of(add, {x.transpose({0, 2, 1}), y, z});
    CHECK((batched.layout == Layout::tiled && batched.ndim == 3));
    CHECK((batched.staged(0) && !batched.staged(1) && !batched.staged(2)));
    // A full reversal of the axes pairs axis 0 with the last; axis 1 is the batch.
    const ndarray a = untouched({64, 32, 128}), b = untouched({128, 32, 64}),
                  c = untouched({128, 32, 64});
    auto reversal = plan_of(add, {a.transpose({2, 1, 0}), b, c});
    CHECK((reversal.layout == Layout::tiled && reversal.ndim == 3 && reversal.staged(0)));
    // x.transpose(2, 0, 1) + y collapses to a 2-D tile.
    const ndarray t = untouched({64, 128, 128}), u = untouched({128, 64, 128});
    CHECK(plan_of(add, {t.transpose({2, 0, 1}), u, u}).ndim == 2);
    // Permuted leading axes keep the last axis contiguous: strided, no tile.
    const ndarray l = untouched({32, 64, 256}, float16), m = untouched({64, 32, 256}, float16);
    auto leading = plan_of(add, {l.transpose({1, 0, 2}), m, m});
    CHECK((leading.layout == Layout::strided && leading.vector_width == 8));
    // A last axis of 3 (shorter than a tile's side) beside a transposed input: interleaved,
    // each thread all 3 of a group of rows.
    const ndarray narrow = untouched({3, 100000}), nz = untouched({100000, 3});
    CHECK(plan_of(add, {narrow.T(), nz, nz}).layout == Layout::interleaved);
    // 21 rows (past the interleaved loop's 8) fit one tile: x's tile is one run of memory.
    const ndarray tall = untouched({100000, 21}), wide = untouched({21, 100000});
    auto by_runs = plan_of(add, {tall.T(), wide, wide});
    CHECK((by_runs.layout == Layout::tiled && by_runs.staged_run(0) && !by_runs.staged(1)));
    // ... into a transposed output instead (the loop follows it: x and y are the runs), float64
    // too; long rows or a stepped x take no runs.
    auto out_runs = plan_of(add, {tall, tall, wide.T()});
    CHECK((out_runs.layout == Layout::tiled && out_runs.staged_run(0) && out_runs.staged_run(1) &&
           !out_runs.staged(2)));
    const ndarray tall64 = untouched({100000, 21}, float64),
                  wide64 = untouched({21, 100000}, float64);
    CHECK(plan_of(add, {tall64.T(), wide64, wide64}).staged_run(0));
    // float16 over 28 rows moves them by 4 (8 bytes a unit) on the element path, which a run
    // (single elements into the tile) does not beat: staged, no runs. By 21 rows it takes them.
    const ndarray tall16 = untouched({100000, 28}, float16),
                  wide16 = untouched({28, 100000}, float16);
    auto by_units = plan_of(add, {tall16, tall16, wide16.T()});
    CHECK((by_units.layout == Layout::tiled && by_units.staged(0) && by_units.staged(1) &&
           by_units.unit_rows() == 4 && !by_units.tiled_runs()));
    const ndarray odd16 = untouched({100000, 21}, float16),
                  oddw16 = untouched({21, 100000}, float16);
    CHECK(plan_of(add, {odd16, odd16, oddw16.T()}).staged_run(0));
    const ndarray square = untouched({2048, 2048});
    auto long_rows = plan_of(add, {square.T(), square, square});
    CHECK((long_rows.layout == Layout::tiled && long_rows.staged(0) && !long_rows.tiled_runs()));
    const ndarray stepped = untouched({100000, 42});
    auto no_run = plan_of(add, {stepped(all, slice(0, std::nullopt, 2)).T(), wide, wide});
    CHECK((no_run.layout == Layout::tiled && no_run.staged(0) && !no_run.tiled_runs()));
    // Runs only where every tile's run starts on 16 bytes: a view one element in, or a batch
    // stride off 16 bytes, keeps the element path; a batch stride on 16 bytes takes runs.
    const ndarray flat = untouched({100000 * 21 + 1});
    auto off = plan_of(add, {flat(slice(1, std::nullopt)).reshape({100000, 21}).T(), wide, wide});
    CHECK((off.layout == Layout::tiled && off.staged(0) && !off.tiled_runs()));
    const ndarray planes = untouched({3, 21, 700});
    CHECK(plan_of(add, {untouched({3, 700, 21}).transpose({0, 2, 1}), planes, planes})
              .staged_run(0));  // 700 x 21 x 4 bytes a batch
    const ndarray planes16 = untouched({3, 21, 700}, float16);
    auto batch16 =
        plan_of(add, {untouched({3, 700, 21}, float16).transpose({0, 2, 1}), planes16, planes16});
    CHECK((batch16.layout == Layout::tiled && batch16.staged(0) && !batch16.tiled_runs()));
    // x - y into (264, 112, 265, 9) permuted (2, 0, 3, 1): 9 rows, a batch stride of 9540 bytes.
    const ndarray cube = untouched({264, 112, 265, 9});
    auto permuted_out =
        plan_of(add, {cube, cube, untouched({112, 9, 264, 265}).transpose({2, 0, 3, 1})});
    CHECK((permuted_out.layout == Layout::tiled && permuted_out.staged(0) &&
           !permuted_out.tiled_runs()));
  }
  SECTION("a permuted output orders the loop; the operation's index keeps it") {
    const ndarray x = untouched({512, 768}), y = untouched({512, 768}), z = untouched({768, 512});
    // z.T = x + y: the loop follows z, so x and y become the transposed operands.
    auto out_t = plan_of(add, {x, y, z.T()});
    CHECK(
        (out_t.layout == Layout::tiled && out_t.staged(0) && out_t.staged(1) && !out_t.staged(2)));
    // Inputs transposed against a contiguous output tile; transposed with it, the loop is
    // contiguous.
    CHECK(plan_of(add, {x.T(), y.T(), untouched({768, 512})}).layout == Layout::tiled);
    const ndarray zt = untouched({512, 768});
    CHECK(plan_of(add, {x.T(), y.T(), zt.T()}).layout == Layout::contiguous);
    // In place on a transposed view: x *= 5 as a kernel is contiguous.
    ElementwiseKernel scale("float32 s", "float32 v", "v = v * s", "plan_scale");
    const ndarray sq = untouched({1024, 1024}), sqt = sq.T();
    std::vector<kernel_arg> args{kernel_arg(5.0f), kernel_arg(sqt)};
    detail::KernelCall call(scale.definition());
    detail::bind_arguments(call, args);
    detail::decide_loop_shape(call, true);
    detail::ElementwisePlan plan;
    detail::plan_elementwise(call, scale.definition(), true, plan);
    CHECK(plan.spec.layout == Layout::contiguous);
    // z.T = x + i: i is C order over the loop, so the loop keeps its order and z is staged.
    ElementwiseKernel indexed("T x, T y", "T z", "z = x + y + i", "plan_indexed");
    auto idx = plan_of(indexed, {x, y, z.T()});
    CHECK((idx.layout == Layout::tiled && !idx.staged(0) && !idx.staged(1) && idx.staged(2)));
  }
}

TEST_CASE("a definition knows whether its code reads the loop index", "[ops]") {
  CHECK(ElementwiseKernel("T x", "T z", "z = x + i", "ix1").definition().uses_index);
  CHECK(ElementwiseKernel("T x", "T z", "z = x + _ind.size()", "ix2").definition().uses_index);
  CHECK_FALSE(ElementwiseKernel("T x", "T z", "z = x * 2", "ix3").definition().uses_index);
  CHECK_FALSE(ElementwiseKernel("T x", "T z", "z = x * 2 /* i */", "ix4").definition().uses_index);
  // A macro may expand to i; a function's own i is not the loop's.
  CHECK(ElementwiseKernel("T x", "T z", "z = x + IDX", "ix5", {.preamble = "#define IDX \\\n  i\n"})
            .definition()
            .uses_index);
  CHECK_FALSE(ElementwiseKernel("T x", "T z", "z = f(x)", "ix6",
                                {.preamble = "__device__ T f(T v) { int i = 2; return v * i; }"})
                  .definition()
                  .uses_index);
  CHECK(ElementwiseKernel("T x", "T z", "z = x + IDX", "ix7", {.options = {"-DIDX=i"}})
            .definition()
            .uses_index);
}
