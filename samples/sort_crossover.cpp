// Sample 6: sort a sine wave (x[i] = sin(i), float64) on the CPU (std::sort) and on the GPU
// (kiln::sort on data already on the device, wall time to completion) for sizes from 1,000 to
// 50,000,000, and find the crossover: the smallest size at which the GPU is faster. Prints a
// table, writes it as CSV (sort_crossover.csv, or the folder given as argv[1]) and, when
// gnuplot is installed, draws sort_crossover.png. Every GPU result is compared with the CPU's
// sorted array; exit 1 on a mismatch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sample_util.hpp"

int main(int argc, char** argv) try {
  if (sample::no_gpu("sort_crossover")) return sample::kSkipped;
  const std::string dir = argc > 1 ? argv[1] : ".";
  const std::int64_t sizes[] = {1000,   3000,    10000,   30000,    100000,
                                300000, 1000000, 3000000, 10000000, 50000000};
  kiln::sort(kiln::asarray<double>({3, 1, 2}));  // warm-up
  kiln::synchronize_device();
  const std::string csv_path = dir + "/sort_crossover.csv";
  FILE* csv = std::fopen(csv_path.c_str(), "w");
  if (!csv) throw kiln::Error("cannot write " + csv_path);
  std::fprintf(csv, "size,cpu_ms,gpu_ms\n");
  std::printf("%12s %12s %12s\n", "size", "CPU ms", "GPU ms");
  std::int64_t crossover = -1;
  bool ok = true;
  for (std::int64_t n : sizes) {
    std::vector<double> h(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) h[std::size_t(i)] = std::sin(double(i));
    kiln::ndarray d = kiln::asarray(h);
    kiln::synchronize_device();
    const int reps = n < 1000000 ? 5 : 2;
    double cpu_ms = 1e30, gpu_ms = 1e30;
    kiln::ndarray s;
    for (int r = 0; r < reps; ++r) {
      std::vector<double> c = h;
      cpu_ms = std::min(cpu_ms, sample::wall_ms([&] { std::sort(c.begin(), c.end()); }));
      gpu_ms = std::min(gpu_ms, sample::wall_ms([&] {
                          s = kiln::sort(d);
                          kiln::synchronize_device();
                        }));
      if (r == 0) ok &= s.get<double>() == c;
    }
    if (crossover < 0 && gpu_ms < cpu_ms) crossover = n;
    std::printf("%12lld %12.3f %12.3f\n", static_cast<long long>(n), cpu_ms, gpu_ms);
    std::fprintf(csv, "%lld,%.6f,%.6f\n", static_cast<long long>(n), cpu_ms, gpu_ms);
  }
  std::fclose(csv);
  if (crossover > 0)
    std::printf("crossover: the GPU is faster from %lld elements on\n",
                static_cast<long long>(crossover));
  else
    std::printf("crossover: the GPU was not faster at any size tried\n");
  std::printf("wrote %s\n", csv_path.c_str());
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    const std::string png = dir + "/sort_crossover.png";
    const std::string cmd =
        "gnuplot -e \"set terminal png size 800,500; set output '" + png +
        "'; set datafile separator ','; set logscale xy; set key left; set xlabel 'elements';"
        " set ylabel 'ms'; set title 'sort of sin(i), float64';"
        " plot '" +
        csv_path +
        "' every ::1 using 1:2 with linespoints title 'CPU std::sort',"
        " '' every ::1 using 1:3 with linespoints title 'GPU kiln::sort'\"";
    if (std::system(cmd.c_str()) == 0)
      std::printf("wrote %s\n", png.c_str());
    else
      std::printf("gnuplot failed; no plot\n");
  } else {
    std::printf("gnuplot not installed: no plot (the CSV has the numbers)\n");
  }
  std::printf("%s\n", ok ? "sort_crossover: results checked" : "sort_crossover: WRONG results");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "sort_crossover: %s\n", e.what());
  return 1;
}
