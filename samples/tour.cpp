// The kiln tour: what kiln sees on this machine, then the seed use case end to end —
// a kernel written as a string, compiled once by NVRTC, cached, launched, checked.
// Without a GPU it says why and exits with 77 (ctest's SKIPPED: it checked nothing, so it must
// not read as passed); `tools/setup.sh --demo` then precompiles the kernel with kiln-cache
// instead (code generation, NVRTC and the cache need no GPU).
#include <cstdio>
#include <kiln/kiln.hpp>

#include "kiln/cache/cache_config.hpp"
#include "kiln/cache/cache_stats.hpp"

namespace {

const kiln::ElementwiseKernel& my_kernel() {
  static const kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z",
                                         "z = (x - 2 > y) ? x * y : x + y", "my_kernel");
  return k;
}

}  // namespace

int main() try {
  if (kiln::device_count() == 0) {
    std::printf(
        "SKIPPED: no GPU (%s); the tour launches kernels, so it checked nothing.\n"
        "Without a GPU, tools/setup.sh --demo precompiles its kernel with kiln-cache.\n",
        kiln::no_device_reason().c_str());
    return 77;
  }
  for (int d = 0; d < kiln::device_count(); ++d) {
    const auto& p = kiln::device_properties(d);
    std::printf("kiln: GPU %d: %s, sm_%d, %d multiprocessors, %.1f GiB\n", d, p.name.c_str(),
                p.arch(), p.multiprocessor_count, double(p.total_memory) / (1 << 30));
  }
  // 1. A kernel from strings, on arrays made on the device.
  auto x = kiln::linspace(0.0, 9.0, 10, true, kiln::float32);
  auto y = kiln::full({10}, 3.0f);
  kiln::ndarray z = my_kernel()(x, y);
  auto hx = x.get<float>(), hz = z.get<float>();
  int wrong = 0;
  std::printf("my_kernel: z = (x - 2 > y) ? x * y : x + y with y = 3\n  x:");
  for (float v : hx) std::printf(" %g", v);
  std::printf("\n  z:");
  for (std::size_t i = 0; i < hz.size(); ++i) {
    std::printf(" %g", hz[i]);
    float want = (hx[i] - 2 > 3.0f) ? hx[i] * 3.0f : hx[i] + 3.0f;
    wrong += hz[i] != want;
  }
  std::printf("\n");
  // 2. Views are free; kernels take any layout and broadcast.
  auto m = kiln::arange(0, 12).astype(kiln::float32).reshape({3, 4});
  kiln::ndarray w = my_kernel()(m.T(), kiln::full({3}, 1.0f));
  std::printf("my_kernel on a transposed (4, 3) view broadcast against a (3,) row: shape %s\n",
              w.shape().str().c_str());
  // 3. The second call is a cache hit: no NVRTC, no disk.
  auto compiles = kiln::cache::stats().nvrtc_compiles.load();
  my_kernel()(x, y, z);
  std::printf("second call: %llu new NVRTC compiles (cache: %s)\n",
              (unsigned long long)(kiln::cache::stats().nvrtc_compiles.load() - compiles),
              kiln::cache::CacheConfig::from_env().dir.c_str());
  std::printf(wrong ? "tour: %d WRONG values\n" : "tour: all values checked against the host\n",
              wrong);
  return wrong ? 1 : 0;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "kiln error: %s\n", e.what());
  return 1;
}
