// Sample 2: `x *= 5`, then the chain `x *= 5; x *= x; x += x`, on a 1000x500x500 float64 array
// (2 GB), on the CPU (a std::vector loop) and on the GPU (kiln's in-place operators: each
// statement is one generated kernel writing x). Prints the benchmark lines (CuPy's layout) and
// the speed-ups; checks a slice of every GPU result against the CPU's. Exit 1 if wrong.
#include <cmath>
#include <cstdio>
#include <vector>

#include "sample_util.hpp"

namespace {
double mean_ms(const std::vector<double>& us) {
  double s = 0;
  for (double t : us) s += t;
  return s / double(us.size()) / 1e3;
}
}  // namespace

int main() try {
  if (sample::no_gpu("chain_inplace")) return sample::kSkipped;
  const std::int64_t n = 1000LL * 500 * 500;
  const kiln::Shape shape{1000, 500, 500};
  std::vector<double> h(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = 1.0 + double(i % 1000) / 1000.0;  // in [1, 2)
  kiln::ndarray x = kiln::asarray(h, shape);
  const std::size_t probe = 4096;  // the first elements, checked after each step

  std::vector<double> c = h;
  auto cpu1 = kiln::profiler::benchmark(
      [&] {
        for (double& v : c) v *= 5;
      },
      {.n_repeat = 3, .n_warmup = 0, .name = "CPU x *= 5"});
  auto gpu1 = kiln::profiler::benchmark([&] { x *= 5; },
                                        {.n_repeat = 3, .n_warmup = 0, .name = "GPU x *= 5"});
  auto g1 = x(0, 0, kiln::slice(0, 500)).get<double>();
  bool ok = true;
  // Three timed runs on each side: h * 5 * 5 * 5 with the same roundings.
  for (std::size_t i = 0; i < g1.size(); ++i) ok &= g1[i] == c[i];

  x = kiln::asarray(h, shape);
  c = h;
  auto chain_cpu = [&] {
    for (double& v : c) v *= 5;
    for (double& v : c) v *= v;
    for (double& v : c) v += v;
  };
  auto chain_gpu = [&] {
    x *= 5;
    x *= x;
    x += x;
  };
  auto cpu2 =
      kiln::profiler::benchmark(chain_cpu, {.n_repeat = 1, .n_warmup = 0, .name = "CPU chain"});
  auto gpu2 =
      kiln::profiler::benchmark(chain_gpu, {.n_repeat = 1, .n_warmup = 0, .name = "GPU chain"});
  auto g2 = x.reshape({n})(kiln::slice(0, std::int64_t(probe))).get<double>();
  for (std::size_t i = 0; i < probe; ++i) ok &= std::abs(g2[i] - c[i]) <= 1e-12 * std::abs(c[i]);

  std::printf("%s\n%s\n%s\n%s\n", cpu1.str().c_str(), gpu1.str().c_str(), cpu2.str().c_str(),
              gpu2.str().c_str());
  std::printf("x *= 5: CPU %.1f ms, GPU %.2f ms (%.0fx); chain: CPU %.1f ms, GPU %.2f ms (%.0fx)\n",
              mean_ms(cpu1.cpu_times_us), mean_ms(gpu1.gpu_times_us),
              mean_ms(cpu1.cpu_times_us) / mean_ms(gpu1.gpu_times_us), mean_ms(cpu2.cpu_times_us),
              mean_ms(gpu2.gpu_times_us), mean_ms(cpu2.cpu_times_us) / mean_ms(gpu2.gpu_times_us));
  std::printf("%s\n", ok ? "chain_inplace: results checked" : "chain_inplace: WRONG results");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "chain_inplace: %s\n", e.what());
  return 1;
}
