// ReductionKernel parts that need no GPU: definition checks, call checks that come before
// any device work, the axis rules, and every strategy compiled by NVRTC for sm_90.
#include "kiln/engine/reduction_kernel.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

#include "call/kernel_call.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/codegen/reduction_emitter.hpp"
#include "kiln/runtime/axes.hpp"
#include "kiln/runtime/error.hpp"
#include "reduction/reduction_plan.hpp"
#include "support/random_layouts.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using codegen::ReductionStrategy;

TEST_CASE("ReductionKernel checks its definition at construction", "[ops]") {
  CHECK_THROWS_AS(ReductionKernel("T x", "T y", "", "a + b", "y = a", "0", "k"), SignatureError);
  CHECK_THROWS_AS(ReductionKernel("T x", "T y", "x", " ", "y = a", "0", "k"), SignatureError);
  CHECK_THROWS_AS(ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "bad name"),
                  SignatureError);
  CHECK_THROWS_AS(ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "k\n"), SignatureError);
  CHECK_THROWS_AS(ReductionKernel("T x", "", "x", "a + b", "", "0", "k"), SignatureError);
  CHECK_THROWS_WITH(ReductionKernel("T a", "T y", "a", "a + b", "y = a", "0", "k"),
                    Catch::Contains("may not be named 'a'"));
  ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
  CHECK(k.nin() == 1);
  CHECK(k.nout() == 1);
  CHECK(k.name() == "l2norm");
}

TEST_CASE("axes resolve NumPy's way", "[ops]") {
  CHECK(axes().mask(3) == 0b111);
  CHECK(axes(-1).mask(3) == 0b100);
  CHECK(axes{0, 2}.mask(3) == 0b101);
  CHECK(axes(std::initializer_list<std::int64_t>{}).mask(3) == 0);
  KILN_CHECK_THROWS(axes(3).mask(3), ValueError,
                    Catch::Equals("axis 3 is out of bounds for array of dimension 3"));
  KILN_CHECK_THROWS(axes(-4).mask(3), ValueError, Catch::Contains("axis -4 is out of bounds"));
  KILN_CHECK_THROWS((axes{1, -2}.mask(3)), ValueError,
                    Catch::Contains("duplicate value in 'axis'"));
  CHECK(reduced_shape({2, 3, 4}, 0b101, false) == Shape{3});
  CHECK(reduced_shape({2, 3, 4}, 0b101, true) == Shape{1, 3, 1});
  CHECK(reduced_shape({2, 3, 4}, 0b111, false) == Shape{});
}

TEST_CASE("reduction calls are checked before any device work", "[ops]") {
  ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "my_sum");
  ReductionKernel nid("T x", "T y", "x", "a > b ? a : b", "y = a", "", "my_max");
  ndarray none;  // no GPU here: only checks that precede the device can run
  CHECK_THROWS_WITH(k(), Catch::Contains("my_sum") && Catch::Contains("takes 1 argument"));
  CHECK_THROWS_WITH(k(1.0f, 2.0f, 3.0f), Catch::Contains("got 3"));
  CHECK_THROWS_WITH(k(launch_options{}, 1.0f), Catch::Contains("must be the last argument"));
  CHECK_THROWS_WITH(k(reduce_options{}, 1.0f), Catch::Contains("reduce_options must follow"));
  CHECK_THROWS_WITH(k(none, launch_options{.block_size = 100}), Catch::Contains("multiple of 32"));
  CHECK_THROWS_WITH(k(1.0f), Catch::Contains("cannot deduce type T"));
}

TEST_CASE(
    "a split's parts make about two waves of the blocks the compiled kernel fits (one for heavy "
    "states)",
    "[ops]") {
  codegen::ReductionSpec s;
  s.vector_width = 4;
  // var over (0, 2, 3) of (64, 256, 56, 56): 256 rows; the kernel fits 5 blocks of 256 an SM.
  auto g = codegen::reduction_geometry(s, 256, 64 * 56 * 56, 0, 132);
  REQUIRE(s.split == 1);
  CHECK(g.parts == 8);  // two waves of full SMs (8 blocks each)
  codegen::balance_parts(g, s, 256, 5, 132);
  CHECK(g.parts == 5);  // 1280 blocks: 1.94 waves of 660
  CHECK(g.grid_x == 256 * 5);
  CHECK(g.partials == 256 * 5);
  codegen::balance_parts(g, s, 256, 0, 132);  // occupancy unknown: unchanged
  CHECK(g.parts == 5);
  // Columns: two waves over the column tiles. 256 float32 columns make few tiles of 32 lanes
  // (2), so the tiles narrow to 8 lanes (a warp's row still 128 bytes): 8 tiles of 8 x 32.
  s = {};
  s.strategy = ReductionStrategy::outer;
  s.vector_width = 4;
  s.nparams = 2;
  s.set_param(0, float32, codegen::OperandKind::array);
  s.set_param(1, float32, codegen::OperandKind::array);
  g = codegen::reduction_geometry(s, 256, 192 * 1255, 0, 132);
  REQUIRE(s.split == 1);
  REQUIRE(g.grid_x == 8);
  CHECK(g.block_x == 8);
  CHECK(g.block_y == 32);
  codegen::balance_parts(g, s, 256, 3, 132);
  CHECK(g.grid_y == 99);  // 2 * 3 * 132 blocks over 8 tiles
  CHECK(g.partials == 99 * 256);
  // float64 pairs narrow down to 8 lanes (128 bytes of a row), only while tiles are few;
  // many tiles keep 32 lanes.
  s.vector_width = 2;
  s.set_param(0, float64, codegen::OperandKind::array);
  s.set_param(1, float64, codegen::OperandKind::array);
  g = codegen::reduction_geometry(s, 64, 1 << 20, 0, 132);
  CHECK(g.block_x == 8);  // 32 pairs: one tile of 32 lanes, narrowed to 8 lanes (128 bytes)
  CHECK(g.grid_x == 4);
  g = codegen::reduction_geometry(s, 256, 1 << 20, 0, 132);
  CHECK(g.block_x == 16);  // 128 pairs: 32 lanes made 4 tiles, 16 lanes make 8 (enough)
  CHECK(g.grid_x == 8);
  s.vector_width = 4;
  s.set_param(0, float32, codegen::OperandKind::array);
  s.set_param(1, float32, codegen::OperandKind::array);
  g = codegen::reduction_geometry(s, 16384, 16384, 0, 132);
  CHECK(g.block_x == 32);
  CHECK(g.grid_x == 128);
  // Where two waves would end in a sliver, the fullest last wave of one to four: argmax over
  // axis 1 of (480, 768, 15, 12) float32 has 675 column tiles; 4 blocks an SM fit (528 at
  // once), so one part is 1.28 waves, two 2.56, three 3.84 (taken). (`s`: float32 columns,
  // as above.)
  g = codegen::reduction_geometry(s, 480 * 180, 768, 0, 132);
  REQUIRE(s.split == 1);
  REQUIRE(g.grid_x == 675);
  codegen::balance_parts(g, s, 480 * 180, 4, 132);
  CHECK(g.grid_y == 3);
  CHECK(g.partials == 3 * 480 * 180);
  // States past 16 bytes (var's moments: 24 with the flag) take one wave at most: 660 blocks
  // fit, so 2 parts of 256 rows (512 blocks), where a sum's 8-byte state takes 5 (1.94 waves).
  s = {};
  s.vector_width = 4;
  g = codegen::reduction_geometry(s, 256, 64 * 56 * 56, 0, 132);
  codegen::balance_parts(g, s, 256, 5, 132, 24);
  CHECK(g.parts == 2);
  CHECK(g.grid_x == 512);
  codegen::balance_parts(g, s, 256, 5, 132, 8);
  CHECK(g.parts == 5);
  // Fewer than two blocks a row fit at once (100 rows, 132 resident): one part, whatever the
  // state.
  g = codegen::reduction_geometry(s, 100, 1 << 24, 0, 132);
  codegen::balance_parts(g, s, 100, 1, 132, 32);
  CHECK(g.parts == 1);
  // Never more parts than the reduced elements hold.
  s = {};
  s.vector_width = 4;
  g = codegen::reduction_geometry(s, 4, 40000, 0, 132);
  codegen::balance_parts(g, s, 4, 32, 132);
  CHECK(g.parts == g.max_parts);
}

TEST_CASE("the launch policy picks a strategy from the collapsed shape", "[ops]") {
  codegen::ReductionSpec s;
  s.vector_width = 4;
  auto g = codegen::reduction_geometry(s, 1, std::int64_t(1) << 28, 0, 132);  // full reduction
  CHECK(s.strategy == ReductionStrategy::inner_block);
  CHECK(s.split == 1);
  CHECK(g.grid_x > 1000);
  CHECK(g.partials == g.grid_x);
  CHECK(g.counters == 1);
  s = {};
  s.vector_width = 4;
  codegen::reduction_geometry(s, 1, 1, 0, 132);  // one element: one block, no workspace
  CHECK(s.split == 0);
  s = {};
  s.vector_width = 4;
  g = codegen::reduction_geometry(s, 16384, 16384, 0, 132);  // rows
  CHECK(s.strategy == ReductionStrategy::inner_block);
  CHECK(s.split == 0);
  CHECK(g.grid_x == 16384);
  s = {};
  codegen::reduction_geometry(s, 100000, 7, 0, 132);  // short rows: a warp each
  CHECK(s.strategy == ReductionStrategy::inner_warp);
  s = {};
  s.strategy = ReductionStrategy::outer;
  s.vector_width = 4;
  g = codegen::reduction_geometry(s, 16384, 16384, 0, 132);  // columns, split over rows
  CHECK(s.split == 1);
  CHECK(g.block_x == 32);  // a warp reads 32 float4 of a row: 512 contiguous bytes
  CHECK(g.block_y == 8);
  CHECK(g.grid_x == 16384 / 4 / 32);
  CHECK(g.grid_y > 1);
  s = {};
  s.strategy = ReductionStrategy::outer;
  s.vector_width = 4;
  g = codegen::reduction_geometry(s, 16, 1 << 20, 0, 132);  // 16 columns: 4 groups, tall blocks
  CHECK(g.block_x == 4);
  CHECK(g.block_y == 64);
  CHECK(g.grid_x == 1);
  CHECK(g.grid_y > 1000);
  CHECK(g.partials == std::int64_t(g.grid_y) * 16);
  s = {};
  s.strategy = ReductionStrategy::outer;
  s.vector_width = 4;
  g = codegen::reduction_geometry(s, 1 << 20, 16, 0, 132);  // short columns: a thread each
  CHECK(g.block_y == 1);
  CHECK(g.block_x == 256);
  s = {};
  s.red_contiguous = 1;
  s.vector_width = 4;
  g = codegen::reduction_geometry(s, 1 << 20, 16, 0, 132);  // rows of 16: 1 lane of float4 x 4
  CHECK(s.strategy == ReductionStrategy::inner_warp);
  CHECK(g.block_x == 1);
  CHECK(g.block_y == 256);
  s = {};
  s.red_contiguous = 1;
  s.vector_width = 4;
  g = codegen::reduction_geometry(s, 1 << 14, 2048, 0, 132);  // rows of 2048: 32 lanes
  CHECK(s.strategy == ReductionStrategy::inner_warp);
  CHECK(g.block_x == 32);
  CHECK(g.block_y == 8);
}

namespace {

void compile_all(const ReductionKernel& k, const aot_target& t) {
  for (const auto& req : k.compile_requests(t, 90)) {
    INFO(req.source);
    CHECK_NOTHROW(cache::compile_cached(req));
  }
}

}  // namespace

TEST_CASE("every reduction strategy compiles for sm_90 for every dtype class", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "kiln_test_sum");
  ReductionKernel max("T x", "T y", "x", "a > b ? a : b", "y = a", "", "kiln_test_max");
  for (dtype t :
       {bool_, int8, int64, uint16, float16, bfloat16, float32, float64, complex64, complex128}) {
    INFO(t.name());
    compile_all(sum, {.dtypes = {t}, .max_ndim = 1, .index64 = false});
    if (!t.is_complex()) compile_all(max, {.dtypes = {t}, .max_ndim = 1, .index64 = false});
  }
  compile_all(sum, {.dtypes = {float32}, .max_ndim = 3, .index64 = true});
}

TEST_CASE("CuPy's ReductionKernel pitfalls compile on every strategy", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  // An output name and _in_ind.size() inside other identifiers; several post_map statements;
  // a struct reduce type from the preamble; a scalar and a raw input; -D options reach it.
  ReductionKernel k("T x, float64 scale, raw T w", "T y, int64 count",
                    "pair_t{(double)x * scale + (double)w[0] * 0 + MY_BIAS, 1}",
                    "pair_t{a.s + b.s, a.n + b.n}",
                    "double my_y = a.s / (double)_in_ind.size() * _out_ind.size();\n"
                    "y = (T)my_y;\ncount = a.n",
                    "pair_t{0, 0}", "kiln_test_pairs",
                    {.reduce_type = "pair_t",
                     .preamble = "struct pair_t { double s; long long n; };\n"
                                 "__device__ double my_y_helper(double v) { return v; }",
                     .options = {"-DMY_BIAS=0"}});
  compile_all(k, {.dtypes = {float32, float64, float32}, .max_ndim = 2, .index64 = true});
  ReductionKernel argmax(
      "T x", "int64 y", "arg_t{(double)x, (long long)_J}",
      "(b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a", "y = a.i", "", "kiln_test_argmax",
      {.reduce_type = "arg_t", .preamble = "struct arg_t { double v; long long i; };"});
  compile_all(argmax, {.dtypes = {int16}, .max_ndim = 2, .index64 = false});
}

TEST_CASE("reduction compile errors point at the user's own strings", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  auto spec = ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "k")
                  .specs({.dtypes = {float32}, .max_ndim = 1})
                  .front();
  ReductionKernel bad_map("T x", "T y", "x +* 2", "a + b", "y = a", "0", "k");
  CHECK_THROWS_WITH(bad_map.compile_for(spec, 90), Catch::Contains("map_expr(1)"));
  ReductionKernel bad_reduce("T x", "T y", "x", "a + undefined_thing", "y = a", "0", "k");
  CHECK_THROWS_WITH(bad_reduce.compile_for(spec, 90), Catch::Contains("reduce_expr(1)"));
  ReductionKernel bad_post("T x", "T y", "x", "a + b", "y = a;\ny = nope", "0", "k");
  CHECK_THROWS_WITH(bad_post.compile_for(spec, 90), Catch::Contains("post_map_expr(2)"));
  // A string that stops short: the error is where kiln closes it, still the user's line.
  ReductionKernel truncated("T x", "T y", "x +", "a + b", "y = a", "0", "k");
  CHECK_THROWS_WITH(truncated.compile_for(spec, 90),
                    Catch::Contains("map_expr(1): error") && !Catch::Contains("k.cu("));
  ReductionKernel truncated_reduce("T x", "T y", "x", "a +\n", "y = a", "0", "k");
  CHECK_THROWS_WITH(truncated_reduce.compile_for(spec, 90),
                    Catch::Contains("reduce_expr(1): error"));
  ReductionKernel commented("T x", "T y", "x // the input", "a + b // sum", "y = a // out",
                            "0 // zero", "k");
  CHECK(commented.compile_for(spec, 90).cubin.size() > 64);  // closing text is not commented out
}

namespace {

using test::untouched;

// The plan of k(inputs..., out) reducing the axes of `mask` (default: the last axis).
codegen::ReductionSpec plan_of(const ReductionKernel& k, std::vector<kernel_arg> args,
                               std::uint64_t mask = 0) {
  const launch_options defaults{};  // kernel_arg refers to it: it must outlive the binding
  args.emplace_back(defaults);
  detail::KernelCall c(k.definition());
  const auto bound = detail::take_launch_options(c, args);
  detail::check_argument_count(c, bound);
  detail::bind_arguments(c, bound);
  detail::decide_loop_shape(c, false);
  detail::ReductionPlan plan;
  detail::plan_reduction(c, mask ? mask : std::uint64_t(1) << (c.shape.size() - 1), false, 132,
                         plan);
  return plan.spec;
}

}  // namespace

TEST_CASE("every plan of a random reduction is among the ahead-of-time specs of its dtypes",
          "[ops]") {
  // As for elementwise kernels (kiln-cache precompiles specs()): seeded draws of 1-4-D inputs,
  // plain, permuted or sliced (steps and reversals), over random axis sets, a second input
  // that broadcasts against the first (a weighted sum) or none, every dtype class.
  const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "aot_random_sum");
  const ReductionKernel dot("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "aot_random_dot");
  const dtype types[] = {float32, float16, bfloat16, float64, int8, complex64};
  std::mt19937_64 g(20261202);
  auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(g)); };
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(g) < p; };
  std::map<std::string, std::set<std::string>> listed;
  int missing = 0;
  for (int draw = 0; draw < 1500; ++draw) {
    const dtype t = types[pick(6)];
    const int nd = 1 + pick(4);
    const Shape s = test::random_shape(g, nd, chance(0.1) ? 3e9 : chance(0.5) ? 2e7 : 3e5);
    std::uint64_t mask = 0;
    for (int d = 0; d < nd; ++d)
      if (chance(0.5)) mask |= std::uint64_t(1) << d;
    if (mask == 0) mask = std::uint64_t(1) << pick(nd);
    Shape kept;
    for (int d = 0; d < nd; ++d)
      if (!((mask >> d) & 1)) kept.push_back(s[d]);
    const ndarray x =
        chance(0.6) ? test::random_view(g, s, t, chance(0.5), chance(0.5)) : test::untouched(s, t);
    const bool two = chance(0.3);
    const ndarray w = test::untouched(test::broadcast_shape(g, s, 0.3), t);
    const ndarray y = test::untouched(kept, t);
    const ReductionKernel& k = two ? dot : sum;
    const std::string name = fmt::format("{} {}", k.name(), t.name());
    auto& keys = listed[name];
    if (keys.empty())
      for (const auto& spec :
           k.specs({.dtypes = two ? std::vector<dtype>{t, t, t} : std::vector<dtype>{t, t},
           .max_ndim = 4}))
        keys.insert(test::spec_key(spec));
    const auto plan = two ? plan_of(k, {x, w, y}, mask) : plan_of(k, {x, y}, mask);
    if (keys.count(test::spec_key(plan))) continue;
    if (++missing > 5) continue;  // the first few name their layouts
    INFO("draw " << draw << ", " << name << " over mask " << mask << "; x " << test::describe(x)
                 << (two ? "; w " + test::describe(w) : std::string()));
    CHECK(keys.count(test::spec_key(plan)) == 1);
  }
  CHECK(missing == 0);
}

TEST_CASE("rows that whole vectors do not tile are peeled to 16-byte vectors", "[ops]") {
  ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "plan_peel_sum");
  ReductionKernel dot("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "plan_peel_dot");
  // Rows of 4096 floats: whole aligned vectors, as before.
  auto aligned = plan_of(sum, {untouched({64, 4096}), untouched({64})});
  CHECK((aligned.red_contiguous == 1 && aligned.vector_width == 4));
  // Rows of 18631 floats (a row stride off 16 bytes): vectors from each row's boundary.
  auto odd = plan_of(sum, {untouched({3602, 18631}), untouched({3602})});
  CHECK((odd.red_contiguous == 2 && odd.vector_width == 4));
  // float16 and float64 rows, and a view that starts one element in.
  auto half = plan_of(sum, {untouched({100, 9001}, float16), untouched({100}, float16)});
  CHECK((half.red_contiguous == 2 && half.vector_width == 8));
  auto dbl = plan_of(sum, {untouched({100, 3001}, float64), untouched({100}, float64)});
  CHECK((dbl.red_contiguous == 2 && dbl.vector_width == 2));
  const ndarray wide = untouched({64, 4097});
  auto shifted = plan_of(sum, {wide(all, slice(1, std::nullopt)), untouched({64})});
  CHECK((shifted.red_contiguous == 2 && shifted.vector_width == 4));
  // Two inputs may sit differently against 16 bytes; rows shorter than a block's worth of
  // vectors (1024) keep narrower loads: unpeeled.
  auto two = plan_of(dot, {untouched({64, 18631}), untouched({64, 18631}), untouched({64})});
  CHECK(two.red_contiguous == 1);
  CHECK(two.vector_width == 1);
  // Shorter rows, and several reduced dims (runs): unpeeled, read in 16-byte windows.
  auto short_rows = plan_of(sum, {untouched({64, 4001}), untouched({64})});
  CHECK((short_rows.red_contiguous == 3 && short_rows.vector_width == 4));
  const ndarray runs = untouched({8, 5, 9010})(all, all, slice(0, 9001));
  auto two_runs = plan_of(sum, {runs, untouched({8})}, 6);
  CHECK(two_runs.red_ndim == 2);
  CHECK((two_runs.red_contiguous == 3 && two_runs.vector_width == 4));
}

TEST_CASE("runs that whole vectors do not tile are read in 16-byte windows", "[ops]") {
  ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "plan_window_sum");
  ReductionKernel dot("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "plan_window_dot");
  // Batch statistics of NCHW with 7 x 7 planes: runs of 49 elements, 16 bytes a window, for
  // elements of 4 bytes or less (8-byte ones keep one load per element: bound by memory).
  for (dtype t : {int8, float16, bfloat16, float32, float64, complex64}) {
    INFO(t.name());
    auto nchw = plan_of(sum, {untouched({8, 64, 7, 7}, t), untouched({64}, t)}, 0b1101);
    CHECK(nchw.strategy != codegen::ReductionStrategy::outer);
    CHECK(nchw.red_ndim == 2);
    CHECK(nchw.red_contiguous == (t.itemsize() <= 4 ? 3 : 1));
    CHECK(nchw.vector_width == (t.itemsize() <= 4 ? 16 / t.itemsize() : 1));
  }
  // Runs of 49 float16 under 12 rows: a period of 588 elements, past a folded block's 512
  // (under 8 rows: folded, below).
  auto f16 =
      plan_of(sum, {untouched({354, 480, 12, 49}, float16), untouched({12}, float16)}, 0b1011);
  CHECK((f16.red_contiguous == 3 && f16.vector_width == 8 && f16.split == 1));
  // Rows of 123 floats starting an element in: windows; whole aligned vectors stay vectors.
  const ndarray rows = untouched({5000, 124});
  auto odd = plan_of(sum, {rows(all, slice(1, std::nullopt)), untouched({5000})});
  CHECK((odd.red_contiguous == 3 && odd.vector_width == 4));
  auto aligned = plan_of(sum, {untouched({64, 7, 8}), untouched({64})}, 0b110);
  CHECK((aligned.red_contiguous == 1 && aligned.vector_width == 4));
  // Where narrower vectors load as few times (runs of 12 float16: 3 windows or 3 8-byte
  // vectors), runs shorter than a window, two inputs, complex128: no windows.
  const ndarray twelve_runs = untouched({64, 5, 16}, float16)(all, all, slice(0, 12));
  auto twelve = plan_of(sum, {twelve_runs, untouched({64}, float16)}, 0b110);
  CHECK((twelve.red_contiguous == 1 && twelve.vector_width == 4));
  const ndarray three_runs = untouched({64, 5, 4})(all, all, slice(0, 3));
  auto three = plan_of(sum, {three_runs, untouched({64})}, 0b110);
  CHECK((three.red_ndim == 2 && three.red_contiguous == 1));
  auto two = plan_of(dot, {untouched({64, 5, 49}), untouched({64, 5, 49}), untouched({64})}, 0b110);
  CHECK(two.red_contiguous == 1);
  auto c128 =
      plan_of(sum, {untouched({64, 5, 49}, complex128), untouched({64}, complex128)}, 0b110);
  CHECK(c128.red_contiguous == 1);
  // A buffer that ends off a 16-byte granule (memory from elsewhere: kiln's own buffers are
  // whole granules): the last run's window would pass its end, so no windows; a view that
  // stops a granule short of the end keeps them.
  const ndarray ragged = untouched({3, 5, 7002}, int8);  // 105030 bytes
  auto to_end = plan_of(sum, {ragged(all, all, slice(0, 7001)), untouched({3}, int8)}, 0b110);
  CHECK((to_end.red_ndim == 2 && to_end.red_contiguous == 1));
  auto short_of_end = plan_of(sum, {ragged(all, all, slice(0, 6980)), untouched({3}, int8)}, 0b110);
  CHECK((short_of_end.red_contiguous == 3 && short_of_end.vector_width == 16));
}

TEST_CASE("reductions over runs in 16-byte windows compile on every inner strategy", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "kiln_test_window_sum");
  // The map reads the element's position along the row (argmax's _J).
  ReductionKernel picked("T x", "T y", "_J % 7 == 3 ? x : T(0)", "a + b", "y = a", "0",
                         "kiln_test_window_picked");
  int windows = 0;
  for (dtype t : {int8, float16, bfloat16, float32, float64}) {
    for (const auto& s : sum.specs({.dtypes = {t}, .max_ndim = 3, .index64 = false}))
      if (s.red_contiguous == 3) {
        ++windows;
        CHECK(s.vector_width == 16 / t.itemsize());
        INFO(t.name());
        CHECK_NOTHROW(cache::compile_cached(sum.compile_request(s, 90)));
      }
  }
  // 4 dtypes of at most 4 bytes; (output, reduced) dims (1, 1), (1, 2), (1, 3), (2, 1),
  // (2, 2), (3, 1); warp / block / split.
  CHECK(windows == 4 * 6 * 3);
  int picks = 0;
  for (const auto& s : picked.specs({.dtypes = {float32}, .max_ndim = 2, .index64 = true}))
    if (s.red_contiguous == 3) {
      ++picks;
      CHECK_NOTHROW(cache::compile_cached(picked.compile_request(s, 90)));
    }
  CHECK(picks == 3 * 3 * 2);  // 3 dims pairs, 3 strategies, 32- and 64-bit indices
}

TEST_CASE("peeled row reductions compile on every inner strategy", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "kiln_test_peel_sum");
  int peeled = 0;
  for (dtype t : {int8, float16, float32, float64}) {
    for (const auto& s : sum.specs({.dtypes = {t}, .max_ndim = 2, .index64 = false}))
      if (s.red_contiguous == 2) {
        ++peeled;
        CHECK(s.vector_width == 16 / t.itemsize());
        CHECK(s.red_ndim == 1);
        INFO(t.name());
        CHECK_NOTHROW(cache::compile_cached(sum.compile_request(s, 90)));
      }
  }
  CHECK(peeled == 4 * 2 * 3);  // 4 dtypes, output dims 1 and 2, warp / block / split
}

TEST_CASE("dense inputs whose outer reduced axis wraps a short period are streamed flat", "[ops]") {
  ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "plan_folded_sum");
  ReductionKernel dot("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "plan_folded_dot");
  // Columns that whole vectors do not tile (rows of 61 float32, 37 float64, 5 int8), runs of
  // 49 float16 under 8 rows: one flat run of 16-byte vectors.
  struct Case {
    Shape shape;
    dtype t;
    std::uint64_t mask;
  };
  for (const Case& c : {Case{{1101277, 61}, float32, 0b01}, Case{{100001, 37}, float64, 0b01},
                        Case{{100003, 5}, int8, 0b01}, Case{{354, 480, 8, 49}, float16, 0b1011},
                        Case{{5001, 3, 7}, float32, 0b101}}) {
    INFO(c.shape.str() << " " << c.t.name());
    const auto out = reduced_shape(c.shape, c.mask, false);
    auto s = plan_of(sum, {untouched(c.shape, c.t), untouched(out, c.t)}, c.mask);
    CHECK(s.strategy == ReductionStrategy::folded);
    CHECK(s.vector_width == 16 / c.t.itemsize());
    CHECK(s.split == 1);
  }
  // Not folded: whole vectors already tile the columns, the period is past 512 elements (NCHW
  // 7 x 7 planes of 64 channels), a kept axis outside the reduced ones, two inputs, a view
  // that is not dense, too few elements for a fold unit of blocks.
  CHECK(plan_of(sum, {untouched({1 << 20, 16}), untouched({16})}, 0b01).strategy ==
        ReductionStrategy::outer);
  CHECK(plan_of(sum, {untouched({512, 64, 7, 7}), untouched({64})}, 0b1101).strategy !=
        ReductionStrategy::folded);
  CHECK(plan_of(sum, {untouched({4000, 61, 7}), untouched({4000, 7})}, 0b010).strategy !=
        ReductionStrategy::folded);
  CHECK(plan_of(dot, {untouched({100000, 61}), untouched({100000, 61}), untouched({61})}, 0b01)
            .strategy != ReductionStrategy::folded);
  const ndarray wide = untouched({100000, 62});
  CHECK(plan_of(sum, {wide(all, slice(0, 61)), untouched({61})}, 0b01).strategy !=
        ReductionStrategy::folded);
  CHECK(plan_of(sum, {untouched({300, 61}), untouched({61})}, 0b01).strategy !=
        ReductionStrategy::folded);
  // The grid: a multiple of the fold unit (61 blocks step 61 * 512 elements), half the blocks
  // that fit; partials of every block and of every group of about sqrt(blocks), a counter per
  // group and one for the last merge.
  codegen::ReductionSpec spec;
  spec.strategy = ReductionStrategy::folded;
  spec.vector_width = 4;
  auto g = codegen::folded_geometry(spec, 61, 61, std::int64_t(61) * 1101277, 132);
  REQUIRE(g.fold_unit == 61);
  CHECK(spec.split == 1);
  CHECK(g.block == 128);
  CHECK(g.grid_x % 61 == 0);
  codegen::balance_parts(g, spec, 61, 12, 132);
  CHECK(g.grid_x == 61 * (12 * 132 / 2 / 61));
  const std::int64_t group = codegen::fold_group(g.grid_x);
  CHECK(group * group >= g.grid_x);
  CHECK((group - 1) * (group - 1) < g.grid_x);
  const std::int64_t groups = (g.grid_x + group - 1) / group;
  CHECK(g.partials == (g.grid_x + groups) * 61);
  CHECK(g.counters == groups + 1);
  // 392 = 8 * 49: 49 blocks of 512 positions make whole periods.
  spec.vector_width = 8;
  CHECK(codegen::folded_geometry(spec, 8, 392, 392 * 169920, 132).fold_unit == 49);
  // A period of 509 (prime) needs 509 blocks a step: more than a wave of 64-thread blocks
  // (32 an SM) on 4 SMs.
  CHECK(codegen::folded_geometry(spec, 509, 509, 509 * 100000, 4).fold_unit == 0);
}

TEST_CASE("folded reductions compile for sm_90 with maps that read positions", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  ReductionKernel picked("T x", "T y", "_J % 7 == 3 ? x : T(_i)", "a + b", "y = a", "0",
                         "kiln_test_folded_picked");
  ReductionKernel max("T x", "T y", "x", "a > b ? a : b", "y = a", "", "kiln_test_folded_max");
  int folded = 0;
  for (const auto* k : {&picked, &max})
    for (dtype t : {int8, float16, float32, float64})
      for (const auto& s : k->specs({.dtypes = {t}, .max_ndim = 3, .index64 = false}))
        if (s.strategy == ReductionStrategy::folded) {
          ++folded;
          CHECK(s.vector_width == 16 / t.itemsize());
          INFO(t.name() << " out " << int(s.out_ndim) << " red " << int(s.red_ndim));
          CHECK_NOTHROW(cache::compile_cached(k->compile_request(s, 90)));
        }
  CHECK(folded == 2 * 4 * 6);  // (output, reduced) dims pairs up to 3 dims in all
}
