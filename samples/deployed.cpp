// A "deployed" program: runs my_kernel and never compiles. Precompile its kernel on any machine
// (no GPU needed), deploy the cache read-only, then run it with compiling forbidden (the
// README's recipe, "Deploying a precompiled cache"):
//
//   kiln-cache precompile samples/kernels.json --arch 90 --shared --cache-dir /opt/app/kiln
//   KILN_CACHE_READONLY_DIRS=/opt/app/kiln KILN_DISALLOW_COMPILE=1 deployed
//
// A cache miss raises kiln::CacheMissError (exit 1); without a GPU it exits 77 (SKIPPED).
#include <cstdio>
#include <kiln/kiln.hpp>
#include <vector>

#include "sample_util.hpp"

int main() try {
  if (sample::no_gpu("deployed")) return sample::kSkipped;
  const kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z",
                                  "z = (x - 2 > y) ? x * y : x + y", "my_kernel");
  std::vector<float> hx(1 << 20), hy(1 << 20);
  for (std::size_t i = 0; i < hx.size(); ++i) {
    hx[i] = float(i % 17) - 3.5f;
    hy[i] = float(i % 5) + 0.25f;
  }
  auto x = kiln::asarray(hx), y = kiln::asarray(hy);  // uploads only: no kernels
  std::vector<float> hz = kiln::ndarray(k(x, y)).get<float>();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < hz.size(); ++i)
    wrong += hz[i] != ((hx[i] - 2 > hy[i]) ? hx[i] * hy[i] : hx[i] + hy[i]);
  std::printf("deployed: my_kernel on %zu elements, %zu wrong\n", hz.size(), wrong);
  return wrong ? 1 : 0;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "deployed: %s\n", e.what());
  return 1;
}
