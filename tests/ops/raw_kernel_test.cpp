// RawKernel / RawModule without a GPU: NVRTC compiles, name expressions, cache entries keep
// lowered names across processes, user-header contents in the key, files, every message.
#include <nvrtc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <string>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/kiln.hpp"
#include "raw/raw_checks.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

const char* kTemplates = R"(
template <class T, class U> __global__ void axpy(T* y, const U* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * T(x[i]);
}
__constant__ float coef[4];
__device__ int counter;
)";

const char* kMyAdd = R"(
extern "C" __global__ void my_add(const float* x1, const float* x2, float* y) {
  int tid = blockDim.x * blockIdx.x + threadIdx.x;
  y[tid] = x1[tid] + x2[tid];
})";

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

struct Pod12 {
  float a, b, c;
};
struct alignas(8) Aligned8 {
  float a;
};

}  // namespace

TEST_CASE("name expressions compare after dropping the whitespace C++ ignores", "[ops][raw]") {
  CHECK(normalize_name_expression("k<float,double>") == "k<float,double>");
  CHECK(normalize_name_expression("k< float , double >") == "k<float,double>");
  CHECK(normalize_name_expression(" f<unsigned   int,\n 4> ") == "f<unsigned int,4>");
  CHECK(normalize_name_expression("ns::g<const float *>") == "ns::g<const float*>");
}

TEST_CASE("a RawModule's template instantiations compile and spelling variants share a key",
          "[ops][raw]") {
  RawModule a(kTemplates, {.name_expressions = {"axpy<float, double>", "axpy<double,float>"}});
  RawModule b(kTemplates, {.name_expressions = {"axpy<float,double>", "axpy< double , float >"}});
  CHECK(a.cache_key(90) == b.cache_key(90));
  CHECK(a.cache_key(90) != a.cache_key(80));
  const auto reqs = a.compile_requests(90);
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].name_expressions ==
        std::vector<std::string>{"axpy<float,double>", "axpy<double,float>"});
  const auto bin = cache::nvrtc_compile(reqs[0]);
  REQUIRE(bin.lowered_names.size() == 2);
  CHECK(bin.lowered_names[0].starts_with("_Z4axpyIfdEv"));
  CHECK(bin.lowered_names[1].starts_with("_Z4axpyIdfEv"));
  CHECK(bin.cubin.size() > 64);
}

TEST_CASE("a RawKernel's extern \"C\" name lowers to itself and compiles", "[ops][raw]") {
  RawKernel k(kMyAdd, "my_add");
  CHECK(k.name() == "my_add");
  const auto reqs = k.compile_requests(90);
  REQUIRE(reqs.size() == 1);
  const auto bin = cache::nvrtc_compile(reqs[0]);
  REQUIRE(bin.lowered_names.size() == 1);
  CHECK(bin.lowered_names[0] == "my_add");
  // A template RawKernel names its instantiation directly.
  RawKernel t(kTemplates, "axpy<float, float>");
  CHECK(
      cache::nvrtc_compile(t.compile_requests(90)[0]).lowered_names[0].starts_with("_Z4axpyIffEv"));
}

TEST_CASE("lowered names are kept in the disk entry; a second process compiles nothing",
          "[ops][raw][cache]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().string());
  test::ScopedEnv mem("KILN_CACHE_IN_MEMORY", std::nullopt);
  // A nonce makes the kernel new to this folder.
  const std::string src = std::string(kTemplates) + "// " + std::to_string(::getpid()) + "\n";
  RawModule m(src, {.name_expressions = {"axpy<float,float>"}});
  const auto req = m.compile_requests(90).at(0);
  const auto c0 = cache::stats().nvrtc_compiles.load();
  const auto first = cache::compile_cached(req);
  CHECK(cache::stats().nvrtc_compiles.load() == c0 + 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 20;
    try {
      RawModule again(src, {.name_expressions = {"axpy< float, float >"}});
      const auto n0 = cache::stats().nvrtc_compiles.load();
      const auto bin = cache::compile_cached(again.compile_requests(90).at(0));
      const bool compiled = cache::stats().nvrtc_compiles.load() != n0;
      code = !compiled && bin.lowered_names == first.lowered_names ? 0 : 10;
    } catch (...) {
    }
    ::_exit(code);
  }
  REQUIRE(pid > 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 10: compiled again or lost the lowered names
}

TEST_CASE("a user header's contents are part of the cache key", "[ops][raw]") {
  test::TempDir dir;
  const auto inc = dir.path() / "inc";
  std::filesystem::create_directories(inc / "sub");
  write(inc / "a.h", "#pragma once\n#include \"sub/b.h\"\n");
  write(inc / "sub" / "b.h", "#define SCALE 2.0f\n#include <c.h>\n");
  write(inc / "c.h", "#define OFFSET 1.0f\n");
  const std::string src =
      "#include \"a.h\"\n#include <cuda_fp16.h>\n"
      "extern \"C\" __global__ void k(float* x) { x[0] = x[0] * SCALE + OFFSET; }\n";
  const raw_options opts{.options = {"-I" + inc.string()}};
  RawModule m1(src, opts);
  CHECK(m1.headers().size() == 3);  // a.h, sub/b.h (beside a.h), c.h (through -I); not CUDA's
  const auto k1 = m1.cache_key(90);
  CHECK(RawModule(src, opts).cache_key(90) == k1);  // same contents, same key
  write(inc / "c.h", "#define OFFSET 3.0f\n");      // one byte, two includes deep
  const auto k2 = RawModule(src, opts).cache_key(90);
  CHECK(k2 != k1);
  write(inc / "c.h", "#define OFFSET 1.0f\n");
  CHECK(RawModule(src, opts).cache_key(90) == k1);
  // And the compile sees the headers.
  CHECK(cache::nvrtc_compile(m1.compile_requests(90).at(0)).cubin.size() > 64);
}

TEST_CASE("a header NVRTC cannot find is a CompileError naming it", "[ops][raw]") {
  RawModule m("#include \"kiln_no_such_header.h\"\n__global__ void k() {}\n",
              {.options = {"-I/tmp/kiln-nowhere"}});
  const auto req = m.compile_requests(90).at(0);
  KILN_CHECK_THROWS(
      cache::nvrtc_compile(req), CompileError,
      Contains("header 'kiln_no_such_header.h' was not found") && Contains("-I/tmp/kiln-nowhere"));
}

TEST_CASE("a raw compile error has the log, the options and the numbered source", "[ops][raw]") {
  RawKernel k("extern \"C\" __global__ void bad(float* x) {\n  x[0] = undeclared;\n}\n", "bad",
              {.options = {"-DFOO=1"}});
  KILN_CHECK_THROWS(cache::nvrtc_compile(k.compile_requests(90).at(0)), CompileError,
                    Contains("undeclared") && Contains("options ---") && Contains("-DFOO=1") &&
                        Contains("2 |   x[0] = undeclared;"));
}

TEST_CASE("raw kernels may include CUDA's headers; fp16, bf16, cuda/std, CUB, cooperative groups",
          "[ops][raw]") {
  RawKernel k(R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/complex>
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(const __half* x, __nv_bfloat16* y, float* out) {
  using R = cub::BlockReduce<float, 128>;
  __shared__ typename R::TempStorage tmp;
  cuda::std::complex<float> c(1.f, 2.f);
  float v = __half2float(x[threadIdx.x]) + c.imag();
  float s = R(tmp).Sum(v);
  cg::grid_group g = cg::this_grid();
  g.sync();
  if (threadIdx.x == 0) { out[blockIdx.x] = s; y[blockIdx.x] = __float2bfloat16(s); }
})",
              "k");
  CHECK(cache::nvrtc_compile(k.compile_requests(90).at(0)).cubin.size() > 64);
}

TEST_CASE("raw modules load .cu files with their relative headers; binaries are taken as they are",
          "[ops][raw]") {
  test::TempDir dir;
  write(dir.path() / "defs.h", "#define TWO 2\n");
  write(dir.path() / "k.cu",
        "#include \"defs.h\"\nextern \"C\" __global__ void twice(int* x) { x[0] *= TWO; }\n");
  RawKernel k = RawKernel::from_file(dir.path() / "k.cu", "twice");
  const auto reqs = k.compile_requests(90);
  REQUIRE(reqs.size() == 1);
  const auto bin = cache::nvrtc_compile(reqs[0]);
  CHECK(bin.lowered_names.at(0) == "twice");

  // A .cubin and a .ptx made by NVRTC: nothing to compile, no options allowed.
  write(dir.path() / "k.cubin", bin.cubin);
  nvrtcProgram prog;
  REQUIRE(nvrtcCreateProgram(&prog, reqs[0].source.c_str(), "k.cu", 0, nullptr, nullptr) ==
          NVRTC_SUCCESS);
  const std::string inc = "-I" + dir.path().string();
  const char* opts[] = {"-arch=compute_90", inc.c_str()};
  REQUIRE(nvrtcCompileProgram(prog, 2, opts) == NVRTC_SUCCESS);
  std::size_t n = 0;
  nvrtcGetPTXSize(prog, &n);
  std::string ptx(n, '\0');
  nvrtcGetPTX(prog, ptx.data());
  nvrtcDestroyProgram(&prog);
  ptx.resize(n - 1);
  write(dir.path() / "k.ptx", ptx);
  CHECK(RawModule::from_file(dir.path() / "k.cubin").compile_requests(90).empty());
  CHECK(RawKernel::from_file(dir.path() / "k.ptx", "twice").compile_requests(90).empty());
  KILN_CHECK_THROWS(RawModule::from_file(dir.path() / "k.cubin", {.options = {"-DX"}}), ValueError,
                    Contains("compiled cubin file"));
  KILN_CHECK_THROWS(RawModule::from_file(dir.path() / "missing.cu"), ValueError,
                    Contains("cannot read CUDA file") && Contains("missing.cu"));
  write(dir.path() / "empty.ptx", "");
  KILN_CHECK_THROWS(RawModule::from_file(dir.path() / "empty.ptx"), ValueError,
                    Contains("is empty"));
}

TEST_CASE("raw kernel definitions reject bad options before any compile", "[ops][raw]") {
  KILN_CHECK_THROWS(RawKernel(kMyAdd, "my_add", {.options = {"-arch=sm_80"}}), ValueError,
                    Contains("-arch=sm_80"));
  KILN_CHECK_THROWS(RawKernel(kMyAdd, ""), ValueError, Contains("name is empty"));
  KILN_CHECK_THROWS(RawModule(kTemplates, {.name_expressions = {"  "}}), ValueError,
                    Contains("empty name expression"));
}

TEST_CASE("raw launch arguments are checked against the driver's parameter layout", "[ops][raw]") {
  const ParamSlot layout[] = {{0, 8}, {8, 8}, {16, 4}};  // (float*, size_t, float)
  float* p = nullptr;
  std::size_t n = 4;
  int small = 4;
  float f = 1;
  {
    const raw_arg ok[] = {p, n, f};
    CHECK_NOTHROW(detail::check_raw_args("k", layout, ok));
  }
  {
    const raw_arg wrong[] = {p, small, f};  // int where the kernel takes size_t
    KILN_CHECK_THROWS(detail::check_raw_args("k", layout, wrong), TypeError,
                      Contains("kernel 'k': parameter 1 is 8 bytes") &&
                          Contains("argument 1 is a C++ int32_t (int) (4 bytes)"));
  }
  {
    const raw_arg few[] = {p, n};
    KILN_CHECK_THROWS(detail::check_raw_args("k", layout, few), TypeError,
                      Contains("kernel 'k' takes 3 arguments") && Contains("2 given"));
  }
  {
    // A 12-byte struct fits by size; a device struct aligned to 16 puts it at offset 16.
    const ParamSlot s_layout[] = {{0, 4}, {16, 12}};
    const Pod12 s{1, 2, 3};
    const raw_arg args[] = {f, s};
    KILN_CHECK_THROWS(detail::check_raw_args("s", s_layout, args), TypeError,
                      Contains("parameter 1 is at offset 16") && Contains("would be at offset 4") &&
                          Contains("Pod12") && Contains("alignas"));
    // The device's struct { float a, b; } (align 4) sits at offset 4; an alignas(8) host
    // type of the same size would sit at 8.
    const ParamSlot a_layout[] = {{0, 4}, {4, 8}};
    const Aligned8 a{};
    const raw_arg args8[] = {f, a};
    KILN_CHECK_THROWS(detail::check_raw_args("a", a_layout, args8), TypeError,
                      Contains("8 bytes aligned to 8) would be at offset 8"));
  }
  // ndarrays pass a pointer; the type names messages use.
  CHECK(type_name<std::int64_t>() == "int64_t");
  CHECK(type_name<half>() == "kiln::half");
  CHECK(type_name<Pod12>().find("Pod12") != std::string_view::npos);
}

TEST_CASE("raw launch configurations are checked before the device is touched", "[ops][raw]") {
  RawKernel k(kMyAdd, "my_add");
  float* p = nullptr;
  KILN_CHECK_THROWS(k(dim3(1), dim3(2048), p, p, p), ValueError,
                    Contains("kernel 'my_add' (grid (1, 1, 1), block (2048, 1, 1), 0 bytes") &&
                        Contains("2048 threads; the limit is 1024"));
  KILN_CHECK_THROWS(k(dim3(1), dim3(1, 1, 65), p, p, p), ValueError, Contains("(1024, 1024, 64)"));
  KILN_CHECK_THROWS(k(dim3(1, 70000), dim3(32), p, p, p), ValueError,
                    Contains("(2147483647, 65535, 65535)"));
  KILN_CHECK_THROWS(k(dim3(0), dim3(32), p, p, p), ValueError, Contains("at least 1"));
  launch_options o{.shared_mem = 1024};
  KILN_CHECK_THROWS(k(dim3(1), dim3(32), p, o, p), ValueError,
                    Contains("launch_options must be the last argument"));
}

TEST_CASE("raw module messages name what is missing and what there is", "[ops][raw]") {
  CHECK(detail::missing_name_message("<string>", "kernel", "axpy", {"_Z3fooPf", "bar"},
                                     {"axpy<float,float>"}, {"_Z4axpyIffEvPT_PKT0_S0_i"}) ==
        "module <string> has no kernel 'axpy'; its kernels: _Z3fooPf, bar; name expressions: "
        "axpy<float,float> -> _Z4axpyIffEvPT_PKT0_S0_i");
  CHECK_THAT(detail::missing_name_message("m.cubin", "__device__ or __constant__ variable", "x", {},
                                          {}, {}),
             Contains("has no __device__ or __constant__ variable 'x'") &&
                 Contains("needs a name expression"));
  CHECK_THAT(detail::cooperative_too_big("sync", dim3(2000), dim3(256), 0, 8, 132),
             Contains("the grid has 2000 blocks") && Contains("at most 1056 blocks") &&
                 Contains("8 per multiprocessor x 132 multiprocessors"));
}
