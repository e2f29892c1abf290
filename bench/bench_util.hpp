#pragma once
// Timing helpers for bench/ programs: device time with events (warm-up, median of repeats) and
// host time with a steady clock.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/kernel_record.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/module.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln::bench {

/// Median device milliseconds of `fn` over `repeats` runs, after `warmup` runs.
inline double median_device_ms(const std::function<void()>& fn, int warmup = 3, int repeats = 20) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  Event start, stop;
  for (int i = 0; i < repeats; ++i) {
    start.record();
    fn();
    stop.record();
    stop.synchronize();
    ms.push_back(Event::elapsed_ms(start, stop));
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

/// Median host microseconds per call of `fn`, over `rounds` rounds of `calls` calls each.
inline double median_host_us(const std::function<void()>& fn, int calls = 2000, int rounds = 7) {
  for (int i = 0; i < calls; ++i) fn();
  current_stream().synchronize();
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn();
    auto t1 = std::chrono::steady_clock::now();
    current_stream().synchronize();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

/// The reference of host-cost cases: cuLaunchKernel of an empty two-argument kernel on one
/// block of the stream current at construction (compiled with NVRTC once, here).
class BareLaunch {
 public:
  BareLaunch() : target_(Shape{1}, float32), stream_(current_stream_handle()) {
    cache::CompileRequest req;
    req.source = "extern \"C\" __global__ void kiln_empty(float* p, int n) {}\n";
    req.kernel_name = "kiln_empty";
    req.arch = device_properties(current_device()).arch();
    module_ = Module::load(cache::nvrtc_compile(req).cubin, current_device());
    function_ = module_->function("kiln_empty");
    p_ = target_.data();
  }
  BareLaunch(const BareLaunch&) = delete;
  BareLaunch& operator=(const BareLaunch&) = delete;
  void operator()() {
    void* args[] = {&p_, &n_};
    function_.launch(dim3(1), dim3(256), args, 0, stream_);
  }

 private:
  ndarray target_;
  cudaStream_t stream_;
  std::shared_ptr<Module> module_;
  Function function_;
  void* p_ = nullptr;
  int n_ = 1;
};

/// Host microseconds per call of `fn` and of `reference` (a bare launch), in alternating
/// rounds so both meet the same machine state (clocks, queue, caches move over a run by 10%
/// and more): {median of fn, median of reference}.
struct paired_us {
  double fn = 0, reference = 0;
  double ratio() const { return fn / reference; }
};
inline paired_us median_host_us_paired(const std::function<void()>& fn,
                                       const std::function<void()>& reference, int calls = 200,
                                       int rounds = 51) {
  auto burst = [&](const std::function<void()>& f) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    current_stream().synchronize();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
  };
  burst(fn);
  burst(reference);
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {
    a.push_back(burst(fn));
    b.push_back(burst(reference));
  }
  std::nth_element(a.begin(), a.begin() + a.size() / 2, a.end());
  std::nth_element(b.begin(), b.begin() + b.size() / 2, b.end());
  return {a[a.size() / 2], b[b.size() / 2]};
}

/// `s` as a JSON string literal, for the benchmarks' JSON output.
inline std::string json_string(std::string_view s) {
  std::string out;
  cache::put_json_string(out, s);
  return out;
}

/// `v` as a JSON number; null when it is not finite.
inline std::string json_number(double v) {
  return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null";
}

}  // namespace kiln::bench
