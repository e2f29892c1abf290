// Sample 5: the NumPy-to-GPU exercise on 50M float64 elements: generate uniform numbers, sort
// them, reshape to (50000, 1000), and divide every row by its last (largest) element with
// broadcasting, on the GPU (random, sort, an ElementwiseKernel) and on the CPU (std::sort and
// loops over the same numbers). Prints each step's time on both and the speed-up, and checks
// the two results with allclose (rtol 1e-12, atol 0). Exit 1 if they differ.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "sample_util.hpp"

int main() try {
  if (sample::no_gpu("sort_normalize_50m")) return sample::kSkipped;
  const std::int64_t rows = 50000, cols = 1000, n = rows * cols;
  auto rng = kiln::random::default_rng(2025);
  static const kiln::ElementwiseKernel normalize("float64 x, float64 row_max", "float64 z",
                                                 "z = x / row_max", "normalize_rows");
  // Warm-up: the kernels compile (or load from the cache) and cuRAND/CUB initialize.
  normalize(kiln::sort(rng.random({cols})).reshape({1, cols}), 1.0);
  kiln::synchronize_device();

  kiln::ndarray x, s, z;
  const double gen_ms = sample::wall_ms([&] {
    x = rng.random({n});
    kiln::synchronize_device();
  });
  const double sort_ms = sample::wall_ms([&] {
    s = kiln::sort(x);
    kiln::synchronize_device();
  });
  const double norm_ms = sample::wall_ms([&] {
    auto m = s.reshape({rows, cols});
    z = normalize(m, m(kiln::all, kiln::slice(cols - 1, cols)));  // (rows, 1) broadcasts
    kiln::synchronize_device();
  });
  const double gpu_ms = gen_ms + sort_ms + norm_ms;

  std::vector<double> h = x.get<double>();  // the same numbers for the CPU
  const double cpu_sort_ms = sample::wall_ms([&] { std::sort(h.begin(), h.end()); });
  const double cpu_norm_ms = sample::wall_ms([&] {
    for (std::int64_t r = 0; r < rows; ++r) {
      const double last = h[std::size_t(r * cols + cols - 1)];
      for (std::int64_t c = 0; c < cols; ++c) h[std::size_t(r * cols + c)] /= last;
    }
  });
  std::printf("GPU: random %.2f ms, sort %.2f ms, normalize %.2f ms (total %.2f ms)\n", gen_ms,
              sort_ms, norm_ms, gpu_ms);
  std::printf("CPU: sort %.1f ms, normalize %.1f ms; GPU is %.0fx faster on sort + normalize\n",
              cpu_sort_ms, cpu_norm_ms, (cpu_sort_ms + cpu_norm_ms) / (sort_ms + norm_ms));
  const auto g = z.get<double>();
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - h[i]) <= 1e-12 * std::abs(h[i]))) ++bad;
  std::printf("allclose(GPU, CPU): %s (%lld of %lld differ)\n", bad ? "False" : "True",
              static_cast<long long>(bad), static_cast<long long>(n));
  std::printf("%s\n",
              bad ? "sort_normalize_50m: WRONG results" : "sort_normalize_50m: results checked");
  return bad ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "sort_normalize_50m: %s\n", e.what());
  return 1;
}
