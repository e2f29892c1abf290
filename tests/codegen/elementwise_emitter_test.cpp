// Every kind of elementwise kernel kiln can generate, compiled by NVRTC for sm_90 (no GPU).
#include "kiln/codegen/elementwise_emitter.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln;
using codegen::Layout;
using codegen::OperandKind;

namespace {

cache::Binary nvrtc(const ElementwiseKernel& k, const codegen::ElementwiseSpec& spec) {
  return cache::nvrtc_compile(k.compile_request(spec, 90));
}

// CHECKs that the spec compiles, printing the source when it does not.
void check_compiles(const ElementwiseKernel& k, const codegen::ElementwiseSpec& spec) {
  try {
    auto bin = nvrtc(k, spec);
    CHECK_FALSE(bin.cubin.empty());
  } catch (const CompileError& e) {
    FAIL(e.what());
  }
}

}  // namespace

TEST_CASE("the README kernel generates a vectorized kernel that NVRTC compiles", "[codegen]") {
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = (x - 2 > y) ? x * y : x + y",
                      "my_kernel");
  auto spec = k.make_spec(std::vector<dtype>{float32, float32}, {.vector_width = 4});
  const std::string src = k.source(spec);
  CHECK_THAT(src, Catch::Contains("extern \"C\" __global__ void my_kernel("));
  CHECK_THAT(src, Catch::Contains("kiln_load<4>(kiln_r_x"));
  CHECK_THAT(src, Catch::Contains("kiln_store<4>(kiln_p_z"));
  CHECK_THAT(src, !Catch::Contains("kiln_load<4>(kiln_r_z"));  // z is only written
  CHECK_THAT(src, !Catch::Contains("cuda_fp16.h"));            // headers only when needed
  CHECK_THAT(src, !Catch::Contains("cuda/std/complex"));
  check_compiles(k, spec);
}

TEST_CASE("an output the operation reads is loaded before the vectorized operation", "[codegen]") {
  ElementwiseKernel k("T x", "T y", "y += x", "accumulate");
  auto spec = k.make_spec(std::vector<dtype>{float32, float32}, {.vector_width = 4});
  CHECK_THAT(k.source(spec), Catch::Contains("kiln_load<4>(kiln_r_y"));
  check_compiles(k, spec);
}

TEST_CASE(
    "every dtype compiles contiguous, vectorized, strided, with 32/64-bit indices and raw "
    "and scalar parameters",
    "[codegen]") {
  ElementwiseKernel k("T x, raw T r, T s", "T z", "z = x * s + r[i]", "all_layouts");
  for (dtype t : kAllDtypes) {
    const int wide = int(16 / t.itemsize());
    struct Variant {
      elementwise_layout layout;
      bool x_uniform;
      bool raw_contiguous;
    };
    const Variant variants[] = {
        {{.layout = Layout::contiguous, .index_bits = 32, .vector_width = wide, .raw_ndim = 2},
         false,
         true},
        {{.layout = Layout::contiguous, .index_bits = 64, .vector_width = 1, .raw_ndim = 1},
         false,
         false},
        {{.layout = Layout::strided, .ndim = 3, .index_bits = 32, .raw_ndim = 2}, true, false},
        {{.layout = Layout::strided, .ndim = 1, .index_bits = 64, .raw_ndim = 0}, false, true},
        // Vectors along the last axis (every access mode is in the source: vector, reversed,
        // broadcast, one by one).
        {{.layout = Layout::strided,
          .ndim = 2,
          .index_bits = 32,
          .vector_width = wide,
          .raw_ndim = 1},
         false,
         true},
        {{.layout = Layout::strided,
          .ndim = 4,
          .index_bits = 64,
          .vector_width = std::max(1, wide / 2),
          .raw_ndim = 1},
         false,
         false},
        {{.layout = Layout::strided,
          .ndim = 1,
          .index_bits = 32,
          .vector_width = wide,
          .raw_ndim = 1},
         true,
         true},
    };
    for (const auto& v : variants) {
      INFO(fmt::format("{} layout {} ndim {} bits {} vw {}", t, int(v.layout.layout), v.layout.ndim,
                       v.layout.index_bits, v.layout.vector_width));
      auto spec = k.make_spec(std::vector<dtype>{t, t, t}, v.layout);
      spec.set_param(0, t, v.x_uniform ? OperandKind::uniform : OperandKind::array);
      spec.set_param(1, t, OperandKind::raw_array, v.layout.raw_ndim, v.raw_contiguous);
      spec.set_param(2, t, OperandKind::scalar);
      check_compiles(k, spec);
    }
  }
}

TEST_CASE(
    "every dtype of at most 4 bytes compiles gathered (contiguous outputs, inputs stepped), "
    "with an output read first, uniform and raw parameters, 1 to 4 dims and 32/64-bit indices",
    "[codegen]") {
  ElementwiseKernel k("T x, T y, raw T r", "T z", "z = x - y + r[i]", "gathered_all");
  ElementwiseKernel acc("T x", "T z", "z += x * T(2)", "gathered_accumulate");
  for (dtype t : kAllDtypes) {
    if (t.itemsize() > 4) continue;
    const int wide = int(16 / t.itemsize());
    for (int nd = 1; nd <= 4; ++nd) {
      const int bits = nd % 2 ? 32 : 64;
      INFO(fmt::format("{} ndim {} bits {}", t, nd, bits));
      auto spec = k.make_spec(
          std::vector<dtype>{t, t, t},
          {.layout = Layout::gathered, .ndim = nd, .index_bits = bits, .vector_width = wide});
      if (nd == 3) spec.set_param(1, t, OperandKind::uniform);
      const std::string src = k.source(spec);
      CHECK_THAT(src, Catch::Contains(fmt::format("kiln_store<{}>(", wide)));
      CHECK((src.find("the next plane: unravel again") != std::string::npos) == (nd > 1));
      check_compiles(k, spec);
      auto a = acc.make_spec(
          std::vector<dtype>{t, t},
          {.layout = Layout::gathered, .ndim = nd, .index_bits = bits, .vector_width = wide});
      CHECK_THAT(acc.source(a),
                 Catch::Contains(fmt::format("kiln_load<{}>(kiln_r_z[kiln_u]", wide)));
      check_compiles(acc, a);
      // Inputs stepped one by one, in pairs and in one group a vector, x reading each group
      // in one load, y constant along the rows (read once per row): rows are crossed only
      // between groups, never with one group.
      for (int g : {1, 2, wide}) {
        if (nd == 1) break;
        INFO("group " << g);
        const auto grouped = k.make_spec(std::vector<dtype>{t, t, t}, {.layout = Layout::gathered,
                                                                       .ndim = nd,
                                                                       .index_bits = bits,
                                                                       .vector_width = wide,
                                                                       .staged = g > 1 ? 1u : 0u,
                                                                       .row_constant = 2,
                                                                       .unit_cols = g});
        const std::string gsrc = k.source(grouped);
        if (g > 1) CHECK_THAT(gsrc, Catch::Contains(fmt::format("kiln_load<{}>(kiln_w, ", g)));
        CHECK_THAT(gsrc, Catch::Contains("kiln_c_y = *reinterpret_cast<const"));
        CHECK((gsrc.find("the next plane: unravel again") != std::string::npos) == (g < wide));
        check_compiles(k, grouped);
      }
      // x laid out as the output (whole vectors where z's are, in the tail one element at z's
      // place) or stepped, y stepped, by groups or constant along the rows; rows of any length
      // (the end tested after each group) or of a vector or more (one crossing, by selects).
      for (std::uint64_t y_way : {0u, 1u, 2u})
        for (bool long_rows : {false, true}) {
          if (long_rows && nd == 1) continue;
          const int g = y_way == 1 ? 2 : 1;
          const bool x_flat = !long_rows || y_way != 0;
          INFO("y read " << y_way << " long rows " << long_rows);
          const auto flat = k.make_spec(std::vector<dtype>{t, t, t},
                                        {.layout = Layout::gathered,
                                         .ndim = nd,
                                         .index_bits = bits,
                                         .vector_width = wide,
                                         .staged = y_way == 1 ? 2u : 0u,
                                         .row_constant = y_way == 2 && nd > 1 ? 2u : 0u,
                                         .as_output = x_flat ? 1u : 0u,
                                         .unit_cols = g,
                                         .long_rows = long_rows});
          CHECK(flat.gathered_long_rows() == long_rows);
          const std::string fsrc = k.source(flat);
          CHECK((fsrc.find(fmt::format("kiln_load<{}>(kiln_r_x[kiln_u], reinterpret_cast<const",
                                       wide)) != std::string::npos) == x_flat);
          CHECK((fsrc.find("kiln_o_x") == std::string::npos) == x_flat);
          CHECK((fsrc.find("const bool kiln_here") != std::string::npos) == long_rows);
          check_compiles(k, flat);
        }
    }
  }
}

TEST_CASE(
    "every dtype compiles tiled (transposed operands through shared memory), with raw, "
    "scalar and uniform parameters and 32/64-bit indices",
    "[codegen]") {
  ElementwiseKernel k("T x, T y, raw T r, T s", "T z", "z = x * s + y + r[i]", "tiled_all");
  ElementwiseKernel acc("T x", "T z", "z += x", "tiled_accumulate");  // z is read: loaded first
  for (dtype t : kAllDtypes) {
    const std::vector<dtype> types{t, t, t, t};
    struct Variant {
      int bits;
      std::uint64_t staged;  // bit k: parameter k
      bool y_uniform;
      int ndim = 2;   // more: batch axes before (rows, cols)
      int unit = 1;   // elements per access: max_tiled_unit (dtypes of at most 4 bytes)
      int sides = 0;  // two_axis_sides: cols (1), rows (2) or both (3) over two axes
    };
    const int pair = t.itemsize() <= 4 ? 2 : 1;
    const int most = t.itemsize() <= 2 ? 8 : pair;  // float16 and int8 by 8
    for (const Variant v :
         {Variant{32, 0b00001, false}, Variant{64, 0b10001, false}, Variant{32, 0b00011, false},
          Variant{32, 0b10001, true}, Variant{32, 0b00001, false, 3}, Variant{64, 0b10001, true, 4},
          Variant{32, 0b10010, false, 2, pair}, Variant{64, 0b00000, true, 3, pair},
          Variant{32, 0b00011, false, 2, most}, Variant{64, 0b00000, false, 2, most},
          Variant{32, 0b00001, false, 3, pair, 1}, Variant{64, 0b10001, true, 4, 1, 3},
          Variant{32, 0b00011, false, 4, most, 2}, Variant{64, 0b10000, false, 3, pair, 2}}) {
      INFO(fmt::format("{} bits {} staged {:b} y uniform {} ndim {} unit {} sides {}", t, v.bits,
                       v.staged, v.y_uniform, v.ndim, v.unit, v.sides));
      auto spec = k.make_spec(types, {.layout = Layout::tiled,
                                      .ndim = v.ndim,
                                      .index_bits = v.bits,
                                      .raw_ndim = 2,
                                      .staged = v.staged,
                                      .unit_cols = v.unit,
                                      .unit_rows = v.staged ? v.unit : 1,
                                      .two_axis_sides = v.sides});
      if (v.y_uniform) spec.set_param(1, t, OperandKind::uniform);
      spec.set_param(3, t, OperandKind::scalar);
      CHECK(spec.layout == Layout::tiled);
      const std::string src = k.source(spec);
      CHECK((src.find("__shared__ __align__(16) unsigned char kiln_sm_x[") != std::string::npos) ==
            bool(v.staged & 0b1));
      CHECK((src.find(fmt::format("kiln_load<{}>(", v.unit)) != std::string::npos) == (v.unit > 1));
      CHECK((src.find("kiln_sm_z[") != std::string::npos) == bool(v.staged & 0b10000));
      CHECK((src.find("kiln_sm_y[") != std::string::npos) == bool(v.staged & 0b10));
      // A side over two axes finds the other operands' lines by division.
      CHECK((src.find("kiln_fastdiv(kiln_uidx(kiln_scol") != std::string::npos) ==
            bool(v.sides & 1));
      CHECK((src.find("kiln_fastdiv(kiln_uidx(kiln_r)") != std::string::npos) == bool(v.sides & 2));
      check_compiles(k, spec);
    }
    auto a = acc.make_spec(std::vector<dtype>{t, t},
                           {.layout = Layout::tiled, .ndim = 2, .staged = 0b10});
    CHECK_THAT(acc.source(a), Catch::Contains("kiln_t_z[(kiln_sc + kiln_k * kiln_sk) * "
                                              "kiln_pitch + kiln_sr + kiln_j] = kiln_u[kiln_j];"));
    check_compiles(acc, a);
    for (int u = 2; u <= most; u *= 2) {  // z read and written by units down the rows
      INFO("unit " << u);
      auto p = acc.make_spec(
          std::vector<dtype>{t, t},
          {.layout = Layout::tiled, .ndim = 2, .staged = 0b10, .unit_cols = u, .unit_rows = u});
      CHECK_THAT(acc.source(p), Catch::Contains(fmt::format("kiln_load<{}>(kiln_u,", u)));
      CHECK_THAT(acc.source(p), Catch::Contains(fmt::format("kiln_store<{}>(", u)));
      check_compiles(acc, p);
    }
    // Runs (a tile holding every row moves each staged tile as one run of memory): loads (x;
    // x and y beside a uniform, 64-bit indices, at 3 dims) and a staged output read before it
    // is written, by one element down the rows (the direct side by one or by units along the
    // cols); dtypes of at most 8 bytes.
    if (t.itemsize() <= 8) {
      struct RunVariant {
        int bits;
        std::uint64_t staged;
        bool y_uniform;
        int ndim, unit;
      };
      const int run_unit = t.itemsize() <= 2 ? 4 : pair;  // along the cols
      for (const RunVariant v :
           {RunVariant{32, 0b00001, false, 2, 1}, RunVariant{64, 0b00011, false, 3, run_unit},
            RunVariant{32, 0b00001, true, 2, run_unit}}) {
        INFO(fmt::format("runs: {} bits staged {:b} ndim {} unit {}", v.bits, v.staged, v.ndim,
                         v.unit));
        auto spec = k.make_spec(types, {.layout = Layout::tiled,
                                        .ndim = v.ndim,
                                        .index_bits = v.bits,
                                        .raw_ndim = 2,
                                        .staged = v.staged,
                                        .unit_cols = v.unit,
                                        .runs = true});
        if (v.y_uniform) spec.set_param(1, t, OperandKind::uniform);
        spec.set_param(3, t, OperandKind::scalar);
        const std::string src = k.source(spec);
        CHECK_THAT(src, Catch::Contains(fmt::format("kiln_load<{}>(kiln_u, kiln_f + kiln_q0)",
                                                    16 / t.itemsize())));
        CHECK_THAT(src, Catch::Contains("if (kiln_fin) {"));
        check_compiles(k, spec);
      }
      auto r = acc.make_spec(std::vector<dtype>{t, t},
                             {.layout = Layout::tiled, .ndim = 2, .staged = 0b10, .runs = true});
      CHECK_THAT(acc.source(r),
                 Catch::Contains(
                     fmt::format("kiln_store<{}>(kiln_f + kiln_q0, kiln_u)", 16 / t.itemsize())));
      check_compiles(acc, r);
    }
  }
  // The ABI is the strided one, over the planned dims.
  auto spec = k.make_spec(std::vector<dtype>{float32, float32, float32, float32},
                          {.layout = Layout::tiled, .ndim = 2, .staged = 1});
  CHECK(codegen::elementwise_arg_count(spec) == 7);
  CHECK(codegen::elementwise_arg(spec, 0).kind == codegen::AbiKind::strided);
  CHECK(codegen::elementwise_arg(spec, 6).kind == codegen::AbiKind::loop_dims);
  // float32: 4 elements per thread, a [tc][tr + 1] tile with tc <= 256.
  CHECK(codegen::tiled_shared_bytes(spec) == (1024 + 256) * 4);
  // float16: 8 elements per thread, 16 where both sides move 16-byte units.
  const std::vector<dtype> halves{float16, float16, float16, float16};
  auto h = k.make_spec(halves, {.layout = Layout::tiled, .ndim = 2, .staged = 1, .unit_cols = 8});
  CHECK(codegen::tiled_elements_per_thread(h) == 8);
  h = k.make_spec(
      halves, {.layout = Layout::tiled, .ndim = 2, .staged = 1, .unit_cols = 8, .unit_rows = 8});
  CHECK(codegen::tiled_elements_per_thread(h) == 16);
  CHECK(codegen::tiled_shared_bytes(h) == (4096 + 256) * 2);
  check_compiles(k, h);
}

TEST_CASE("kiln_cast compiles for every pair of dtypes", "[codegen]") {
  std::string in, op = "double kiln_acc_unused = 0;\n";
  for (int a = 0; a < kNumDtypes; ++a) {
    in += fmt::format("{}{} a{}", a ? ", " : "", kAllDtypes[a].name(), a);
    for (int b = 0; b < kNumDtypes; ++b)
      op += fmt::format("{{ auto v = kiln_cast<{}>(a{}); z += kiln_cast<double>(v); }}\n",
                        kAllDtypes[b].device_type(), a);
  }
  ElementwiseKernel k(in, "float64 z", "z = 0;\n" + op, "cast_table");
  std::vector<dtype> types(kAllDtypes, kAllDtypes + kNumDtypes);
  check_compiles(k, k.make_spec(types));
}

TEST_CASE("user macros like -DX=1 -DT=1 -DN=1 reach user code and break nothing", "[codegen]") {
  elementwise_kernel_options o;
  o.options = {"-DX=1", "-DT=1", "-DN=1", "-Dcomplex_unused=2", "-DSCALE=3"};
  o.preamble = "__device__ U twice(U v) { return v * U(2); }\n";
  o.loop_prep = "__shared__ int kiln_unused_shared; U bias = U(X + N);";
  o.after_loop = "__syncthreads();";
  ElementwiseKernel k("U x, raw U r", "U z",
                      "z = twice(x) + bias * U(SCALE) + r[{i, 0}] + U(r.shape()[1]) + "
                      "U(r.strides()[0]) + U(r.size()) + U(_ind.size() - _ind.get())",
                      "with_macros", o);
  for (dtype t : {float32, complex128, float16}) {
    INFO(t.name());
    auto spec = k.make_spec(std::vector<dtype>{t, t},
                            {.vector_width = t.itemsize() < 16 ? 2 : 1, .raw_ndim = 2});
    spec.set_param(1, t, OperandKind::raw_array, 2, false);
    check_compiles(k, spec);
  }
}

TEST_CASE("raw arrays take multi-indices as braces or integer arrays", "[codegen]") {
  ElementwiseKernel k("raw T a", "raw T b",
                      "long idx[3] = {0, 1, 2}; int j[3] = {1, 1, 1}; "
                      "b[{i, 0, 1}] = a[idx] + a[j] + a[i] + a[{0, 0, i}]",
                      "multi_index");
  auto spec = k.make_spec(std::vector<dtype>{int32, int32}, {.raw_ndim = 3});
  spec.set_param(0, int32, OperandKind::raw_array, 3, false);
  check_compiles(k, spec);
}

TEST_CASE("NVRTC errors in user code point at the user's own lines", "[codegen]") {
  ElementwiseKernel k("float32 x", "float32 z", "z = x;\nz = not_declared_anywhere;", "bad_op");
  auto spec = k.make_spec(std::vector<dtype>{float32});
  try {
    nvrtc(k, spec);
    FAIL("compiled");
  } catch (const CompileError& e) {
    CHECK_THAT(e.log(), Catch::Contains("operation(2): error"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("bad_op"));
  }
  elementwise_kernel_options o;
  o.preamble = "// fine\n__device__ int f() { return missing_symbol; }";
  ElementwiseKernel p("float32 x", "float32 z", "z = x", "bad_preamble", o);
  try {
    nvrtc(p, p.make_spec(std::vector<dtype>{float32}));
    FAIL("compiled");
  } catch (const CompileError& e) {
    CHECK_THAT(e.log(), Catch::Contains("preamble(2): error"));
  }
}

TEST_CASE("elementwise kernels declare each parameter with its ABI type", "[codegen]") {
  ElementwiseKernel k("T x, raw T r, T s", "T z", "z = x", "abi");
  auto spec = k.make_spec(std::vector<dtype>{complex128, complex128, complex128},
                          {.layout = Layout::strided, .ndim = 3, .index_bits = 32, .raw_ndim = 2});
  spec.set_param(2, complex128, OperandKind::scalar);
  const std::string src = k.source(spec);
  CHECK_THAT(src, Catch::Contains("const kiln_strided<3, kiln_idx> kiln_p_x,"));
  CHECK_THAT(src, Catch::Contains("const kiln_carray<complex<double>, 2, true, kiln_idx> r,"));
  CHECK_THAT(src, Catch::Contains("const complex<double> kiln_p_s,"));
  CHECK_THAT(src, Catch::Contains("const kiln_idx kiln_n,"));
  CHECK_THAT(src, Catch::Contains("const kiln_loop_dims<3, kiln_idx> kiln_shape)"));
  CHECK(codegen::elementwise_arg_count(spec) == 6);
  CHECK(codegen::elementwise_arg(spec, 5).kind == codegen::AbiKind::loop_dims);
  auto contiguous = k.make_spec(std::vector<dtype>{float32, float32, float32});
  CHECK_THAT(k.source(contiguous), Catch::Contains("float* kiln_p_z,"));
  CHECK_THAT(k.source(contiguous), Catch::Contains("const float* kiln_p_x,"));
  CHECK(codegen::elementwise_arg_count(contiguous) == 5);
}
