#pragma once
// kiln::profiler::benchmark: cupyx.profiler.benchmark in C++. Runs `fn` n_warmup times, then
// n_repeat times, measuring each run's host time (steady clock around the call) and device time
// (CUDA events recorded on the current stream before and after the call; the end event is
// waited for after each run, so runs do not overlap).
//
//   auto r = kiln::profiler::benchmark([&] { k(x, y, z); }, {.n_repeat = 100, .name =
//   "my_kernel"}); std::cout << r << "\n";
//   // my_kernel           :    CPU:    3.104 us   +/-  0.211 (min:    2.900 / max:    4.700) us
//   GPU-0:   12.288 us   +/-  0.410 (min:   11.264 / max:   13.312) us double median_gpu =
//   r.gpu_times_us[r.gpu_times_us.size() / 2];   // raw times, per run
//
// Options are checked (ValueError) before the device is touched. The times it reports carry
// only two clock reads of overhead (bench: `profiler_overhead_us`, 0.01 us on an H200); the
// wall time of a run grows by its two event records and the event wait (2.7 us there, of which
// 0.6-1.6 us is what the GPU takes to complete a timed event at all).
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace kiln::profiler {

struct benchmark_options {
  int n_repeat = 10000;  // timed runs (CuPy's default)
  int n_warmup = 10;     // untimed runs first
  std::string name = "benchmark";
};

struct benchmark_result {
  std::string name;
  int device = 0;
  std::vector<double> cpu_times_us;  // one per timed run
  std::vector<double> gpu_times_us;  // one per timed run, on `device`

  /// One line in CuPy's layout: "name: CPU: mean us +/- std (min: a / max: b) us  GPU-0: ...".
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const benchmark_result& r);

/// Times `fn` on the current device and stream.
benchmark_result benchmark(const std::function<void()>& fn, const benchmark_options& options = {});

}  // namespace kiln::profiler
