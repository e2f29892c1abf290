#pragma once
// NumPy's results of kiln's complex device functions (tests/ops/golden/complex_functions.txt,
// made by make_complex_functions.py beside it) and the rule a result must meet: the same
// class where NumPy is exact (inf, nan, a signed zero), within a few ULP per part elsewhere.
#include <complex>
#include <map>
#include <string>
#include <vector>

namespace kiln::test {

struct complex_golden_table {
  std::vector<std::complex<double>> grid;  // unary inputs
  std::vector<std::complex<double>> a, b;  // binary inputs
  std::map<std::string, std::vector<std::complex<double>>> unary, binary;
  std::map<std::string, std::vector<double>> real;  // absolute, angle
};

/// "complex64" / "complex128" -> that dtype's table (values widened exactly to double).
const std::map<std::string, complex_golden_table>& complex_golden();

struct part_rule {
  bool single;       // complex64: ULP of float
  double ulps;       // bound for finite, non-zero expected parts
  bool ftz = false;  // float32 subnormals flushed (NVRTC's -ftz=true): 0 passes for them
  // A function whose rounding errors scale with more than its result (pow: |b log a| times
  // |a^b|) passes a part within ulps * epsilon * norm_scale too.
  double norm_scale = 0;
  bool open_sign = false;  // a zero or infinite part's sign is open (but it must be one)
};

/// Empty when `got` meets NumPy's `want` under `rule`, else why not (for messages).
std::string part_mismatch(double got, double want, const part_rule& rule);
std::string complex_mismatch(std::complex<double> got, std::complex<double> want,
                             const part_rule& rule);

/// norm_scale for a^b = exp(b log a): |a^b| (1 + |b log a|), the size its rounding errors
/// reach (log a's error times |b|, then exp's relative error).
double power_error_scale(std::complex<double> a, std::complex<double> b, std::complex<double> want);

}  // namespace kiln::test
