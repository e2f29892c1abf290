// Sample 1: a ~2 GB array of ones (2^28 float64), on the CPU (std::vector) and on the GPU
// (kiln::ones), both timed with kiln::profiler::benchmark. Prints the two benchmark lines
// (CuPy's layout) and the speed-up of the GPU's device time over the CPU's wall time; checks
// every 4096th element of the GPU array and the whole CPU vector are 1. Exit 1 if not.
#include <cstdio>
#include <vector>

#include "sample_util.hpp"

int main() try {
  if (sample::no_gpu("ones_2gb")) return sample::kSkipped;
  const std::int64_t n = std::int64_t(1) << 28;  // 2 GiB of float64
  std::vector<double> host;
  auto cpu = kiln::profiler::benchmark([&] { host.assign(std::size_t(n), 1.0); },
                                       {.n_repeat = 3, .n_warmup = 1, .name = "CPU std::vector"});
  kiln::ndarray x;
  auto gpu = kiln::profiler::benchmark(
      [&] {
        x = kiln::ndarray();
        x = kiln::ones({n});
      },
      {.n_repeat = 10, .n_warmup = 1, .name = "GPU kiln::ones"});
  std::printf("%s\n%s\n", cpu.str().c_str(), gpu.str().c_str());
  double cpu_ms = 0, gpu_ms = 0;
  for (double t : cpu.cpu_times_us) cpu_ms += t / 1e3 / double(cpu.cpu_times_us.size());
  for (double t : gpu.gpu_times_us) gpu_ms += t / 1e3 / double(gpu.gpu_times_us.size());
  std::printf("2 GiB of ones: CPU %.1f ms, GPU %.2f ms (%.0fx)\n", cpu_ms, gpu_ms, cpu_ms / gpu_ms);
  auto probe = x(kiln::slice(0, std::nullopt, 4096)).get<double>();
  bool ok = probe.size() == std::size_t(n / 4096);
  for (double v : probe) ok &= v == 1.0;
  for (double v : host) ok &= v == 1.0;
  std::printf("%s\n", ok ? "ones_2gb: results checked" : "ones_2gb: WRONG results");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "ones_2gb: %s\n", e.what());
  return 1;
}
