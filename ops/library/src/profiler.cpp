// kiln::profiler::benchmark: host time with a steady clock, device time with CUDA events on the
// current stream, per run.
#include "kiln/library/profiler.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln::profiler {
namespace {

std::string stats(const std::vector<double>& v) {
  double mean = 0, var = 0, lo = 0, hi = 0;
  if (!v.empty()) {
    lo = hi = v[0];
    for (double x : v) {
      mean += x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    mean /= double(v.size());
    for (double x : v) var += (x - mean) * (x - mean);
    var /= double(v.size());
  }
  return fmt::format("{:9.3f} us   +/- {:6.3f} (min: {:9.3f} / max: {:9.3f}) us", mean,
                     std::sqrt(var), lo, hi);
}

}  // namespace

std::string benchmark_result::str() const {
  return fmt::format("{:<20}:    CPU: {}     GPU-{}: {}", name, stats(cpu_times_us), device,
                     stats(gpu_times_us));
}

std::ostream& operator<<(std::ostream& os, const benchmark_result& r) { return os << r.str(); }

benchmark_result benchmark(const std::function<void()>& fn, const benchmark_options& options) {
  if (options.n_repeat < 1 || options.n_warmup < 0)
    throw ValueError(
        fmt::format("profiler.benchmark: n_repeat must be >= 1 and n_warmup >= 0, "
                    "got n_repeat={} n_warmup={}",
                    options.n_repeat, options.n_warmup));
  if (!fn) throw ValueError("profiler.benchmark: fn is empty");
  kiln::detail::refuse_during_capture("profiler::benchmark()",
                                      "it times each run by waiting for the device");
  benchmark_result r;
  r.name = options.name;
  r.device = current_device();  // NoDeviceError without a GPU
  const Stream stream = current_stream();
  Event start, stop;
  for (int i = 0; i < options.n_warmup; ++i) fn();
  stream.synchronize();
  r.cpu_times_us.reserve(std::size_t(options.n_repeat));
  r.gpu_times_us.reserve(std::size_t(options.n_repeat));
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < options.n_repeat; ++i) {
    start.record(stream);
    const auto t0 = clock::now();
    fn();
    const auto t1 = clock::now();
    stop.record(stream);
    stop.synchronize();
    r.cpu_times_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    r.gpu_times_us.push_back(double(Event::elapsed_ms(start, stop)) * 1e3);
  }
  return r;
}

}  // namespace kiln::profiler
