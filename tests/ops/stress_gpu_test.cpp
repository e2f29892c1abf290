// Many threads at once, each on its own stream, calling kernels of every kind: some already
// loaded (memory-cache hits), some only on disk (loads), some never seen (NVRTC compiles racing
// other threads' loads of the same and of other kernels). Every result is checked against a
// host reference; outputs kiln does not allocate are poisoned first.
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 4;
constexpr std::size_t kN = 65537;  // odd: vector loops have a tail

ndarray poisoned(std::size_t n) {
  ndarray a(Shape{std::int64_t(n)}, float64);
  a.fill(std::nan(""));
  return a;
}

bool close(double got, double want, double rel) {
  return std::abs(got - want) <= rel * std::max(1.0, std::abs(want));
}

// Mismatches found by worker threads (Catch2's assertions are not thread-safe).
struct Failures {
  std::mutex m;
  std::vector<std::string> list;
  void add(std::string what) {
    std::lock_guard lock(m);
    if (list.size() < 50) list.push_back(std::move(what));
  }
};

void check_all(Failures& f, const std::string& what, const std::vector<double>& got,
               const std::vector<double>& want, double rel) {
  if (got.size() != want.size()) return f.add(what + ": size " + std::to_string(got.size()));
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!close(got[i], want[i], rel))
      return f.add(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                   ", expected " + std::to_string(want[i]));
}

void check_one(Failures& f, const std::string& what, double got, double want, double rel) {
  if (!close(got, want, rel))
    f.add(what + ": " + std::to_string(got) + ", expected " + std::to_string(want));
}

}  // namespace

TEST_CASE("threads on their own streams call cached and new kernels of every kind at once",
          "[ops][gpu]") {
  test::TempDir dir;  // a fresh disk cache: "never seen" means never compiled anywhere
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().string());
  test::ScopedEnv mem("KILN_CACHE_IN_MEMORY", std::nullopt);
  test::ScopedEnv forbid("KILN_DISALLOW_COMPILE", std::nullopt);

  // Kernels every thread shares. "hot": loaded before the threads start (memory-cache hits);
  // "disk": precompiled for this device's arch but never loaded (each thread's first call
  // races the others to load it).
  const int arch = device_properties(current_device()).arch();
  const ElementwiseKernel hot_ew("T x, T y", "T z", "z = x * y + 1", "stress_hot_ew");
  const ElementwiseKernel disk_ew("T x, T y", "T z", "z = x - 2 * y", "stress_disk_ew");
  const ReductionKernel hot_red("T x", "T y", "x * x", "a + b", "y = a", "0", "stress_hot_red");
  const RawKernel hot_raw(
      "extern \"C\" __global__ void stress_hot_raw(double* x, int n) {"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 3 * x[i] - 1; }",
      "stress_hot_raw");
  const std::vector<double> hx0 = test::random_vector<double>(kN),
                            hy0 = test::random_vector<double>(kN);
  {
    ndarray x = asarray(hx0), y = asarray(hy0), z = poisoned(kN);
    hot_ew(x, y, z);
    (void)hot_red(x).get<double>();
    hot_raw(dim3(unsigned((kN + 255) / 256)), dim3(256), z, int(kN));
    (void)(x * 5.0 + y * y).eval().get<double>();
    (void)sum(x * y).get<double>();
    (void)max(x).get<double>();
    for (const auto& spec :
         disk_ew.specs({.dtypes = {float64, float64, float64}, .max_ndim = 1, .index64 = false}))
      (void)disk_ew.compile_for(spec, arch);
    synchronize_device();
  }

  Failures failures;
  std::atomic<int> ready{0};
  auto worker = [&](int t) {
    try {
      Stream stream(/*non_blocking=*/true);
      StreamGuard use(stream);
      std::vector<double> hx = test::random_vector<double>(kN),
                          hy = test::random_vector<double>(kN);
      for (double& v : hx) v += t;  // every thread its own data
      ndarray x = asarray(hx), y = asarray(hy);
      // Start together, so the first calls collide.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int r = 0; r < kRounds; ++r) {
        const std::string tag = std::to_string(t) + "_" + std::to_string(r);
        std::vector<double> want(kN);

        // ElementwiseKernel: hot, from disk, new and shared by all threads this round (one
        // compile, the others wait), new and this thread's own (compiles in parallel).
        ndarray z = poisoned(kN);
        hot_ew(x, y, z);
        for (std::size_t i = 0; i < kN; ++i) want[i] = hx[i] * hy[i] + 1;
        check_all(failures, "hot elementwise " + tag, z.get<double>(), want, 1e-13);
        z = poisoned(kN);
        disk_ew(x, y, z);
        for (std::size_t i = 0; i < kN; ++i) want[i] = hx[i] - 2 * hy[i];
        check_all(failures, "disk elementwise " + tag, z.get<double>(), want, 1e-13);
        const ElementwiseKernel shared_ew("T x, T y", "T z", "z = x + y * " + std::to_string(r + 2),
                                          "stress_shared_ew_" + std::to_string(r));
        z = poisoned(kN);
        shared_ew(x, y, z);
        for (std::size_t i = 0; i < kN; ++i) want[i] = hx[i] + hy[i] * (r + 2);
        check_all(failures, "shared new elementwise " + tag, z.get<double>(), want, 1e-13);
        const ElementwiseKernel own_ew(
            "T x", "T z", "z = x * " + std::to_string(t + 3) + " - " + std::to_string(r),
            "stress_own_ew_" + tag);
        z = poisoned(kN);
        own_ew(x, z);
        for (std::size_t i = 0; i < kN; ++i) want[i] = hx[i] * (t + 3) - r;
        check_all(failures, "own new elementwise " + tag, z.get<double>(), want, 1e-13);

        // ReductionKernel: hot, and new (shared this round).
        double sq = 0, s = 0, mx = -INFINITY;
        for (std::size_t i = 0; i < kN; ++i)
          sq += hx[i] * hx[i], s += hx[i], mx = std::max(mx, hx[i]);
        check_one(failures, "hot reduction " + tag, hot_red(x).get<double>()[0], sq, 1e-10);
        const ReductionKernel shared_red("T x", "T y", "x + " + std::to_string(r), "a + b", "y = a",
                                         "0", "stress_shared_red_" + std::to_string(r));
        check_one(failures, "shared new reduction " + tag, shared_red(x).get<double>()[0],
                  s + double(r) * kN, 1e-10);

        // RawKernel: hot, and this thread's own new module.
        z = asarray(hx);
        hot_raw(dim3(unsigned((kN + 255) / 256)), dim3(256), z, int(kN));
        for (std::size_t i = 0; i < kN; ++i) want[i] = 3 * hx[i] - 1;
        check_all(failures, "hot raw " + tag, z.get<double>(), want, 1e-13);
        const RawKernel own_raw(
            "extern \"C\" __global__ void own(double* x, int n) {"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;"
            "  if (i < n) x[i] = x[i] + " +
                std::to_string(t * 10 + r) + "; }",
            "own");
        z = asarray(hx);
        own_raw(dim3(unsigned((kN + 255) / 256)), dim3(256), z, int(kN));
        for (std::size_t i = 0; i < kN; ++i) want[i] = hx[i] + (t * 10 + r);
        check_all(failures, "own new raw " + tag, z.get<double>(), want, 1e-13);

        // Fused expressions: a hot structure, and one whose structure is new this round
        // (a chain as long as the round number), shared by every thread.
        const std::vector<double> e1 = (x * 5.0 + y * y).eval().get<double>();
        for (std::size_t i = 0; i < kN; ++i) want[i] = hx[i] * 5 + hy[i] * hy[i];
        check_all(failures, "hot expression " + tag, e1, want, 1e-13);
        expr chain = x * y;
        for (int k = 0; k <= r; ++k) chain = chain - x;
        const std::vector<double> e2 = chain.eval().get<double>();
        for (std::size_t i = 0; i < kN; ++i) {
          double w = hx[i] * hy[i];
          for (int k = 0; k <= r; ++k) w -= hx[i];
          want[i] = w;
        }
        check_all(failures, "new expression " + tag, e2, want, 1e-12);

        // Reductions of expressions and the library's built-ins.
        double sxy = 0;
        for (std::size_t i = 0; i < kN; ++i) sxy += hx[i] * hy[i];
        check_one(failures, "hot fused sum " + tag, sum(x * y).get<double>()[0], sxy, 1e-10);
        expr fused = x + y;
        for (int k = 0; k < r; ++k) fused = fused * 1.0 + y;  // a new structure each round
        double sf = 0;
        for (std::size_t i = 0; i < kN; ++i) sf += hx[i] + hy[i] * (r + 1);
        check_one(failures, "new fused sum " + tag, sum(fused).get<double>()[0], sf, 1e-10);
        check_one(failures, "built-in max " + tag, max(x).get<double>()[0], mx, 0);
        check_one(failures, "built-in mean " + tag, mean(x).get<double>()[0], s / kN, 1e-10);
      }
      stream.synchronize();
    } catch (const std::exception& e) {
      failures.add(std::string("thread ") + std::to_string(t) + ": " + e.what());
    }
  };
  const auto compiles = cache::stats().nvrtc_compiles.load();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  for (const auto& f : failures.list) FAIL_CHECK(f);
  CHECK(failures.list.empty());
  // New kernels compiled once each, however many threads asked at once: per round one shared
  // elementwise, one shared reduction, one expression, one fused reduction, and per thread one
  // elementwise and one raw module (a kind may need more than one kernel for a layout, never
  // one per asking thread).
  const auto compiled = cache::stats().nvrtc_compiles.load() - compiles;
  CHECK(compiled >= std::uint64_t(kRounds * (2 + 2 * kThreads)));
  CHECK(compiled <= std::uint64_t(kRounds * (4 + 2 * kThreads) * 3));
}
