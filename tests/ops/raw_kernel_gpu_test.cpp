// RawKernel / RawModule on a GPU: results against host references on random data (never
// zeros), outputs poisoned before each run.
#include <nvrtc.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <vector>

#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

using kiln::test::poisoned;

struct Mixed {  // the device declares the same struct: int, double, char -> 24 bytes, align 8
  int a;
  double b;
  char c;
};

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("raw kernels receive every scalar type and a struct by value", "[ops][raw][gpu]") {
  RawKernel k(R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
struct Mixed { int a; double b; char c; };
extern "C" __global__ void scalars(bool b, signed char i8, unsigned char u8, short i16,
    unsigned short u16, int i32, unsigned u32, long long i64, unsigned long long u64, float f32,
    double f64, __half f16, __nv_bfloat16 b16, Mixed s, double* out) {
  out[0] = b; out[1] = i8; out[2] = u8; out[3] = i16; out[4] = u16; out[5] = i32; out[6] = u32;
  out[7] = double(i64); out[8] = double(u64); out[9] = f32; out[10] = f64;
  out[11] = __half2float(f16); out[12] = __bfloat162float(b16);
  out[13] = s.a; out[14] = s.b; out[15] = s.c;
})",
              "scalars");
  auto r = test::random_vector<double>(16, -100, 100);
  ndarray out = poisoned({16}, float64);
  const std::int8_t i8 = std::int8_t(r[1]);
  const std::uint8_t u8 = std::uint8_t(std::abs(r[2]));
  const std::int16_t i16 = std::int16_t(r[3] * 300);
  const std::uint16_t u16 = std::uint16_t(std::abs(r[4]) * 600);
  const std::int32_t i32 = std::int32_t(r[5] * 1e6);
  const std::uint32_t u32 = std::uint32_t(std::abs(r[6]) * 4e7);
  const std::int64_t i64 = std::int64_t(r[7] * 1e12);
  const std::uint64_t u64 = std::uint64_t(std::abs(r[8]) * 1e13);
  const float f32 = float(r[9]);
  const double f64 = r[10];
  const half f16{float(r[11])};
  const bf16 b16{float(r[12])};
  const Mixed s{int(r[13] * 1000), r[14], char(r[15])};
  k(dim3(1), dim3(1), true, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, f16, b16, s, out);
  const auto got = out.get<double>();
  const std::vector<double> want = {
      1,           double(i8),         double(u8),         double(i16), double(u16),
      double(i32), double(u32),        double(i64),        double(u64), double(f32),
      f64,         double(float(f16)), double(float(b16)), double(s.a), s.b,
      double(s.c)};
  CHECK(got == want);
}

TEST_CASE("raw launches with the wrong C++ type are caught before the launch", "[ops][raw][gpu]") {
  RawKernel k(R"(extern "C" __global__ void fill(float* x, size_t n, float v) {
    size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; if (i < n) x[i] = v; })",
              "fill");
  ndarray x = poisoned({100}, float32);
  const int n_int = 100;
  KILN_CHECK_THROWS(k(dim3(1), dim3(128), x, n_int, 2.5f), TypeError,
                    Contains("kernel 'fill': parameter 1 is 8 bytes") && Contains("int32_t"));
  KILN_CHECK_THROWS(k(dim3(1), dim3(128), x, std::size_t(100)), TypeError,
                    Contains("takes 3 arguments") && Contains("2 given"));
  KILN_CHECK_THROWS(k(dim3(1), dim3(128), x, std::size_t(100), 2.5), TypeError,
                    Contains("parameter 2 is 4 bytes") && Contains("double"));
  k(dim3(1), dim3(128), x, std::size_t(100), 2.5f);
  CHECK(x.get<float>() == std::vector<float>(100, 2.5f));
}

TEST_CASE("raw kernels launch over 2-D and 3-D grids and blocks", "[ops][raw][gpu]") {
  RawKernel k(R"(extern "C" __global__ void where(int* out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
        z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) out[(z * ny + y) * nx + x] = x + 1000 * y + 1000000 * z; })",
              "where");
  for (auto [grid, block, nz] :
       {std::tuple{dim3(3, 5), dim3(16, 8), 1}, std::tuple{dim3(5, 8, 4), dim3(8, 4, 2), 7}}) {
    const int nx = 37, ny = 29;
    ndarray out = poisoned({nz, ny, nx}, int32);
    k(grid, block, out, nx, ny, nz);
    const auto got = out.get<std::int32_t>();
    std::vector<std::int32_t> want(got.size());
    for (int z = 0; z < nz; ++z)
      for (int y = 0; y < ny; ++y)
        for (int x = 0; x < nx; ++x) want[(z * ny + y) * nx + x] = x + 1000 * y + 1000000 * z;
    CHECK(got == want);
  }
}

TEST_CASE("raw kernels use more than 48 KiB of dynamic shared memory", "[ops][raw][gpu]") {
  RawKernel k(R"(extern "C" __global__ void reverse(const float* x, float* y, int n) {
    extern __shared__ float s[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = x[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = s[n - 1 - i]; })",
              "reverse");
  const int n = 25000;  // 100000 bytes
  auto hx = test::random_vector<float>(n);
  ndarray x = asarray<float>(hx), y = poisoned({n}, float32);
  k(dim3(1), dim3(512), x, y, n, launch_options{.shared_mem = n * sizeof(float)});
  std::vector<float> want(hx.rbegin(), hx.rend());
  CHECK(y.get<float>() == want);
  CHECK(k.attributes().max_dynamic_shared_size_bytes >= int(n * sizeof(float)));
  KILN_CHECK_THROWS(k(dim3(1), dim3(512), x, y, n, launch_options{.shared_mem = 1 << 20}),
                    ValueError, Contains("more than device"));
}

TEST_CASE("raw module templates resolve through name expressions in any spelling",
          "[ops][raw][gpu]") {
  RawModule m(R"(
template <class T, class U> __global__ void axpy(T* y, const U* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * T(x[i]);
})",
              {.name_expressions = {"axpy<float, double>", "axpy<double,float>"}});
  const int n = 1000;
  auto hy = test::random_vector<float>(n);
  auto hx = test::random_vector<double>(n);
  ndarray y = asarray<float>(hy), x = asarray<double>(hx);
  m.get_function("axpy<float,double>")(dim3(4), dim3(256), y, x, 1.5f, n);
  std::vector<float> want(n);
  // The device contracts y + a * x into one fused multiply-add.
  for (int i = 0; i < n; ++i) want[i] = std::fma(1.5f, float(hx[i]), hy[i]);
  CHECK(y.get<float>() == want);
  CHECK(m.lowered_name("axpy< double , float >").starts_with("_Z4axpyIdfEv"));
  KILN_CHECK_THROWS(
      m.get_function("axpy<int,int>")(dim3(1), dim3(1), y, x, 1, n), ValueError,
      Contains("has no kernel 'axpy<int,int>'") && Contains("axpy<float,double> -> _Z"));
}

TEST_CASE("get_global reads and writes a __constant__ array", "[ops][raw][gpu]") {
  RawModule m(R"(
__constant__ float coef[8];
__device__ int hits;
extern "C" __global__ void apply(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = x[i] * coef[i % 8]; atomicAdd(&hits, 1); }
})");
  auto hc = test::random_vector<float>(8);
  ndarray c = m.get_global("coef", float32);
  CHECK(c.shape() == Shape{8});
  c.copy_from_host(hc.data());
  CHECK(c.get<float>() == hc);
  ndarray hits = m.get_global("hits", int32, Shape{1});
  const std::int32_t zero = 0;
  hits.copy_from_host(&zero);
  const int n = 777;
  auto hx = test::random_vector<float>(n);
  ndarray x = asarray<float>(hx), y = poisoned({n}, float32);
  m.get_function("apply")(dim3(4), dim3(256), x, y, n);
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[i] = hx[i] * hc[i % 8];
  CHECK(y.get<float>() == want);
  CHECK(hits.get<std::int32_t>()[0] == n);
  KILN_CHECK_THROWS(m.get_global("coef", float32, Shape{16}), ValueError,
                    Contains("the variable is 32 bytes") && Contains("64 bytes"));
  KILN_CHECK_THROWS(m.get_global("nope", float32), ValueError,
                    Contains("has no __device__ or __constant__ variable 'nope'"));
}

TEST_CASE("a cooperative raw kernel syncs the whole grid; a grid too big is refused",
          "[ops][raw][gpu]") {
  RawKernel k(R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void two_phase(const float* x, float* partial, float* out, int n) {
  cg::grid_group g = cg::this_grid();
  float s = 0;
  for (int i = g.thread_rank(); i < n; i += g.size()) s += x[i];
  partial[g.thread_rank()] = s;
  g.sync();
  if (g.thread_rank() == 0) {
    float t = 0;
    for (unsigned long long j = 0; j < g.size(); ++j) t += partial[j];
    out[0] = t;
  }
})",
              "two_phase", {.cooperative = true});
  const int n = 100000, blocks = 8, threads = 128;
  auto hx = test::random_vector<float>(n, 0.5, 1.5);
  ndarray x = asarray<float>(hx), partial = poisoned({blocks * threads}, float32),
          out = poisoned({1}, float32);
  k(dim3(blocks), dim3(threads), x, partial, out, n);
  // The device's order of summation: per thread (grid-stride), then threads in order.
  std::vector<float> per(blocks * threads, 0.f);
  for (int t = 0; t < blocks * threads; ++t)
    for (int i = t; i < n; i += blocks * threads) per[t] += hx[i];
  float want = 0;
  for (float v : per) want += v;
  CHECK(out.get<float>()[0] == want);
  KILN_CHECK_THROWS(k(dim3(1 << 20), dim3(threads), x, partial, out, n), ValueError,
                    Contains("co-resident") && Contains("per multiprocessor"));
}

TEST_CASE("a raw kernel with cuda_fp16.h and a CUB block reduction", "[ops][raw][gpu]") {
  RawKernel k(R"(
#include <cuda_fp16.h>
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sums(const __half* x, float* out) {
  using R = cub::BlockReduce<float, 256>;
  __shared__ typename R::TempStorage tmp;
  float v = __half2float(x[blockIdx.x * 256 + threadIdx.x]);
  float s = R(tmp).Sum(v);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
})",
              "block_sums");
  const int blocks = 6;
  std::vector<half> hx;
  for (float v : test::random_vector<float>(blocks * 256, -4, 4)) hx.push_back(half(v));
  ndarray x = asarray<half>(hx), out = poisoned({blocks}, float32);
  k(dim3(blocks), dim3(256), x, out);
  const auto got = out.get<float>();
  for (int b = 0; b < blocks; ++b) {
    double want = 0;
    for (int i = 0; i < 256; ++i) want += double(float(hx[b * 256 + i]));
    CHECK(std::abs(got[b] - want) <= 1e-3 * (1 + std::abs(want)));
  }
}

TEST_CASE("raw kernels load from .cubin and .ptx files", "[ops][raw][gpu]") {
  test::TempDir dir;
  const std::string src =
      "extern \"C\" __global__ void triple(float* x, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 3.0f; }\n";
  const int arch = device_properties(current_device()).arch();
  cache::CompileRequest req{.source = src, .kernel_name = "triple", .arch = arch};
  write(dir.path() / "k.cubin", cache::nvrtc_compile(req).cubin);
  nvrtcProgram prog;
  REQUIRE(nvrtcCreateProgram(&prog, src.c_str(), "k.cu", 0, nullptr, nullptr) == NVRTC_SUCCESS);
  const std::string opt = "-arch=compute_" + std::to_string(arch);
  const char* opts[] = {opt.c_str()};
  REQUIRE(nvrtcCompileProgram(prog, 1, opts) == NVRTC_SUCCESS);
  std::size_t size = 0;
  nvrtcGetPTXSize(prog, &size);
  std::string ptx(size, '\0');
  nvrtcGetPTX(prog, ptx.data());
  nvrtcDestroyProgram(&prog);
  ptx.resize(size - 1);
  write(dir.path() / "k.ptx", ptx);
  for (const char* file : {"k.cubin", "k.ptx"}) {
    const int n = 300;
    auto hx = test::random_vector<float>(n);
    ndarray x = asarray<float>(hx);
    RawKernel k = RawKernel::from_file(dir.path() / file, "triple");
    k(dim3(2), dim3(256), x, n);
    std::vector<float> want(n);
    for (int i = 0; i < n; ++i) want[i] = hx[i] * 3.0f;
    CHECK(x.get<float>() == want);
    KILN_CHECK_THROWS(
        RawModule::from_file(dir.path() / file).get_function("nope")(dim3(1), dim3(1), x, n),
        ValueError, Contains("has no kernel 'nope'") && Contains("triple"));
  }
}

TEST_CASE("raw kernel attributes and setters", "[ops][raw][gpu]") {
  RawKernel k(R"(extern "C" __global__ void __launch_bounds__(256) st(float* x) {
    __shared__ float s[64]; s[threadIdx.x % 64] = x[threadIdx.x]; __syncthreads();
    x[threadIdx.x] = s[(threadIdx.x + 1) % 64]; })",
              "st");
  const auto a = k.attributes();
  CHECK(a.max_threads_per_block == 256);
  CHECK(a.shared_size_bytes == 64 * 4);
  CHECK(a.num_regs > 0);
  CHECK(a.binary_version == device_properties(current_device()).arch());
  k.set_max_dynamic_shared_memory(64 * 1024);
  CHECK(k.attributes().max_dynamic_shared_size_bytes == 64 * 1024);
  k.set_preferred_shared_memory_carveout(50);
  CHECK(k.attributes().preferred_shared_memory_carveout == 50);
  KILN_CHECK_THROWS(k.set_preferred_shared_memory_carveout(101), ValueError, Contains("carveout"));
  ndarray x = poisoned({512}, float32);
  KILN_CHECK_THROWS(k(dim3(1), dim3(512), x), ValueError,
                    Contains("this kernel allows at most 256"));
}

TEST_CASE("a raw kernel compiled arch-specific loads and sees its architecture's features",
          "[ops][gpu]") {
  // The 'a' targets (sm_90a, sm_100a, ...) define the feature macros; a generic one does not.
  // A 9.0 device must load the sm_90a cubin kiln compiles for it.
  const char* code = R"(extern "C" __global__ void feat(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(__CUDA_ARCH_SPECIFIC__)
  out[0] = 1;
#else
  out[0] = 2;
#endif
})";
  const RawKernel specific(code, "feat", raw_options{.arch_specific = true});
  const RawKernel generic(code, "feat");
  ndarray a = poisoned(Shape{1}, int32), b = poisoned(Shape{1}, int32);
  specific(dim3(1), dim3(1), a);
  generic(dim3(1), dim3(1), b);
  CHECK(a.get<std::int32_t>() == std::vector<std::int32_t>{1});
  CHECK(b.get<std::int32_t>() == std::vector<std::int32_t>{2});
}
