#include "support/complex_golden.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace kiln::test {
namespace {

// Reads a number as the dtype holds it: a float32 part is parsed as float (no double rounding).
double number(const std::string& s, bool single) {
  char* end = nullptr;
  const double v = single ? double(std::strtof(s.c_str(), &end)) : std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') throw std::runtime_error("complex golden: bad number " + s);
  return v;
}

std::map<std::string, complex_golden_table> load() {
  std::ifstream in(KILN_TEST_SOURCE_DIR "/ops/golden/complex_functions.txt");
  if (!in) throw std::runtime_error("complex golden: cannot open complex_functions.txt");
  std::map<std::string, complex_golden_table> out;
  std::string line;
  auto next = [&] {
    if (!std::getline(in, line)) throw std::runtime_error("complex golden: truncated");
    std::istringstream s(line);
    std::vector<std::string> w;
    for (std::string t; s >> t;) w.push_back(t);
    return w;
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream head(line);
    std::string kind, name, dtype;
    head >> kind >> name;
    if (kind == "grid" || kind == "pairs") {
      dtype = name;
      std::size_t n = 0;
      head >> n;
      const bool single = dtype == "complex64";
      auto& t = out[dtype];
      for (std::size_t k = 0; k < n; ++k) {
        const auto w = next();
        if (kind == "grid") {
          t.grid.emplace_back(number(w.at(0), single), number(w.at(1), single));
        } else {
          t.a.emplace_back(number(w.at(0), single), number(w.at(1), single));
          t.b.emplace_back(number(w.at(2), single), number(w.at(3), single));
        }
      }
      continue;
    }
    head >> dtype;
    const bool single = dtype == "complex64";
    auto& t = out.at(dtype);
    if (kind == "real") {
      auto& v = t.real[name];
      for (std::size_t k = 0; k < t.grid.size(); ++k) v.push_back(number(next().at(0), single));
      continue;
    }
    const bool unary = kind == "unary";
    if (!unary && kind != "binary") throw std::runtime_error("complex golden: bad line " + line);
    auto& v = unary ? t.unary[name] : t.binary[name];
    const std::size_t n = unary ? t.grid.size() : t.a.size();
    for (std::size_t k = 0; k < n; ++k) {
      const auto w = next();
      v.emplace_back(number(w.at(0), single), number(w.at(1), single));
    }
  }
  return out;
}

double ulp_of(double x, bool single) {
  x = std::fabs(x);
  if (single) {
    const float f = float(x);
    return double(std::nextafter(f, std::numeric_limits<float>::infinity())) - double(f);
  }
  return std::nextafter(x, std::numeric_limits<double>::infinity()) - x;
}

}  // namespace

const std::map<std::string, complex_golden_table>& complex_golden() {
  static const auto g = load();
  return g;
}

std::string part_mismatch(double got, double want, const part_rule& rule) {
  if (std::isnan(want)) return std::isnan(got) ? "" : "want nan";
  if (std::isinf(want))
    return got == want || (rule.open_sign && std::isinf(got)) ? "" : fmt::format("want {}", want);
  if (want == 0) {
    if (got == 0 && (rule.open_sign || std::signbit(got) == std::signbit(want))) return "";
    return fmt::format("want {}0", std::signbit(want) ? "-" : "+");
  }
  if (std::isnan(got) || std::isinf(got)) return "want finite";
  if (rule.single && rule.ftz && std::fabs(want) < double(std::numeric_limits<float>::min()) &&
      std::fabs(got) <= double(std::numeric_limits<float>::min()))
    return "";  // a flushed subnormal
  const double err = std::fabs(got - want) / ulp_of(want, rule.single);
  if (err <= rule.ulps) return "";
  const double eps = rule.single ? double(std::numeric_limits<float>::epsilon())
                                 : std::numeric_limits<double>::epsilon();
  if (std::fabs(got - want) <= rule.ulps * eps * rule.norm_scale) return "";
  return fmt::format("{:.3g} ulp off", err);
}

std::string complex_mismatch(std::complex<double> got, std::complex<double> want,
                             const part_rule& rule) {
  const std::string re = part_mismatch(got.real(), want.real(), rule);
  const std::string im = part_mismatch(got.imag(), want.imag(), rule);
  if (re.empty() && im.empty()) return "";
  return fmt::format("{}{}{}", re.empty() ? "" : "real: " + re,
                     re.empty() || im.empty() ? "" : ", ", im.empty() ? "" : "imag: " + im);
}

double power_error_scale(std::complex<double> a, std::complex<double> b,
                         std::complex<double> want) {
  if (a == 0.0) return 0;
  return std::abs(want) * (1 + std::abs(b) * std::abs(std::log(a)));
}

}  // namespace kiln::test
