// Sample 8: `z = sin(x) * 5 + y * y` on 2^28 float32, fused (kiln's default: one generated
// kernel, one pass over memory) and unfused (each operation evaluated into a temporary first,
// as NumPy and CuPy without cupy.fuse do: four kernels, four passes). Prints both timings
// (CuPy's layout), the speed-up and the effective bandwidth; checks both results agree.
// Exit 1 if they do not.
#include <cmath>
#include <cstdio>

#include "sample_util.hpp"

int main() try {
  if (sample::no_gpu("fused_vs_unfused")) return sample::kSkipped;
  const std::int64_t n = std::int64_t(1) << 28;
  auto rng = kiln::random::default_rng(8);
  kiln::ndarray x = rng.uniform(-4, 4, {n}, kiln::float32),
                y = rng.uniform(-4, 4, {n}, kiln::float32);
  kiln::ndarray fused, unfused;
  auto f = kiln::profiler::benchmark([&] { fused = kiln::sin(x) * 5 + y * y; },
                                     {.n_repeat = 20, .n_warmup = 2, .name = "fused (1 kernel)"});
  auto u = kiln::profiler::benchmark(
      [&] {
        kiln::ndarray s = kiln::sin(x);
        kiln::ndarray s5 = s * 5;
        kiln::ndarray yy = y * y;
        unfused = s5 + yy;
      },
      {.n_repeat = 20, .n_warmup = 2, .name = "unfused (4 kernels)"});
  std::printf("%s\n%s\n", f.str().c_str(), u.str().c_str());
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double t : v) s += t;
    return s / double(v.size()) / 1e3;
  };
  const double fm = mean(f.gpu_times_us), um = mean(u.gpu_times_us);
  std::printf("fused %.3f ms (%.0f GB/s), unfused %.3f ms: %.1fx\n", fm,
              3.0 * double(n) * 4 / fm / 1e6, um, um / fm);
  auto a = fused(kiln::slice(0, 1 << 16)).get<float>(),
       b = unfused(kiln::slice(0, 1 << 16)).get<float>();
  auto hx = x(kiln::slice(0, 1 << 16)).get<float>(), hy = y(kiln::slice(0, 1 << 16)).get<float>();
  bool ok = true;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double ref = std::sin(double(hx[i])) * 5 + double(hy[i]) * hy[i];
    ok &= std::abs(a[i] - ref) <= 1e-5 * std::max(1.0, std::abs(ref));
    ok &= std::abs(b[i] - ref) <= 1e-5 * std::max(1.0, std::abs(ref));
  }
  std::printf("%s\n", ok ? "fused_vs_unfused: results checked" : "fused_vs_unfused: WRONG results");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fused_vs_unfused: %s\n", e.what());
  return 1;
}
