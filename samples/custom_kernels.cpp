// Sample 7: the three kinds of user kernels from CuPy's documentation, in C++: the
// ElementwiseKernel `my_kernel`, the `l2norm` ReductionKernel (sqrt of the sum of squares along
// the last axis) and the RawKernel `my_add`. Each runs on random data and is checked against a
// host computation; prints one line per kernel. Exit 1 if any result is wrong.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "sample_util.hpp"

int main() try {
  if (sample::no_gpu("custom_kernels")) return sample::kSkipped;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4, 4);
  bool ok = true;

  // ElementwiseKernel
  kiln::ElementwiseKernel my_kernel("float32 x, float32 y", "float32 z",
                                    "z = (x - 2 > y) ? x * y : x + y", "my_kernel");
  std::vector<float> hx(1000), hy(1000);
  for (auto& v : hx) v = u(rng);
  for (auto& v : hy) v = u(rng);
  kiln::ndarray z = my_kernel(kiln::asarray(hx), kiln::asarray(hy));
  auto gz = z.get<float>();
  for (std::size_t i = 0; i < hx.size(); ++i)
    ok &= gz[i] == ((hx[i] - 2 > hy[i]) ? hx[i] * hy[i] : hx[i] + hy[i]);
  std::printf("my_kernel (ElementwiseKernel): %zu values %s\n", gz.size(), ok ? "match" : "DIFFER");

  // ReductionKernel
  kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
  std::vector<float> hm(10 * 500);
  for (auto& v : hm) v = u(rng);
  kiln::ndarray norms =
      l2norm(kiln::asarray(hm, kiln::Shape{10, 500}), kiln::reduce_options{.axis = 1});
  auto gn = norms.get<float>();
  bool ok2 = gn.size() == 10;
  for (std::size_t r = 0; r < 10 && ok2; ++r) {
    double s = 0;
    for (std::size_t j = 0; j < 500; ++j) s += double(hm[r * 500 + j]) * hm[r * 500 + j];
    ok2 &= std::abs(gn[r] - std::sqrt(s)) <= 1e-5 * std::sqrt(s);
  }
  std::printf("l2norm (ReductionKernel): 10 row norms %s\n", ok2 ? "match" : "DIFFER");

  // RawKernel
  kiln::RawKernel my_add(R"(extern "C" __global__
void my_add(const float* x1, const float* x2, float* y) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    y[tid] = x1[tid] + x2[tid];
})",
                         "my_add");
  kiln::ndarray a = kiln::arange(0, 25, 1, kiln::float32), b = kiln::ones({25}, kiln::float32);
  kiln::ndarray y = kiln::empty({25}, kiln::float32);
  my_add(dim3(5), dim3(5), a, b, y);
  auto gy = y.get<float>();
  bool ok3 = true;
  for (int i = 0; i < 25; ++i) ok3 &= gy[std::size_t(i)] == float(i) + 1;
  std::printf("my_add (RawKernel): 25 sums %s\n", ok3 ? "match" : "DIFFER");

  ok = ok && ok2 && ok3;
  std::printf("%s\n", ok ? "custom_kernels: results checked" : "custom_kernels: WRONG results");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "custom_kernels: %s\n", e.what());
  return 1;
}
