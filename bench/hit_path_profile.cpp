// Where does a cache-hit call spend its host time? A SIGPROF sampling profile of a loop of hit
// calls of my_kernel (an ElementwiseKernel), with the argument `expr` of the fused expression
// `sin(x) * 5 + y * y - 1` written into z, or with `reduction` of CuPy's l2norm
// ReductionKernel on one element, with `softmax`, `mean_var` or `standardize` (over (0, 2, 3))
// of those composites under kiln::fuse (a row kernel; a two-output reduction; that reduction
// and an elementwise pass) on small arrays, or with `bare` of an empty
// kernel launched bare; prints one
// sampled program-counter offset per line (relative to this executable's load address), or "other
// LIB SYMBOL" outside it (the shared object and its nearest exported symbol). Symbolize offline:
//   hit_path_profile [expr] > pcs.txt && grep -v other pcs.txt | addr2line -f -C -e
//   hit_path_profile
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/time.h>
#include <ucontext.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <kiln/kiln.hpp>
#include <string_view>
#include <vector>

#include "bench_util.hpp"

namespace {

std::uintptr_t g_lo = 0, g_hi = 0, g_base = 0;
std::uintptr_t g_samples[1 << 16];
std::atomic<int> g_count{0};

void on_prof(int, siginfo_t*, void* ctx) {
  auto pc = std::uintptr_t(static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs[REG_RIP]);
  int i = g_count.fetch_add(1);
  if (i < int(sizeof g_samples / sizeof g_samples[0])) g_samples[i] = pc;
}

int find_main_object(dl_phdr_info* info, std::size_t, void*) {
  if (info->dlpi_name && info->dlpi_name[0]) return 0;  // the executable has an empty name
  g_base = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      g_lo = g_base + ph.p_vaddr;
      g_hi = g_lo + ph.p_memsz;
    }
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (kiln::device_count() == 0) return std::puts("no GPU"), 0;
  const std::string_view mode = argc > 1 ? argv[1] : "";
  const bool expression = mode == "expr", reduction = mode == "reduction", bare = mode == "bare";
  const bool softmax = mode == "softmax", mean_var = mode == "mean_var";
  const bool standardize = mode == "standardize";
  const kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
  const kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z",
                                  "z = (x - 2 > y) ? x * y : x + y", "my_kernel");
  auto x = kiln::asarray<float>({1.f}), y = kiln::asarray<float>({2.f});
  auto z = kiln::empty({1}, kiln::float32);
  k(x, y, z);
  kiln::eval_into(kiln::sin(x) * 5 + y * y - 1, z);
  auto r = kiln::empty({}, kiln::float32);
  l2norm(x, r);
  auto rows = kiln::ones({64, 256}, kiln::float32);
  auto nchw = kiln::ones({4, 8, 6, 6}, kiln::float32);
  auto softmax_fn = kiln::fuse([](auto v) {
    auto e = kiln::exp(v - kiln::max(v, -1, true));
    return e / kiln::sum(e, -1, true);
  });
  auto mean_var_fn = kiln::fuse([](auto v) {
    const kiln::axes ax{0, 2, 3};
    return std::make_tuple(kiln::mean(v, ax, false), kiln::var(v, ax, false));
  });
  auto standardize_fn = kiln::fuse([](auto v) {
    const kiln::axes ax{0, 2, 3};
    return (v - kiln::mean(v, ax, true)) / kiln::sqrt(kiln::var(v, ax, true) + 1e-5);
  });
  softmax_fn(rows);
  mean_var_fn(nchw);
  standardize_fn(nchw);
  kiln::bench::BareLaunch bare_launch;  // `bare`: the reference the hit paths are measured against
  kiln::synchronize_device();
  dl_iterate_phdr(find_main_object, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  itimerval t{{0, 200}, {0, 200}};  // every 200 us of CPU time
  setitimer(ITIMER_PROF, &t, nullptr);
  for (int round = 0; round < 4000; ++round) {
    if (expression)
      for (int i = 0; i < 200; ++i) kiln::eval_into(kiln::sin(x) * 5 + y * y - 1, z);
    else if (reduction)
      for (int i = 0; i < 200; ++i) l2norm(x, r);
    else if (softmax)
      for (int i = 0; i < 200; ++i) softmax_fn(rows);
    else if (mean_var)
      for (int i = 0; i < 200; ++i) mean_var_fn(nchw);
    else if (standardize)
      for (int i = 0; i < 200; ++i) standardize_fn(nchw);
    else if (bare)
      for (int i = 0; i < 200; ++i) bare_launch();
    else
      for (int i = 0; i < 200; ++i) k(x, y, z);
    kiln::current_stream().synchronize();
  }
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  int n = std::min<int>(g_count.load(), int(sizeof g_samples / sizeof g_samples[0]));
  for (int i = 0; i < n; ++i) {
    if (g_samples[i] >= g_lo && g_samples[i] < g_hi)
      std::printf("0x%zx\n", std::size_t(g_samples[i] - g_base));
    else {
      // Outside the executable: the shared object and its nearest exported symbol.
      Dl_info info{};
      const char* lib = "?";
      const char* sym = "?";
      if (dladdr(reinterpret_cast<void*>(g_samples[i]), &info)) {
        if (info.dli_fname) {
          lib = std::strrchr(info.dli_fname, '/') ? std::strrchr(info.dli_fname, '/') + 1
                                                  : info.dli_fname;
        }
        if (info.dli_sname) sym = info.dli_sname;
      }
      std::printf("other %s %s\n", lib, sym);
    }
  }
  return 0;
}
