// Lazy reductions (lazy_expr, kiln::fuse): what the planner builds for softmax, layer norm and
// statistics, the row layouts it accepts, and every new kernel (row kernels, composite
// reductions, var_mean) compiled by NVRTC for sm_90. No GPU: trees are built over arrays with
// no memory, and nothing here is evaluated.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>

#include "kiln/cache/compile_cache.hpp"
#include "kiln/engine/fused_reduction.hpp"
#include "kiln/engine/row_kernel.hpp"
#include "kiln/kiln.hpp"
#include "rows/row_plan.hpp"
#include "support/random_layouts.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

// An array view with no memory: trees and plans read only its shape, strides and address.
ndarray no_memory(const Shape& s, dtype t) {
  return ndarray(nullptr, s, c_strides(s, std::int64_t(t.itemsize())), 0, t);
}

// The dtypes of a row kernel's parameters and which are scalars, from its leaves.
aot_target row_target(const expr& e, dtype out) {
  aot_target t;
  const auto leaves = aot::row_kernel_leaves(e);
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    if (leaves[k].is_array()) {
      t.dtypes.push_back(leaves[k].array().dtype());
    } else {
      t.dtypes.push_back(aot::row_kernel(e)->definition().params[k].fixed);
      t.scalar_inputs.push_back(int(k));
    }
  }
  t.dtypes.push_back(out);
  t.max_ndim = 1;
  t.index64 = false;
  return t;
}

void compile_some(const RowKernel& k, const aot_target& t) {
  const auto specs = k.specs(t);
  REQUIRE(!specs.empty());
  // Both ends of the enumeration (narrow group, wide block) and one in the middle, and rows
  // held partly in shared memory: each vector width, with the fewest and the most vectors a
  // thread in registers.
  std::vector<std::size_t> some{0, specs.size() / 2, specs.size() - 1};
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].shared && specs[i].cluster == 1 && specs[i].out_ndim == 1 &&
        specs[i].index_bits == 32 && (specs[i].items == 1 || specs[i].items == 4))
      some.push_back(i);
  CHECK(some.size() > 3);
  for (std::size_t i : some) {
    const auto req = k.compile_request(specs[i], 90);
    INFO(req.source);
    CHECK_NOTHROW(cache::compile_cached(req));
  }
  // Held rows copy with cp.async from sm_80 on and through registers before it.
  const auto before = k.compile_request(specs[some.back()], 75);
  INFO(before.source);
  CHECK_NOTHROW(cache::compile_cached(before));
}

// An H200's 132 SMs, 50 MiB of L2, 228 KiB of shared memory an SM (227 KiB a block) and
// clusters of up to 8 blocks; the same GPU without clusters (as GPUs before sm_90 plan).
constexpr detail::RowDevice kH200{132, std::int64_t(50) << 20, 233472, 232448, 8};
constexpr detail::RowDevice kNoClusters{132, std::int64_t(50) << 20, 233472, 232448, 1};

bool plan(const Shape& loop, std::uint64_t mask, std::vector<ndarray> arrays, int nin,
          detail::RowPlan& p, const detail::RowDevice& gpu = kH200) {
  std::vector<const ndarray*> ptrs;
  std::vector<dtype> types;
  for (const auto& a : arrays) ptrs.push_back(&a), types.push_back(a.dtype());
  return detail::plan_rows(loop, mask, ptrs, types, nin, {int(arrays[0].itemsize()), 0}, gpu, p);
}

}  // namespace

TEST_CASE("softmax, log-softmax and layer norm plan as one row kernel that compiles for sm_90",
          "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const ndarray a = no_memory({64, 4096}, float32);
  const auto x = lazy(a);
  const auto e = exp(x - max(x, -1, true));
  const lazy_expr softmax = e / sum(e, -1, true);
  const RowKernel* k = aot::row_kernel(softmax);
  REQUIRE(k);
  CHECK(k->definition().nphases == 2);  // max, then the sum that reads it
  CHECK(k->mask() == 0b10);
  compile_some(*k, row_target(softmax, float32));
  {  // exp(x - max) is computed once per element: the sum phase keeps it for the outputs, in
     // x's registers (the outputs read no x), so every spec keeps it
    const auto t = row_target(softmax, float32);
    const auto specs = k->specs(t);
    std::size_t kept = 0, in_x = 0, held = 0;
    std::size_t in_shared = 0;
    for (const auto& sp : specs) {
      if (sp.items == 0) continue;  // streamed: nothing stays in registers
      if (sp.shared) {  // rows partly in shared memory compute exp again for the outputs
        const std::string src = k->source(sp);
        const std::size_t out = src.find("kiln_s0[kiln_k] = ");
        REQUIRE(out != std::string::npos);
        CHECK(src.substr(out, src.find('\n', out) - out).find("exp(") != std::string::npos);
        ++in_shared;
        continue;
      }
      ++held;
      const std::string src = k->source(sp);
      const std::size_t out = src.find("kiln_s0[kiln_k] = ");
      REQUIRE(out != std::string::npos);
      if (src.substr(out, src.find('\n', out) - out).find("exp(") != std::string::npos) continue;
      ++kept;
      if (src.find("kiln_c_0[kiln_i][kiln_k] = kiln_cast<float>(exp(") != std::string::npos) ++in_x;
    }
    CHECK(held > 0);
    CHECK(in_shared > 0);
    CHECK(kept == held);
    CHECK(in_x == held);
  }
  {  // Outputs that still read x: kept values of their own, up to 64 bytes a thread.
    const lazy_expr weighted = x * e / sum(e, -1, true);
    const RowKernel* w = aot::row_kernel(weighted);
    REQUIRE(w);
    int checked = 0;
    for (const auto& sp : w->specs(row_target(weighted, float32))) {
      if (sp.vector_width != 4 || (sp.items != 4 && sp.items != 8) || sp.shared) continue;
      const bool keeps = w->source(sp).find("kiln_x1[kiln_i][kiln_k] = ") != std::string::npos;
      CHECK(keeps == (sp.items == 4));
      ++checked;
    }
    CHECK(checked > 0);
    compile_some(*w, row_target(weighted, float32));
  }

  const lazy_expr log_softmax =
      (x - max(x, -1, true)) - log(sum(exp(x - max(x, -1, true)), -1, true));
  const RowKernel* ls = aot::row_kernel(log_softmax);
  REQUIRE(ls);
  compile_some(*ls, row_target(log_softmax, float32));

  const ndarray g = no_memory({4096}, float32), b = no_memory({4096}, float32);
  const lazy_expr norm = (x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g + b;
  const RowKernel* ln = aot::row_kernel(norm);
  REQUIRE(ln);
  // var inside a row is NumPy's two passes over the registers: the mean (shared with the
  // numerator's, planned once), then the sum of squared deviations that reads it.
  CHECK(ln->definition().nphases == 2);
  CHECK(ln->definition().reductions.size() == 2);
  compile_some(*ln, row_target(norm, float32));

  // float16 rows (computed in float32) and float64 rows compile too.
  for (dtype t : {float16, float64}) {
    const auto y = lazy(no_memory({8, 300}, t));
    const lazy_expr s = exp(y - max(y, -1, true)) / sum(exp(y - max(y, -1, true)), -1, true);
    const RowKernel* r = aot::row_kernel(s);
    REQUIRE(r);
    compile_some(*r, row_target(s, s.dtype()));
  }
}

TEST_CASE("row kernels divide by a row's value through a reciprocal once a row", "[ops]") {
  const auto x = lazy(no_memory({64, 4096}, float32));
  const auto g = lazy(no_memory({4096}, float32));
  auto divides_by_row = [](const lazy_expr& e) {
    const RowKernel* k = aot::row_kernel(e);
    REQUIRE(k);
    const std::string& out = k->definition().outputs[0];
    INFO(out);
    CHECK(out.find('/') == std::string::npos);  // every division of the output is by the row
    return out.find("kiln_div_row(") != std::string::npos && k->definition().divisors.size() == 1 &&
           k->definition().preamble.find("struct kiln_row_divisor") != std::string::npos;
  };
  const auto e = exp(x - max(x, -1, true));
  CHECK(divides_by_row(e / sum(e, -1, true)));
  CHECK(divides_by_row((x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g));
  CHECK(divides_by_row((x - max(x, -1, true)) / 3.0f));  // a scalar is one value a row too

  // Divisors that change along the row, and float64 rows, divide as written.
  const RowKernel* along = aot::row_kernel(x / (g + sum(x, -1, true)));
  REQUIRE(along);
  CHECK(along->definition().outputs[0].find("kiln_div_row(") == std::string::npos);
  CHECK(along->definition().outputs[0].find(" / ") != std::string::npos);
  const auto y = lazy(no_memory({64, 300}, float64));
  const RowKernel* wide = aot::row_kernel(y / sum(y, -1, true));
  REQUIRE(wide);
  CHECK(wide->definition().outputs[0].find("kiln_div_row(") == std::string::npos);
}

TEST_CASE("reductions over other axes or without keepdims do not plan as rows", "[ops]") {
  const auto x = lazy(no_memory({64, 256, 8}, float32));
  CHECK(aot::row_kernel(x - mean(x, 1, true)));       // a middle axis is a row too
  CHECK(aot::row_kernel(x - mean(x, {0, 2}, true)));  // several axes
  CHECK(aot::row_kernel(x / sum(x)));                 // every axis, 0-d
  CHECK_FALSE(aot::row_kernel(x - mean(x, -1, true) + max(x, 0, true)));  // two axis sets
  CHECK_FALSE(aot::row_kernel(mean(x, -1) + 1));  // no keepdims: a smaller output
  CHECK_FALSE(aot::row_kernel(x * 2));            // no reduction
}

TEST_CASE("the row planner takes rows of unit or broadcast steps that fit a block", "[ops]") {
  detail::RowPlan p;
  // softmax rows of 4096 float32: a block of 128 lanes, 8 float4 each (more of a row in
  // flight per thread than 256 lanes of 4).
  REQUIRE(plan({16384, 4096}, 0b10,
               {no_memory({16384, 4096}, float32), no_memory({16384, 4096}, float32)}, 1, p));
  CHECK(p.spec.vector_width == 4);
  CHECK(p.spec.items == 8);
  CHECK(p.spec.group == 0);
  CHECK(p.spec.wide == 0);
  CHECK(p.lanes == 128);
  CHECK(p.m == 16384);
  CHECK(p.n == 4096);
  // Rows of 16384: 512 lanes of 8 float4 each.
  REQUIRE(plan({64, 16384}, 0b10,
               {no_memory({64, 16384}, float32), no_memory({64, 16384}, float32)}, 1, p));
  CHECK(p.lanes == 512);
  CHECK(p.spec.items == 8);
  CHECK(p.spec.wide == 1);  // two such blocks per SM
  // Short rows: groups of lanes, several rows per block.
  REQUIRE(plan({100000, 64}, 0b10,
               {no_memory({100000, 64}, float32), no_memory({100000, 64}, float32)}, 1, p));
  CHECK(p.spec.group == 1);
  CHECK(p.lanes == 4);
  CHECK(p.rows_per_block == 64);
  CHECK(p.spec.items == 4);
  // A broadcast input (g of layer norm) moves along the row; a per-row input does not.
  REQUIRE(plan({512, 1024}, 0b10,
               {no_memory({512, 1024}, float32), no_memory({1024}, float32),
                no_memory({512, 1}, float32), no_memory({512, 1024}, float32)},
               3, p));
  CHECK(p.strides[1][1] == 4);
  CHECK(p.strides[2][1] == 0);
  // Rows longer than a block's registers hold (a vocabulary of 32000 float32), with rows
  // enough for two blocks per SM: wide blocks, 4 float4 a thread in registers and the rest of
  // the row (5952 vectors: 12 a thread) in shared memory, 96 KiB a block.
  REQUIRE(plan({2097, 32000}, 0b10,
               {no_memory({2097, 32000}, float32), no_memory({2097, 32000}, float32)}, 1, p));
  CHECK(p.spec.items == 4);
  CHECK(p.spec.shared == 1);
  CHECK(p.shared_bytes == 12 * 512 * 16);
  CHECK(p.spec.wide == 1);
  CHECK(p.spec.group == 0);
  CHECK(p.lanes == 512);
  CHECK(p.spec.vector_width == 4);
  CHECK(p.grid == 2097);
  // Three leaves the phases read (12 bytes an element), rows of 16384: 4 vectors a thread in
  // registers (48 registers), the other 4 of each leaf in shared memory, 96 KiB a block.
  {
    const std::vector<ndarray> three{no_memory({300, 16384}, float32), no_memory({300, 1}, float32),
                                     no_memory({16384}, float32), no_memory({300, 16384}, float32)};
    std::vector<const ndarray*> ptrs;
    std::vector<dtype> types;
    for (const auto& a : three) ptrs.push_back(&a), types.push_back(a.dtype());
    REQUIRE(detail::plan_rows({300, 16384}, 0b10, ptrs, types, 3, {12, 0}, kH200, p));
    CHECK(p.spec.shared == 1);
    CHECK(p.spec.items == 4);
    CHECK(p.shared_bytes == 4 * 512 * 16 * 3);
  }
  // Rows of 36000: past half an SM's shared memory (14 vectors a thread, 112 KiB), streamed
  // where L2 holds the rows two blocks per SM work on (38 MB of 50 MiB's three quarters).
  REQUIRE(plan({600, 36000}, 0b10,
               {no_memory({600, 36000}, float32), no_memory({600, 36000}, float32)}, 1, p));
  CHECK(p.spec.items == 0);
  CHECK(p.spec.shared == 0);
  // Shorter rows keep to registers and take no shared memory.
  REQUIRE(plan({2097, 16384}, 0b10,
               {no_memory({2097, 16384}, float32), no_memory({2097, 16384}, float32)}, 1, p));
  CHECK(p.spec.shared == 0);
  CHECK(p.shared_bytes == 0);
  // Past half an SM's shared memory (rows of 2^16 float32 need 192 KiB a block): streamed,
  // each phase reading the row again from L2, where the rows two blocks per SM work on fit in
  // it (16 SMs: 8 MiB).
  const detail::RowDevice small{16, std::int64_t(50) << 20, 233472, 232448};
  REQUIRE(plan({64, 1 << 16}, 0b10,
               {no_memory({64, 1 << 16}, float32), no_memory({64, 1 << 16}, float32)}, 1, p,
               small));
  CHECK(p.spec.items == 0);
  CHECK(p.spec.shared == 0);
  CHECK(p.shared_bytes == 0);
  CHECK(p.spec.wide == 1);
  // Rows along a strided axis do not fit; nor long rows too few for two blocks per SM (4, or
  // 263 of 32000), or whose resident rows neither shared memory nor L2 can hold (264 rows of
  // 2^18 float32, 264 MiB), without clusters (rows split over clusters: below).
  CHECK_FALSE(plan({4096, 64}, 0b01,
                   {no_memory({4096, 64}, float32), no_memory({4096, 64}, float32)}, 1, p));
  CHECK_FALSE(plan({4, 1 << 20}, 0b10,
                   {no_memory({4, 1 << 20}, float32), no_memory({4, 1 << 20}, float32)}, 1, p));
  CHECK_FALSE(plan({263, 32000}, 0b10,
                   {no_memory({263, 32000}, float32), no_memory({263, 32000}, float32)}, 1, p,
                   kNoClusters));
  CHECK(plan({264, 32000}, 0b10,
             {no_memory({264, 32000}, float32), no_memory({264, 32000}, float32)}, 1, p));
  CHECK_FALSE(plan({4096, 1 << 18}, 0b10,
                   {no_memory({4096, 1 << 18}, float32), no_memory({4096, 1 << 18}, float32)}, 1, p,
                   kNoClusters));
  // Rows over two axes that merge (the last two of NCHW's H, W) are one row.
  REQUIRE(plan({8, 16, 28, 28}, 0b1100,
               {no_memory({8, 16, 28, 28}, float32), no_memory({8, 16, 28, 28}, float32)}, 1, p));
  CHECK(p.n == 28 * 28);
  CHECK(p.m == 8 * 16);
}

TEST_CASE("rows off their vectors are read in shifted 16-byte windows", "[ops]") {
  using test::untouched;
  detail::RowPlan p;
  // An odd vocabulary of 32001: rows start anywhere against 16 bytes; windows of 4 float32,
  // held in registers and shared memory as aligned rows are (12 windows a thread there). (The
  // input a view of a larger buffer: these test buffers are not whole granules, kiln's are.)
  REQUIRE(plan({2097, 32001}, 0b10,
               {untouched({2098, 32001})(slice(0, 2097)), untouched({2097, 32001})}, 1, p));
  CHECK((p.spec.shifted == 1 && p.spec.vector_width == 4 && p.spec.shared == 1));
  CHECK(p.shared_bytes == 12 * 512 * 16);
  // Odd rows that fit registers, a float16 row of 4095, and lane groups of short rows.
  REQUIRE(plan({16384, 4095}, 0b10, {untouched({16384, 4095}), untouched({16384, 4095})}, 1, p));
  CHECK((p.spec.shifted == 1 && p.spec.vector_width == 4 && p.spec.shared == 0));
  REQUIRE(plan({1000, 4095}, 0b10,
               {untouched({1000, 4095}, float16), untouched({1000, 4095}, float16)}, 1, p));
  CHECK((p.spec.shifted == 1 && p.spec.vector_width == 8));
  REQUIRE(plan({100000, 1001}, 0b10, {untouched({100000, 1001}), untouched({100000, 1001})}, 1, p));
  CHECK((p.spec.shifted == 1 && p.spec.group == codegen::kRowLaneGroup));
  // Rows shorter than 64 windows keep element loads (their partial windows weigh too much).
  REQUIRE(plan({262144, 255}, 0b10, {untouched({262144, 255}), untouched({262144, 255})}, 1, p));
  CHECK((p.spec.shifted == 0 && p.spec.vector_width == 1));
  // An operand that sits otherwise than the output (a view starting one element in; layer
  // norm's weights against odd rows) is read element by element: windows only where rows read
  // by elements would not fit a block's registers (more than 512 lanes of 8).
  const ndarray wide = untouched({512, 8193});
  REQUIRE(
      plan({512, 8192}, 0b10, {wide(all, slice(1, std::nullopt)), untouched({512, 8192})}, 1, p));
  CHECK((p.spec.shifted == 1 && p.spec.vector_width == 4));
  const ndarray narrow = untouched({512, 4097});
  REQUIRE(
      plan({512, 4096}, 0b10, {narrow(all, slice(1, std::nullopt)), untouched({512, 4096})}, 1, p));
  CHECK((p.spec.shifted == 0 && p.spec.vector_width == 1));
  REQUIRE(plan({512, 1023}, 0b10,
               {untouched({512, 1023}), untouched({1024})(slice(0, 1023)), untouched({512, 1}),
                untouched({512, 1023})},
               3, p));
  CHECK(p.spec.shifted == 0);
  REQUIRE(plan({300, 8191}, 0b10,
               {untouched({300, 8191}), untouched({8192})(slice(0, 8191)), untouched({300, 1}),
                untouched({300, 8191})},
               3, p));
  CHECK(p.spec.shifted == 1);
  // Aligned rows keep whole vectors; 8-byte and complex elements, mixed itemsizes along the
  // row, arrays with no buffer of kiln's, and a buffer that ends off a granule do not shift.
  REQUIRE(plan({512, 4096}, 0b10, {untouched({512, 4096}), untouched({512, 4096})}, 1, p));
  CHECK((p.spec.shifted == 0 && p.spec.vector_width == 4));
  for (dtype t : {float64, complex64}) {
    REQUIRE(plan({512, 4095}, 0b10, {untouched({512, 4095}, t), untouched({512, 4095}, t)}, 1, p));
    CHECK(p.spec.shifted == 0);
  }
  REQUIRE(plan({512, 4095}, 0b10, {untouched({512, 4095}, float16), untouched({512, 4095})}, 1, p));
  CHECK(p.spec.shifted == 0);
  REQUIRE(plan({512, 4095}, 0b10, {no_memory({512, 4095}, float32), untouched({512, 4095})}, 1, p));
  CHECK(p.spec.shifted == 0);
  const ndarray ragged = untouched({300, 5001}, int8);  // 1500300 bytes: ends off a granule
  REQUIRE(plan({300, 5001}, 0b10, {ragged, untouched({300, 5001}, int8)}, 1, p));
  CHECK(p.spec.shifted == 0);
  REQUIRE(
      plan({300, 4980}, 0b10, {ragged(all, slice(0, 4980)), untouched({300, 4980}, int8)}, 1, p));
  CHECK((p.spec.shifted == 1 && p.spec.vector_width == 16));
}

TEST_CASE("shifted rows compile for sm_90 on every row shape", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const auto x = lazy(no_memory({64, 4095}, float32));
  const ndarray g = no_memory({4095}, float32), b = no_memory({4095}, float32);
  const auto h = lazy(no_memory({64, 4095}, float16));
  const auto c = lazy(no_memory({64, 4095}, int8));  // windows of 16 elements
  const lazy_expr exprs[] = {exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true),
                             (x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g + b,
                             (h - max(h, -1, true)) - log(sum(exp(h - max(h, -1, true)), -1, true)),
                             c - max(c, -1, true)};
  int shifted = 0;
  for (const lazy_expr& e : exprs) {
    const RowKernel* k = aot::row_kernel(e);
    REQUIRE(k);
    for (const auto& sp : k->specs(row_target(e, e.dtype()))) {
      if (!sp.shifted || sp.cluster != 1 || sp.out_ndim != 1 || sp.index_bits != 32) continue;
      ++shifted;
      CHECK(sp.vector_width == 16 / e.dtype().itemsize());
      const auto req = k->compile_request(sp, 90);
      INFO(req.source);
      CHECK_NOTHROW(cache::compile_cached(req));
    }
  }
  // A group of lanes, a block and a wide block with 1, 2, 4 or 8 windows a thread, a held row
  // with 1, 2 or 4, and a streamed row.
  CHECK(shifted == 4 * 16);
}

TEST_CASE("rows along an outer axis plan as columns, lane groups along the strided rows", "[ops]") {
  detail::RowPlan p;
  // Channel softmax of NCHW with 21 classes: rows strided by H * W, taken across, four
  // adjacent rows a lane group (a float4 holds an element of each), 4 lanes a group of 8
  // elements each (the fewest lanes holding at most 8), 64 groups a block (H, W merged).
  const Shape nchw{32, 21, 256, 256};
  REQUIRE(plan(nchw, 0b0010, {no_memory(nchw, float32), no_memory(nchw, float32)}, 1, p));
  CHECK(p.spec.group == codegen::kRowColumns);
  CHECK(p.spec.vector_width == 4);
  CHECK(p.spec.items == 8);
  CHECK(p.spec.shared == 0);
  CHECK(p.lanes == 4);
  CHECK(p.rows_per_block == 64);
  CHECK(p.n == 21);
  CHECK(p.m == 32 * 256 * 256 / 4);  // groups of four rows
  CHECK(p.dims[1] == 256 * 256 / 4);
  CHECK(p.strides[0][1] == 16);             // from a group to the next
  CHECK(p.strides[0][2] == 256 * 256 * 4);  // the row's step, in bytes
  CHECK(p.grid == std::uint32_t(32 * 256 * 256 / 4 / 64));
  // Planes of an odd size hold no groups: one row a lane group, 2 lanes of 16.
  const Shape odd{32, 21, 255, 255};
  REQUIRE(plan(odd, 0b0010, {no_memory(odd, float32), no_memory(odd, float32)}, 1, p));
  CHECK(p.spec.group == codegen::kRowColumns);
  CHECK((p.spec.vector_width == 1 && p.spec.items == 16 && p.lanes == 2));
  CHECK(p.m == 32 * 255 * 255);
  // Groups of four that memory does not align (rows of 257 floats, one element in) take
  // pairs where the pairs align, and single rows where nothing does.
  const ndarray wider = no_memory({32, 21, 256, 258}, float32);
  REQUIRE(
      plan(nchw, 0b0010, {wider(all, all, all, slice(0, 256)), no_memory(nchw, float32)}, 1, p));
  CHECK((p.spec.vector_width == 2 && p.lanes == 4 && p.spec.items == 8));
  const ndarray odd_rows = no_memory({32, 21, 256, 257}, float32);
  REQUIRE(plan(nchw, 0b0010,
               {odd_rows(all, all, all, slice(1, std::nullopt)), no_memory(nchw, float32)}, 1, p));
  CHECK(p.spec.vector_width == 1);
  // A per-channel weight (1, C, 1, 1) steps along the row and not across rows.
  const Shape w{1, 21, 1, 1};
  REQUIRE(plan(nchw, 0b0010,
               {no_memory(nchw, float32), no_memory(w, float32), no_memory(nchw, float32)}, 2, p));
  CHECK(p.spec.group == codegen::kRowColumns);
  CHECK(p.strides[1][2] == 4);
  CHECK(p.strides[1][1] == 0);
  // Rows of 5 (log-softmax over axis 0 of (5, 1000)): a lane, 8 elements.
  REQUIRE(
      plan({5, 1000}, 0b01, {no_memory({5, 1000}, float64), no_memory({5, 1000}, float64)}, 1, p));
  CHECK(p.spec.group == codegen::kRowColumns);
  CHECK((p.spec.items == 8 && p.lanes == 1));
  // Rows taken across hold up to 8 elements a lane on up to 4 lanes (32 channels); past that
  // one row a group: lanes up to the itemsize (a warp's access then reads runs of a sector or
  // more), 48 float32 take 4 lanes of 16, 100 float64 8 lanes of 16; 65 float32 or 40 float16
  // (2 lanes) would need more than 16 a lane, and rows whose neighbours are not adjacent in
  // memory (every other column) do not plan either: the passes take them.
  REQUIRE(plan({8, 48, 64}, 0b010,
               {no_memory({8, 48, 64}, float32), no_memory({8, 48, 64}, float32)}, 1, p));
  CHECK((p.spec.group == codegen::kRowColumns && p.spec.items == 16 && p.lanes == 4 &&
         p.spec.vector_width == 1));
  CHECK_FALSE(plan({8, 40, 64}, 0b010,
                   {no_memory({8, 40, 64}, float16), no_memory({8, 40, 64}, float16)}, 1, p));
  REQUIRE(plan({8, 100, 64}, 0b010,
               {no_memory({8, 100, 64}, float64), no_memory({8, 100, 64}, float64)}, 1, p));
  CHECK((p.spec.items == 16 && p.lanes == 8 && p.spec.vector_width == 1));
  CHECK_FALSE(plan({8, 65, 64}, 0b010,
                   {no_memory({8, 65, 64}, float32), no_memory({8, 65, 64}, float32)}, 1, p));
  // The GPU test's shapes take each lane count: 1, 2, 4 and 8.
  auto lanes_of = [&](const Shape& s, dtype t) {
    return plan(s, 0b010, {no_memory(s, t), no_memory(s, t)}, 1, p) &&
                   p.spec.group == codegen::kRowColumns
               ? p.lanes
               : 0;
  };
  CHECK(lanes_of({2, 3, 63}, float16) == 1);
  CHECK(lanes_of({4, 32, 153}, float32) == 2);
  CHECK(lanes_of({3, 64, 205}, float32) == 4);
  CHECK(lanes_of({2, 100, 23}, float64) == 8);
  // The GPU test of rows taken across: its shapes take four, eight and sixteen rows a group
  // (float64 one: 8-byte dtypes never go across).
  auto rows_of = [&](const Shape& s, dtype t) {
    return plan(s, 0b0010, {no_memory(s, t), no_memory(s, t)}, 1, p) &&
                   p.spec.group == codegen::kRowColumns
               ? p.spec.vector_width
               : 0;
  };
  CHECK(rows_of({4, 21, 16, 36}, float32) == 4);
  CHECK(rows_of({3, 32, 5, 44}, float32) == 4);
  CHECK(rows_of({2, 8, 6, 10}, float32) == 4);
  CHECK(rows_of({2, 8, 6, 10}, float64) == 1);
  CHECK(rows_of({2, 24, 4, 16}, float16) == 8);
  CHECK(rows_of({3, 24, 4, 24}, float16) == 8);  // no accumulators counted: see below
  CHECK((p.lanes == 4 && p.spec.items == 8));
  CHECK(rows_of({2, 9, 4, 16}, uint8) == 16);
  CHECK(rows_of({3, 7, 2, 20}, int32) == 4);
  const ndarray rows34 = no_memory({2, 21, 8, 34}, float32);
  REQUIRE(plan({2, 21, 8, 32}, 0b0010,
               {rows34(all, all, all, slice(0, 32)), rows34(all, all, all, slice(0, 32))}, 1, p));
  CHECK((p.spec.group == codegen::kRowColumns && p.spec.vector_width == 2));
  // Channels read backwards (a negative step) are columns too.
  const ndarray fwd = no_memory({3, 10, 222}, float32);
  REQUIRE(plan({3, 10, 222}, 0b010,
               {fwd(all, slice(std::nullopt, std::nullopt, -1)), no_memory({3, 10, 222}, float32)},
               1, p));
  CHECK((p.spec.group == codegen::kRowColumns && p.strides[0][2] == -222 * 4));
  const ndarray wide = no_memory({8, 16, 128}, float32);
  const ndarray every_other = wide(all, all, slice(0, std::nullopt, 2));
  CHECK_FALSE(plan({8, 16, 64}, 0b010, {every_other, no_memory({8, 16, 64}, float32)}, 1, p));
  // Column kernels compile for sm_90 (and sm_75) among the row kernel's specs.
  const auto x = lazy(no_memory(nchw, float32));
  const auto softmax = exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true);
  const RowKernel* k = aot::row_kernel(softmax);
  REQUIRE(k);
  int columns = 0;
  for (const auto& sp : k->specs(row_target(softmax, float32))) {
    if (sp.group != codegen::kRowColumns) continue;
    ++columns;
    if (sp.items != 16 && sp.items != 1) continue;
    for (int arch : {90, 75}) {
      const auto req = k->compile_request(sp, arch);
      INFO(req.source);
      CHECK_NOTHROW(cache::compile_cached(req));
    }
  }
  CHECK(columns == 13);  // 1 to 16 elements a lane of one row, 1 to 8 of two or four rows
  // Rows taken across in every dtype class the planner gives them (not complex), with a
  // ddof and two phases (standardizing) and with an integer maximum: every width compiles.
  for (dtype t : {float16, float32, int32, int8, bool_}) {
    const auto xt = lazy(no_memory({4, 21, 16, 32}, t));
    const expr e = t.is_floating() ? expr((xt - mean(xt, 1, true)) / sqrt(var(xt, 1, true) + 1e-5))
                   : t == bool_    ? expr(xt == max(xt, 1, true))
                                   : expr(xt - max(xt, 1, true));
    const RowKernel* kt = aot::row_kernel(e);
    REQUIRE(kt);
    int across = 0;
    for (const auto& sp : kt->specs(row_target(e, e.dtype()))) {
      if (sp.group != codegen::kRowColumns || sp.vector_width == 1 || sp.items != 8) continue;
      ++across;
      const auto req = kt->compile_request(sp, 90);
      INFO(t.name() << " " << int(sp.vector_width) << "\n" << req.source);
      CHECK_NOTHROW(cache::compile_cached(req));
    }
    CHECK(across == int(std::log2(16 / t.itemsize())));  // widths 16 bytes / itemsize down to 2
  }
  // 8-byte and complex dtypes take one row a group only.
  for (dtype t : {float64, complex64}) {
    const auto xt = lazy(no_memory({4, 21, 16, 32}, t));
    const expr e = xt - mean(xt, 1, true);
    const RowKernel* kt = aot::row_kernel(e);
    REQUIRE(kt);
    for (const auto& sp : kt->specs(row_target(e, e.dtype())))
      CHECK((sp.group != codegen::kRowColumns || sp.vector_width == 1));
  }
}

namespace {

// Plans a row kernel of `e` (its output of `s`) on an H200 with the registers its definition
// keeps (row_registers), as a call would plan it: false where it does not fit one kernel.
bool plans_as_rows(const lazy_expr& e, const Shape& s, std::uint64_t mask, detail::RowPlan& p,
                   bool streamed = false) {
  const RowKernel* k = aot::row_kernel(e, streamed);
  REQUIRE(k);
  const auto leaves = aot::row_kernel_leaves(e, streamed);
  std::vector<const ndarray*> arrays;
  std::vector<dtype> types;
  for (std::size_t j = 0; j < leaves.size(); ++j) {
    arrays.push_back(leaves[j].is_array() ? &leaves[j].array() : nullptr);
    types.push_back(leaves[j].is_array() ? leaves[j].array().dtype()
                                         : k->definition().params[j].fixed);
  }
  const ndarray out = no_memory(s, e.dtype());
  arrays.push_back(&out);
  types.push_back(e.dtype());
  return detail::plan_rows(s, mask, arrays, types, int(leaves.size()),
                           detail::row_registers(k->definition(), arrays, types), kH200, p);
}

}  // namespace

TEST_CASE("rows taken across hold as many rows as their accumulators leave registers for",
          "[ops]") {
  auto standardize = [](const lazy_expr& x) {
    return (x - mean(x, 1, true)) / sqrt(var(x, 1, true) + 1e-5);
  };
  auto softmax = [](const lazy_expr& x) {
    return exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true);
  };
  // Accumulator fields and results a row: max and sum one each; float16 moments (shift, two
  // sums, the first element, a count) and a mean; float32 runs NumPy's two passes (two sums);
  // integers standardize in float64, two registers a field (and never go across: their
  // float64 results are 8 bytes).
  const Shape s{4, 16, 32, 64};
  const auto x16 = lazy(no_memory(s, float16)), x32 = lazy(no_memory(s, float32)),
             x8 = lazy(no_memory(s, uint8));
  CHECK(codegen::row_state_words(aot::row_kernel(softmax(x16))->definition()) == 4);
  CHECK(codegen::row_state_words(aot::row_kernel(standardize(x16))->definition()) == 8);
  CHECK(codegen::row_state_words(aot::row_kernel(standardize(x32))->definition()) == 4);
  CHECK(codegen::row_state_words(aot::row_kernel(standardize(x8))->definition()) == 8);
  // float16 softmax: 8 rows of 8 elements (16 words of halves) and 4 words each: 64, all 8.
  detail::RowPlan p;
  REQUIRE(plans_as_rows(softmax(x16), s, 0b0010, p));
  CHECK((p.spec.group == codegen::kRowColumns && p.spec.vector_width == 8 && p.spec.items == 8));
  // float16 standardizing: 8 rows would take 96 words; 4 take 48.
  REQUIRE(plans_as_rows(standardize(x16), s, 0b0010, p));
  CHECK((p.spec.group == codegen::kRowColumns && p.spec.vector_width == 4 && p.spec.items == 8));
  CHECK(p.lanes == 2);
  // float32 keeps its 4 rows (48 words).
  REQUIRE(plans_as_rows(standardize(x32), s, 0b0010, p));
  CHECK((p.spec.group == codegen::kRowColumns && p.spec.vector_width == 4));
  // The emitter's bound counts the accumulators too: float16 standardizing over 4 channels
  // (4 rows of 4 elements a lane: 8 words of elements, 32 of accumulators) takes 64
  // registers (4 blocks an SM), where its elements alone would have had it take 32.
  const Shape few{4, 4, 32, 64};
  const auto xf = lazy(no_memory(few, float16));
  REQUIRE(plans_as_rows(standardize(xf), few, 0b0010, p));
  REQUIRE((p.spec.group == codegen::kRowColumns && p.spec.vector_width == 4 && p.spec.items == 4));
  const RowKernel* k = aot::row_kernel(standardize(xf));
  CHECK(k->source(p.spec).find("__launch_bounds__(256, 4)") != std::string::npos);
  // Column rows (one row a group) keep the bound their elements give: softmax of 8 float32
  // elements a lane, 8 blocks an SM.
  const ndarray odd = no_memory({4, 8, 32, 65}, float32);
  const auto xo = lazy(odd(all, all, all, slice(0, 63)));
  REQUIRE(plans_as_rows(softmax(xo), {4, 8, 32, 63}, 0b0010, p));
  REQUIRE((p.spec.group == codegen::kRowColumns && p.spec.vector_width == 1 && p.spec.items == 8));
  CHECK(aot::row_kernel(softmax(xo))->source(p.spec).find("__launch_bounds__(256, 8)") !=
        std::string::npos);
}

TEST_CASE("streamed rows run their reductions in one pass each and compile for sm_90", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  // A vocabulary's logits: rows too long for registers and shared memory, read from L2 again
  // each phase. In registers the row forms (a softmax's sum after its max, var as NumPy's two
  // passes) take two phases; streamed, the one-pass reductions take one.
  const Shape s{2048, 36000};
  const auto x = lazy(no_memory(s, float32));
  const lazy_expr softmax = exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true);
  const lazy_expr log_softmax =
      (x - max(x, -1, true)) - log(sum(exp(x - max(x, -1, true)), -1, true));
  const lazy_expr standardize = (x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f);
  for (const lazy_expr* e : {&softmax, &log_softmax, &standardize}) {
    CHECK(aot::row_kernel(*e)->definition().nphases == 2);
    const RowKernel* k = aot::row_kernel(*e, true);
    REQUIRE(k);
    CHECK(k->definition().nphases == 1);
    detail::RowPlan p;
    REQUIRE(plans_as_rows(*e, s, 0b10, p, true));
    CHECK(p.spec.items == 0);  // streamed
    const auto req = k->compile_request(p.spec, 90);
    INFO(req.source);
    CHECK_NOTHROW(cache::compile_cached(req));
  }
  // Layer norm's weights count as every row's bytes in L2 (measured faster as passes): its
  // rows of 36000 do not stream; a cluster of two blocks holds them.
  const auto g = lazy(no_memory({s[1]}, float32)), b = lazy(no_memory({s[1]}, float32));
  detail::RowPlan p;
  REQUIRE(plans_as_rows(standardize * g + b, s, 0b10, p, true));
  CHECK((p.spec.items == detail::kHeldRowItems && p.spec.cluster == 2 && p.spec.shared == 1));
}

TEST_CASE("every row plan of a random shape is among the ahead-of-time specs of its kernel",
          "[ops]") {
  // As for elementwise and reduction kernels: softmax, log-softmax, standardizing and layer
  // norm over the last axis (rows of 2 to 300000 elements, some a view one element in, so off
  // 16 bytes: windows; past a block: shared memory, streamed, clusters) or over axis 1 of NCHW
  // (columns, rows taken across), each float dtype; where the plan streams, the one-pass
  // kernel it then runs (aot::row_kernel(e, true)) and that kernel's list.
  const dtype types[] = {float32, float16, bfloat16, float64};
  std::mt19937_64 g(20261203);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
  };
  std::map<const RowKernel*, std::set<std::string>> listed;
  int planned = 0, streamed = 0, missing = 0;
  auto check = [&](const char* what, const lazy_expr& e, const Shape& s, std::uint64_t mask) {
    detail::RowPlan p;
    if (!aot::row_kernel(e) || !plans_as_rows(e, s, mask, p)) return;
    const bool stream = p.spec.items == 0;
    if (stream && !plans_as_rows(e, s, mask, p, true)) return;
    ++planned;
    streamed += stream;
    const RowKernel* k = aot::row_kernel(e, stream);
    auto& keys = listed[k];
    if (keys.empty()) {
      aot_target t;
      const auto leaves = aot::row_kernel_leaves(e, stream);
      for (std::size_t j = 0; j < leaves.size(); ++j) {
        t.dtypes.push_back(leaves[j].is_array() ? leaves[j].array().dtype()
                                                : k->definition().params[j].fixed);
        if (!leaves[j].is_array()) t.scalar_inputs.push_back(int(j));
      }
      t.dtypes.push_back(e.dtype());
      for (const auto& spec : k->specs(t)) keys.insert(test::spec_key(spec));
    }
    if (keys.count(test::spec_key(p.spec))) return;
    if (++missing > 5) return;  // the first few name their layouts
    INFO(what << " " << e.dtype().name() << " over " << s.str() << " mask " << mask);
    CHECK(keys.count(test::spec_key(p.spec)) == 1);
  };
  for (int draw = 0; draw < 400; ++draw) {
    const dtype t = types[pick(0, 3)];
    const bool last = draw % 3 != 2;
    Shape s;
    if (last) {
      const std::int64_t c = draw % 2 ? pick(2, 5000) : pick(5000, 300000);
      s = {std::max<std::int64_t>(1, std::int64_t(2e7 / double(c))), c};
      if (draw % 5 == 0) s = {pick(1, 8), std::max<std::int64_t>(1, s[0] / 8), c};
    } else {
      s = {pick(1, 64), pick(2, 64), pick(1, 256), pick(1, 256)};
    }
    const int ax = last ? s.size() - 1 : 1;
    const std::uint64_t mask = std::uint64_t(1) << ax;
    Shape wider = s;
    if (last && draw % 4 == 1) wider[ax] += 1;  // a view one element in: rows off 16 bytes
    const ndarray base = test::untouched(wider, t);
    std::vector<kiln::index> window(std::size_t(s.size()), all);
    if (wider[ax] != s[ax]) window.back() = slice(1, std::nullopt);
    const auto x = lazy(base(std::span<const kiln::index>(window)));
    check("softmax", exp(x - max(x, ax, true)) / sum(exp(x - max(x, ax, true)), ax, true), s, mask);
    check("log-softmax", (x - max(x, ax, true)) - log(sum(exp(x - max(x, ax, true)), ax, true)), s,
          mask);
    const lazy_expr standardize = (x - mean(x, ax, true)) / sqrt(var(x, ax, true) + 1e-5);
    check("standardize", standardize, s, mask);
    if (last) {
      const auto w = lazy(test::untouched({s.back()}, t)), b = lazy(test::untouched({s.back()}, t));
      check("layer norm", standardize * w + b, s, mask);
    }
  }
  CHECK(missing == 0);
  CHECK(planned > 600);
  CHECK(streamed > 0);
}

TEST_CASE("reductions evaluated together compile as one multi-output reduction kernel", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const auto x = lazy(no_memory({64, 256, 56, 56}, float32));
  const expr stats[] = {mean(x, {0, 2, 3}), var(x, {0, 2, 3}, false, {.ddof = 1}),
                        max(x * x, {0, 2, 3})};
  const ReductionKernel& k = aot::multi_reduction(stats);
  CHECK(k.nout() == 3);
  // x, the ddof (a raw int64 scalar), then the outputs.
  const auto specs = k.specs({.dtypes = {float32, int64, float32, float32, float32},
                              .scalar_inputs = {1},
                              .max_ndim = 2,
                              .index64 = false});
  for (std::size_t i : {std::size_t(0), specs.size() / 2, specs.size() - 1}) {
    const auto req = k.compile_request(specs[i], 90);
    INFO(req.source);
    // An element folds into each part's state by that part's own fold (the moments': no shift
    // to choose), where a step's later elements fold.
    CHECK(req.source.find("kiln_multi kiln_fold(") != std::string::npos);
    CHECK_NOTHROW(cache::compile_cached(req));
  }
  const expr mixed[] = {mean(x, {0, 2, 3}), mean(x, 1)};
  CHECK_THROWS_AS(aot::multi_reduction(mixed), ValueError);
}

TEST_CASE("softmax's denominator runs in its max's pass as one multi-output reduction", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  // Softmax over axis 0: no row kernel (the rows are strided), so the reductions run as passes,
  // and sum(exp(x - max(x))) is one pass over x beside the max.
  const auto x = lazy(no_memory({4096, 64}, float32));
  const lazy_expr m = max(x, 0, true);
  const lazy_expr d = sum(exp(x - m), 0, true);
  CHECK(std::string(d.node().code->name) == "kiln_sum_exp_max");
  CHECK(d.node().child[0] == x.node_ptr());
  CHECK(d.shape() == Shape{1, 64});
  CHECK(d.dtype() == float32);
  CHECK(std::string(sum(exp(x - m), 0, false).node().code->name) == "kiln_sum_exp_max");
  const expr both[] = {m, d};
  const ReductionKernel& k = aot::multi_reduction(both);
  const auto specs =
      k.specs({.dtypes = {float32, float32, float32}, .max_ndim = 2, .index64 = false});
  for (std::size_t i : {std::size_t(0), specs.size() / 2, specs.size() - 1}) {
    const auto req = k.compile_request(specs[i], 90);
    INFO(req.source);
    CHECK_NOTHROW(cache::compile_cached(req));
  }
  // A row kernel keeps the plain sum in the max's phase (its row form).
  const lazy_expr rows = exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true);
  const RowKernel* r = aot::row_kernel(rows);
  REQUIRE(r);
  CHECK(r->definition().nphases == 2);
  // Otherwise the sum stays a sum: float16 (exp rounds to float16 before the sum adds in
  // float32), a max over other axes or without keepdims, another input, a sum with a dtype.
  const auto h = lazy(no_memory({4096, 64}, float16));
  CHECK(std::string(sum(exp(h - max(h, 0, true)), 0, true).node().code->name) == "kiln_sum");
  CHECK(std::string(sum(exp(x - max(x, 1, true)), 0, true).node().code->name) == "kiln_sum");
  CHECK(std::string(sum(exp(x - max(x, 0, false)), 0, true).node().code->name) == "kiln_sum");
  const auto y = lazy(no_memory({4096, 64}, float32));
  CHECK(std::string(sum(exp(y - max(x, 0, true)), 0, true).node().code->name) == "kiln_sum");
  CHECK(std::string(sum(exp(x - m), 0, true, {.dtype = float64}).node().code->name) == "kiln_sum");
}

TEST_CASE("lazy reductions check axes, dtypes and empty inputs when they are built", "[ops]") {
  const auto x = lazy(no_memory({0, 3}, float32));
  KILN_CHECK_THROWS(max(x, 0, true), ValueError,
                    Catch::Contains("operation maximum which has no identity"));
  KILN_CHECK_THROWS(sum(x, 2, true), ValueError, Catch::Contains("axis 2 is out of bounds"));
  KILN_CHECK_THROWS(var(lazy(no_memory({4}, complex64))), TypeError, Catch::Contains("complex"));
  KILN_CHECK_THROWS(var_mean(x, 0, false, {.out = no_memory({3}, float32)}), TypeError,
                    Catch::Contains("no out"));
  const lazy_expr s = sum(x, 0, true);  // empty rows sum to 0: fine
  CHECK(s.shape() == Shape{1, 3});
  CHECK(s.dtype() == float32);
  CHECK(mean(lazy(no_memory({2, 3}, int32)), 1, true).dtype() == float64);  // NumPy's dtypes
  // Reductions of a lazy_expr stay lazy; of an expr they run (tested on the GPU).
  static_assert(std::is_same_v<decltype(sum(x)), lazy_expr>);
  static_assert(std::is_same_v<decltype(x + 1), lazy_expr>);
  static_assert(std::is_same_v<decltype(exp(x) * expr(no_memory({3}, float32))), lazy_expr>);
  static_assert(std::is_same_v<decltype(sum(expr(no_memory({3}, float32)))), ndarray>);
}

TEST_CASE("var_mean and std_mean compile for sm_90 for every real dtype class", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  for (const ReductionKernel* k : aot::builtin_reductions()) {
    if (k->name() != "kiln_var_mean" && k->name() != "kiln_std_mean") continue;
    for (auto [in, out] : std::vector<std::pair<dtype, dtype>>{{bool_, float64},
                                                               {int16, float64},
                                                               {float16, float16},
                                                               {float32, float32},
                                                               {float64, float64}}) {
      INFO(k->name() << " " << in.name());
      const auto specs = k->specs(
          {.dtypes = {in, int64, out, out}, .scalar_inputs = {1}, .max_ndim = 2, .index64 = false});
      for (std::size_t i : {std::size_t(0), specs.size() / 3, specs.size() - 1}) {
        const auto req = k->compile_request(specs[i], 90);
        INFO(req.source);
        CHECK_NOTHROW(cache::compile_cached(req));
      }
    }
  }
}

TEST_CASE("rows too long for one block split over a cluster of blocks compile for sm_90", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  struct Planned {
    bool first = false;
    codegen::RowSpec second;
    std::uint32_t shared_bytes = 0, grid = 0;
    int lanes = 0;
  };
  auto planned = [](std::int64_t m, std::int64_t n, const detail::RowDevice& gpu) {
    detail::RowPlan p;
    const ndarray x = test::untouched({m + 1, n});  // a view: windows inside its buffer
    const bool ok = plan({m, n}, 0b10, {x(slice(0, m)), test::untouched({m, n})}, 1, p, gpu);
    return Planned{ok, p.spec, p.shared_bytes, p.grid, p.lanes};
  };
  // A vocabulary of 50257 float32 (12565 windows of 4): one block would hold 4 windows a
  // thread in registers and 21 in shared memory (168 KiB, past half an SM's), and its rows in
  // flight would not fit L2 (264 x 196 KiB); two blocks of a cluster hold it, 4 windows a
  // thread in registers and 9 in shared memory (72 KiB a block). The grid: two blocks a row.
  {
    const Planned p = planned(2048, 50257, kH200);
    REQUIRE(p.first);
    CHECK((p.second.cluster == 2 && p.second.items == 4 && p.second.shared == 1 &&
           p.second.shifted == 1));
    CHECK(p.shared_bytes == 9 * 512 * 16);
    CHECK((p.lanes == 512 && p.grid == 2 * 2048));
    CHECK_FALSE(planned(2048, 50257, kNoClusters).first);  // passes there
  }
  // The fewest blocks that hold a row: 128256 (4), 2^18 (8); fewer rows than two blocks per
  // SM take wider clusters (100 rows of 50257: 4 blocks a row, 400 blocks); past 8 blocks'
  // registers and shared memory, or too few rows for 8, passes.
  CHECK(planned(1024, 128256, kH200).second.cluster == 4);
  CHECK(planned(300, 1 << 18, kH200).second.cluster == 8);
  CHECK(planned(100, 50257, kH200).second.cluster == 4);
  CHECK_FALSE(planned(300, 1 << 21, kH200).first);
  CHECK_FALSE(planned(32, 1 << 18, kH200).first);
  // Rows one block holds, or that stream, keep their plans: 32000 held, 36000 streamed.
  CHECK((planned(2048, 32000, kH200).second.cluster == 1 &&
         planned(2048, 32000, kH200).second.shared == 1));
  CHECK((planned(2048, 36000, kH200).second.cluster == 1 &&
         planned(2048, 36000, kH200).second.items == 0));
  // The kernels: softmax, layer norm and std with a ddof split over 2, 4 and 8 blocks, held
  // and in registers alone, compile for sm_90 (and, never planned there, for sm_75 as plain
  // wide blocks).
  const Shape s{2048, 50257};
  const auto x = lazy(no_memory(s, float32));
  const auto g = lazy(no_memory({s[1]}, float32)), b = lazy(no_memory({s[1]}, float32));
  const lazy_expr exprs[] = {exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true),
                             (x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g + b,
                             (x - mean(x, -1, true)) / kiln::std(x, -1, true, {.ddof = 1})};
  int clustered = 0;
  for (const lazy_expr& e : exprs) {
    const RowKernel* k = aot::row_kernel(e);
    REQUIRE(k);
    for (const auto& sp : k->specs(row_target(e, e.dtype()))) {
      if (sp.cluster == 1 || sp.out_ndim != 1 || sp.index_bits != 32 || sp.vector_width != 4 ||
          sp.shifted || sp.items != 4)
        continue;
      ++clustered;
      for (int arch : {90, 75}) {
        const auto req = k->compile_request(sp, arch);
        INFO(req.source);
        CHECK(req.source.find(fmt::format("KILN_CLUSTER_DIMS({})", int(sp.cluster))) !=
              std::string::npos);
        CHECK(req.source.find("kiln_cluster_sync();") != std::string::npos);
        CHECK_NOTHROW(cache::compile_cached(req));
      }
    }
  }
  CHECK(clustered == 3 * 2 * 3);  // three kernels, held and in registers, 2, 4 and 8 blocks
  // Ahead of time, a GPU before sm_90 gets no cluster specs (it never plans them).
  const RowKernel* k = aot::row_kernel(exprs[0]);
  const auto all = k->specs(row_target(exprs[0], float32));
  const auto without = std::count_if(all.begin(), all.end(),
                                     [](const codegen::RowSpec& sp) { return sp.cluster == 1; });
  CHECK(without < std::int64_t(all.size()));
  CHECK(k->compile_requests(row_target(exprs[0], float32), 90).size() == all.size());
  CHECK(std::int64_t(k->compile_requests(row_target(exprs[0], float32), 80).size()) == without);
}
