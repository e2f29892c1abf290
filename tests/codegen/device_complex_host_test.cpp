// kiln's device complex functions (codegen/device/kiln_complex.cuh and the complex branches of
// expression_ops.cuh), compiled for the host and checked against NumPy's own results
// (tests/ops/golden/complex_functions.txt): branch cuts chosen by the sign of zero, C99
// Annex G's infinities and NaNs, signed zeros, and accuracy near 0, without a GPU. The host's
// libm stands in for CUDA's real functions (both within a few ULP); the same table is checked
// on a GPU by tests/ops/device_complex_gpu_test.cpp.
#include "device_on_host.hpp"

#include <catch2/catch.hpp>
#include <functional>

#include "support/complex_golden.hpp"

namespace {

using kiln::test::complex_golden;
using kiln::test::complex_mismatch;
using kiln::test::part_mismatch;
using kiln::test::part_rule;

// The device expressions of the op table's complex rows (codegen/src/op_table.cpp).
template <class V>
const std::map<std::string, std::function<complex<V>(complex<V>)>>& unary_functions() {
  typedef complex<V> C;
  static const std::map<std::string, std::function<C(C)>> m = {
      {"sqrt", [](C z) { return sqrt(z); }},
      {"exp", [](C z) { return exp(z); }},
      {"exp2", [](C z) { return kiln_exp2(z); }},
      {"expm1", [](C z) { return kiln_expm1(z); }},
      {"log", [](C z) { return log(z); }},
      {"log2", [](C z) { return kiln_log2(z); }},
      {"log10", [](C z) { return log10(z); }},
      {"log1p", [](C z) { return kiln_log1p(z); }},
      {"sin", [](C z) { return sin(z); }},
      {"cos", [](C z) { return cos(z); }},
      {"tan", [](C z) { return tan(z); }},
      {"sinh", [](C z) { return sinh(z); }},
      {"cosh", [](C z) { return cosh(z); }},
      {"tanh", [](C z) { return tanh(z); }},
      {"arcsin", [](C z) { return asin(z); }},
      {"arccos", [](C z) { return acos(z); }},
      {"arctan", [](C z) { return atan(z); }},
      {"arcsinh", [](C z) { return asinh(z); }},
      {"arccosh", [](C z) { return acosh(z); }},
      {"arctanh", [](C z) { return atanh(z); }},
      {"sign", [](C z) { return kiln_sign(z); }},
      {"reciprocal", [](C z) { return kiln_reciprocal(z); }},
      {"square", [](C z) { return kiln_square(z); }},
  };
  return m;
}

template <class V>
std::complex<double> wide(complex<V> z) {
  return {double(z.real()), double(z.imag())};
}

template <class V>
complex<V> narrow(std::complex<double> z) {
  return complex<V>(V(z.real()), V(z.imag()));
}

// ULP bounds per part: the host's libm is within 1 ULP and the formulas compose a few
// operations; the device's CUDA functions (2-4 ULP) get the same bound on the GPU.
constexpr double kUlps = 8;

template <class V>
void check_unary(const std::string& dtype) {
  const auto& t = complex_golden().at(dtype);
  const part_rule rule{std::is_same_v<V, float>, kUlps};
  for (const auto& [name, fn] : unary_functions<V>()) {
    INFO(dtype << " " << name);
    const auto& want = t.unary.at(name);
    int bad = 0;
    for (std::size_t k = 0; k < t.grid.size(); ++k) {
      const auto got = wide(fn(narrow<V>(t.grid[k])));
      const std::string why = complex_mismatch(got, want[k], rule);
      if (!why.empty() && ++bad <= 8)
        UNSCOPED_INFO(name << t.grid[k] << " = " << got << ", NumPy " << want[k] << ": " << why);
    }
    CHECK(bad == 0);
  }
}

template <class V>
void check_binary(const std::string& dtype) {
  typedef complex<V> C;
  const auto& t = complex_golden().at(dtype);
  // Division and multiplication are NumPy's own roundings: exact. pow is exp(b log a): its
  // error grows with |b log a| (the bound scales with it).
  const std::map<std::string, std::pair<std::function<C(C, C)>, double>> fns = {
      {"divide", {[](C a, C b) { return a / b; }, 0}},
      {"multiply", {[](C a, C b) { return a * b; }, 0}},
      {"power", {[](C a, C b) { return kiln_pow(a, b); }, kUlps}},
  };
  for (const auto& [name, f] : fns) {
    INFO(dtype << " " << name);
    const auto& want = t.binary.at(name);
    int bad = 0;
    for (std::size_t k = 0; k < t.a.size(); ++k) {
      part_rule rule{std::is_same_v<V, float>, f.second};
      if (name == "power") rule.norm_scale = kiln::test::power_error_scale(t.a[k], t.b[k], want[k]);
      const auto got = wide(f.first(narrow<V>(t.a[k]), narrow<V>(t.b[k])));
      const std::string why = complex_mismatch(got, want[k], rule);
      if (!why.empty() && ++bad <= 8)
        UNSCOPED_INFO(t.a[k] << " " << name << " " << t.b[k] << " = " << got << ", NumPy "
                             << want[k] << ": " << why);
    }
    CHECK(bad == 0);
  }
}

template <class V>
void check_real(const std::string& dtype) {
  typedef complex<V> C;
  const auto& t = complex_golden().at(dtype);
  const std::map<std::string, std::function<V(C)>> fns = {
      {"absolute", [](C z) { return kiln_abs(z); }},
      {"angle", [](C z) { return kiln_angle(z); }},
  };
  const part_rule rule{std::is_same_v<V, float>, kUlps};
  for (const auto& [name, f] : fns) {
    INFO(dtype << " " << name);
    const auto& want = t.real.at(name);
    int bad = 0;
    for (std::size_t k = 0; k < t.grid.size(); ++k) {
      const double got = double(f(narrow<V>(t.grid[k])));
      const std::string why = part_mismatch(got, want[k], rule);
      if (!why.empty() && ++bad <= 8)
        UNSCOPED_INFO(name << t.grid[k] << " = " << got << ", NumPy " << want[k] << ": " << why);
    }
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE(
    "device complex functions give NumPy's values, cuts, signed zeros and infinities on "
    "the host",
    "[codegen][complex]") {
  SECTION("complex64") {
    check_unary<float>("complex64");
    check_real<float>("complex64");
  }
  SECTION("complex128") {
    check_unary<double>("complex128");
    check_real<double>("complex128");
  }
}

TEST_CASE("device complex division and multiplication are NumPy's bit for bit on the host",
          "[codegen][complex]") {
  SECTION("complex64") { check_binary<float>("complex64"); }
  SECTION("complex128") { check_binary<double>("complex128"); }
}
