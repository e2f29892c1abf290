// Sample 3: the SVD of a random 1000x1000 float64 matrix on the CPU (LAPACK's dgesvd, loaded
// at run time from liblapack.so.3 / libopenblas.so.0) and on the GPU (kiln::linalg::svd on
// cuSOLVER). Prints both times, the largest relative difference between the two sets of
// singular values, and the GPU's reconstruction error max|u diag(s) vh - a| / max|a|.
// Exit 1 when the reconstruction error passes 1e-12 or the singular values differ by more than
// 1e-10 (relative). Without LAPACK it says so and checks the GPU side only.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "sample_util.hpp"

using dgesvd_t = void (*)(const char*, const char*, const int*, const int*, double*, const int*,
                          double*, double*, const int*, double*, const int*, double*, const int*,
                          int*);

int main() try {
  if (sample::no_gpu("svd_cpu_gpu")) return sample::kSkipped;
  const int n = 1000;
  std::mt19937_64 gen(2024);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a(std::size_t(n) * n);
  for (auto& v : a) v = u(gen);

  // GPU (warm-up first: handles, workspace, kernels).
  kiln::ndarray d = kiln::asarray(a, kiln::Shape{n, n});
  kiln::linalg::svd(d);
  kiln::synchronize_device();
  kiln::linalg::svd_result r;
  const double gpu_ms = sample::wall_ms([&] {
    r = kiln::linalg::svd(d);
    kiln::synchronize_device();
  });
  static const kiln::ElementwiseKernel scale_columns("float64 u, float64 s", "float64 z",
                                                     "z = u * s", "scale_columns");
  kiln::ndarray rebuilt = kiln::linalg::matmul(scale_columns(r.u, r.s), r.vh);
  auto back = rebuilt.get<double>();
  double err = 0, amax = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(back[i] - a[i]));
    amax = std::max(amax, std::abs(a[i]));
  }
  err /= amax;
  auto s_gpu = r.s.get<double>();
  std::printf("GPU (cuSOLVER): %.1f ms, reconstruction error %.2e\n", gpu_ms, err);
  bool ok = err < 1e-12;

  void* lib = dlopen("liblapack.so.3", RTLD_NOW);
  if (!lib) lib = dlopen("libopenblas.so.0", RTLD_NOW);
  auto dgesvd = lib ? reinterpret_cast<dgesvd_t>(dlsym(lib, "dgesvd_")) : nullptr;
  if (!dgesvd) {
    std::printf("CPU: no LAPACK found (install liblapack3 or libopenblas0); GPU side only\n");
  } else {
    std::vector<double> work_a = a, s(n), uu(std::size_t(n) * n), vt(std::size_t(n) * n);
    int lwork = -1, info = 0;
    double query = 0;
    dgesvd("A", "A", &n, &n, work_a.data(), &n, s.data(), uu.data(), &n, vt.data(), &n, &query,
           &lwork, &info);
    lwork = int(query);
    std::vector<double> work(static_cast<std::size_t>(lwork));
    const double cpu_ms = sample::wall_ms([&] {
      dgesvd("A", "A", &n, &n, work_a.data(), &n, s.data(), uu.data(), &n, vt.data(), &n,
             work.data(), &lwork, &info);
    });
    double sdiff = 0;
    for (int i = 0; i < n; ++i) sdiff = std::max(sdiff, std::abs(s[i] - s_gpu[i]) / s[0]);
    std::printf("CPU (LAPACK dgesvd): %.1f ms (info %d); GPU is %.1fx faster\n", cpu_ms, info,
                cpu_ms / gpu_ms);
    std::printf("singular values: largest relative difference CPU vs GPU %.2e\n", sdiff);
    ok &= info == 0 && sdiff < 1e-10;
  }
  std::printf("%s\n", ok ? "svd_cpu_gpu: results checked" : "svd_cpu_gpu: WRONG results");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "svd_cpu_gpu: %s\n", e.what());
  return 1;
}
