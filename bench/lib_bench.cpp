// kiln_lib_bench: the library-backed ops, printed as ONE JSON object (same layout as kiln_bench):
//   sort_50M_f32 (uniform random), sort_50M_f64_sine (x[i] = sin(i)) in ms;
//   svd_1000_f64_<method> in ms for gesvd and gesvdp, with the reconstruction error
//   max|u diag(s) vh - a| / max|a| and the largest singular-value difference from gesvd as fields;
//   svd_1000_f64 (kiln's default method);
//   matmul_8192_f32_fp32 and matmul_8192_f32_tf32 in TFLOP/s (2 n^3 flops);
//   profiler_overhead_us: what profiler::benchmark adds to the CPU time it reports for a
//   cache-hit call of a 1-element ElementwiseKernel, against the same call timed the same way
//   in a plain loop (issue 11 target: <= 1 us); fields give the wall time per run with and
//   without the profiler, and what one timed CUDA event and its synchronize add on their own.
// Device times: CUDA events, warm-up, median (bench_util.hpp). Without a GPU it prints
// {"device": null, ...} and exits 0. Results are checked; failures go under "errors".
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "kiln/kiln.hpp"

using namespace kiln;

namespace {

std::vector<std::string> g_cases, g_errors;

using bench::json_number;
using bench::json_string;

void add(const std::string& name, const char* metric, double value, const std::string& extra = "") {
  g_cases.push_back(fmt::format("{{\"name\": {}, \"metric\": {}, \"value\": {}{}}}",
                                json_string(name), json_string(metric), json_number(value), extra));
  std::fprintf(stderr, "%-28s %10.4f %s\n", name.c_str(), value, metric);
}

template <class F>
void guarded(const char* group, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_lib_bench: %s failed: %s\n", group, e.what());
    g_errors.push_back(
        fmt::format("{{\"case\": {}, \"error\": {}}}", json_string(group), json_string(e.what())));
  }
}

bool sorted_ok(const ndarray& s, std::int64_t stride) {
  auto sample = s(slice(0, std::nullopt, stride)).astype(float64).get<double>();
  for (std::size_t i = 1; i < sample.size(); ++i)
    if (!(sample[i - 1] <= sample[i])) return false;
  return true;
}

// Sorts x (a fresh output each time, as a user's call allocates one) and records the median.
void time_sort(const char* name, const ndarray& x) {
  ndarray s;
  const double ms = bench::median_device_ms(
      [&] {
        s = ndarray();
        s = sort(x);
      },
      3, 20);
  if (!sorted_ok(s, 997)) throw Error(std::string(name) + ": result not sorted");
  add(name, "ms", ms);
}

void bench_sort() {
  const std::int64_t n = 50'000'000;
  auto rng = random::default_rng(1);
  guarded("sort_50M_f32", [&] { time_sort("sort_50M_f32", rng.random({n}, float32)); });
  guarded("sort_50M_f64_sine", [&] {
    static const ElementwiseKernel sine("", "float64 z", "z = sin((double)i)", "bench_sine");
    ndarray x = empty({n}, float64);
    sine(x);
    time_sort("sort_50M_f64_sine", x);
  });
}

void bench_svd() {
  const std::int64_t n = 1000;
  ndarray a = random::default_rng(3).uniform(-1, 1, {n, n});
  const auto ha = a.get<double>();
  double amax = 0;
  for (double v : ha) amax = std::max(amax, std::abs(v));
  static const ElementwiseKernel scale("float64 u, float64 s", "float64 z", "z = u * s",
                                       "bench_scale_columns");
  std::vector<double> s_ref;
  struct M {
    linalg::svd_method m;
    const char* name;
  };
  for (M m : {M{linalg::svd_method::gesvd, "gesvd"}, M{linalg::svd_method::gesvdp, "gesvdp"},
              M{linalg::svd_method::automatic, ""}}) {
    const std::string name = *m.name ? fmt::format("svd_1000_f64_{}", m.name) : "svd_1000_f64";
    guarded(name.c_str(), [&] {
      linalg::svd_result r;
      const double ms = bench::median_device_ms([&] { r = linalg::svd(a, true, true, m.m); }, 1, 5);
      const auto back = linalg::matmul(scale(r.u, r.s), r.vh).get<double>();
      double err = 0;
      for (std::size_t i = 0; i < ha.size(); ++i) err = std::max(err, std::abs(back[i] - ha[i]));
      err /= amax;
      const auto s = r.s.get<double>();
      if (s_ref.empty()) s_ref = s;
      double sdiff = 0;
      for (std::size_t i = 0; i < s.size(); ++i)
        sdiff = std::max(sdiff, std::abs(s[i] - s_ref[i]) / s_ref[0]);
      add(name, "ms", ms,
          fmt::format(", \"reconstruction_error\": {:.3e}, \"s_diff_vs_gesvd\": {:.3e}", err,
                      sdiff));
      if (!(err < 1e-10)) throw Error(fmt::format("{}: reconstruction error {:.3e}", name, err));
    });
  }
}

void bench_matmul() {
  const std::int64_t n = 8192;
  auto rng = random::default_rng(4);
  ndarray a = rng.random({n, n}, float32), b = rng.random({n, n}, float32);
  // Spot check of one output element against a float64 host dot product.
  const auto row = a(slice(5, 6), all).astype(float64).get<double>();
  const auto col = b(all, slice(7, 8)).astype(float64).get<double>();
  double ref = 0;
  for (std::int64_t k = 0; k < n; ++k) ref += row[std::size_t(k)] * col[std::size_t(k)];
  for (bool tf32 : {false, true}) {
    const std::string name = tf32 ? "matmul_8192_f32_tf32" : "matmul_8192_f32_fp32";
    guarded(name.c_str(), [&] {
      ndarray c;
      const double ms = bench::median_device_ms(
          [&] {
            c = ndarray();
            c = linalg::matmul(a, b, {.allow_tf32 = tf32});
          },
          2, 10);
      const double got = double(c(5, 7).get<float>()[0]);
      const double rel = std::abs(got - ref) / ref;
      add(name, "TFLOP/s", 2.0 * double(n) * n * n / (ms * 1e-3) / 1e12,
          fmt::format(", \"ms\": {:.4f}, \"spot_rel_error\": {:.3e}", ms, rel));
      if (rel > (tf32 ? 1e-2 : 1e-4))
        throw Error(fmt::format("{}: element (5, 7) off by {:.3e}", name, rel));
    });
  }
}

void bench_profiler() {
  guarded("profiler_overhead_us", [&] {
    const ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = x + y", "profiled_add");
    ndarray x = asarray<float>({1.0f}), y = asarray<float>({2.0f}), z = empty({1}, float32);
    auto fn = [&] { k(x, y, z); };
    fn();
    const Stream s = current_stream();
    s.synchronize();
    using clock = std::chrono::steady_clock;
    auto us = [](clock::duration d) {
      return std::chrono::duration<double, std::micro>(d).count();
    };
    constexpr int kRuns = 2000;
    // Best of 7 rounds of kRuns runs each, for: the call timed as benchmark times it (clock
    // reads around it, a synchronize after it) without events; profiler::benchmark; and the
    // call followed by one timed event and its synchronize (the floor of any per-run GPU timing).
    double plain_call = 1e30, plain_wall = 1e30, reported_call = 1e30, profiled_wall = 1e30,
           event_wall = 1e30;
    Event stop;
    for (int round = 0; round < 7; ++round) {
      double calls = 0;
      auto w0 = clock::now();
      for (int i = 0; i < kRuns; ++i) {
        const auto t0 = clock::now();
        fn();
        const auto t1 = clock::now();
        s.synchronize();
        calls += us(t1 - t0);
      }
      plain_wall = std::min(plain_wall, us(clock::now() - w0) / kRuns);
      plain_call = std::min(plain_call, calls / kRuns);

      w0 = clock::now();
      const auto r =
          profiler::benchmark(fn, {.n_repeat = kRuns, .n_warmup = 0, .name = "profiled_add"});
      profiled_wall = std::min(profiled_wall, us(clock::now() - w0) / kRuns);
      if (r.cpu_times_us.size() != std::size_t(kRuns))
        throw Error("profiler returned the wrong number of runs");
      double reported = 0;
      for (double t : r.cpu_times_us) reported += t;
      reported_call = std::min(reported_call, reported / kRuns);

      w0 = clock::now();
      for (int i = 0; i < kRuns; ++i) {
        fn();
        stop.record(s);
        stop.synchronize();
      }
      event_wall = std::min(event_wall, us(clock::now() - w0) / kRuns);
    }
    add("profiler_overhead_us", "us", reported_call - plain_call,
        fmt::format(", \"plain_call_us\": {:.3f}, \"reported_call_us\": {:.3f}, \"target\": 1.0, "
                    "\"plain_wall_per_run_us\": {:.3f}, \"profiled_wall_per_run_us\": {:.3f}, "
                    "\"wall_added_per_run_us\": {:.3f}, \"one_timed_event_wall_added_us\": {:.3f}",
                    plain_call, reported_call, plain_wall, profiled_wall,
                    profiled_wall - plain_wall, event_wall - plain_wall));
    if (z.get<float>()[0] != 3.0f) throw Error("profiled_add gave a wrong result");
  });
}

}  // namespace

int main() {
  if (device_count() == 0) {
    std::printf("{\"device\": null, \"error\": \"no GPU: %s\", \"cases\": []}\n",
                no_device_reason().c_str());
    return 0;
  }
  bench_sort();
  bench_svd();
  bench_matmul();
  bench_profiler();
  std::string out =
      fmt::format("{{\"device\": {}, \"cases\": [", json_string(device_properties(0).name));
  for (std::size_t i = 0; i < g_cases.size(); ++i) out += (i ? ",\n  " : "\n  ") + g_cases[i];
  out += "],\n \"errors\": [";
  for (std::size_t i = 0; i < g_errors.size(); ++i) out += (i ? ", " : "") + g_errors[i];
  out += "]}";
  std::printf("%s\n", out.c_str());
  return 0;
}
