// kiln's device complex type on a GPU: arithmetic and every function against std::complex on
// the host, on random data (never zeros) at several magnitudes, for complex64 and complex128.
//
// Bounds are norm-wise, |got - ref| <= k * eps * |ref| (the usual measure for complex
// functions; a tiny part next to a large one may differ more relative to itself). The host
// reference is computed one precision up (complex128 from complex64 inputs, long double for
// complex128). Arithmetic: k = 4 (FMA contraction and Smith's division round a few times);
// functions: k = 16 (CUDA's real functions are within 2-4 ULP and are composed a few times);
// pow: k = 128 (exp(b log a) carries log a's error times |b log a|, up to ~30 here).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

template <class V>
using HostRef = std::conditional_t<std::is_same_v<V, float>, double, long double>;

// `size`: the magnitude the rounding errors scale with when it exceeds |ref| (a sum whose
// terms cancel: x*y + conj(x)).
template <class V>
bool near_norm(std::complex<V> got, std::complex<HostRef<V>> ref, double k, HostRef<V> size = 0) {
  typedef HostRef<V> R;
  if (std::isnan(double(ref.real())) || std::isnan(double(ref.imag())))
    return std::isnan(got.real()) || std::isnan(got.imag());
  const R err = std::abs(std::complex<R>(R(got.real()) - ref.real(), R(got.imag()) - ref.imag()));
  const R scale = std::max({std::abs(ref), size, R(std::numeric_limits<V>::min())});
  return err <= R(k) * R(std::numeric_limits<V>::epsilon()) * scale;
}

// n random values with parts in [-8, 8) (real part never near 0), times `scale`.
template <class V>
std::vector<std::complex<V>> random_complex(std::size_t n, double scale) {
  auto v = test::random_vector<std::complex<V>>(n);
  for (auto& z : v) z = std::complex<V>(V(double(z.real()) * scale), V(double(z.imag()) * scale));
  return v;
}

template <class V>
dtype complex_dtype() {
  return std::is_same_v<V, float> ? complex64 : complex128;
}

// Runs `z = <op>` over x (and y) with an ElementwiseKernel, output poisoned first.
template <class V>
std::vector<std::complex<V>> run(const std::string& op, const std::vector<std::complex<V>>& hx,
                                 const std::vector<std::complex<V>>& hy) {
  typedef std::complex<V> C;
  // -ftz=false: kiln's default (CuPy's -ftz=true) flushes float32 subnormals, and the extreme
  // scales below make some exact float results subnormal, as NumPy keeps them.
  ElementwiseKernel k("T x, T y", "T z", "z = " + op, "complex_check", {.options = {"-ftz=false"}});
  auto x = asarray<C>(hx), y = asarray<C>(hy);
  auto z = asarray<C>(std::vector<C>(hx.size(), C(V(12345), V(-777))));
  k(x, y, z);
  return z.template get<C>();
}

template <class V>
void check_binary_arithmetic() {
  typedef std::complex<V> C;
  typedef HostRef<V> R;
  typedef std::complex<R> CR;
  const bool single = std::is_same_v<V, float>;
  // (scale of x, scale of y): equal extremes (where |y|^2 overflows or underflows, the naive
  // quotient breaks) and opposite ones (a quotient near the range's ends).
  const std::vector<std::pair<double, double>> scales =
      single ? std::vector<std::pair<double, double>>{{1, 1}, {1e30, 1e30}, {1e-30, 1e-30}, {1e18, 1e-18}, {1e-18, 1e18}}
             : std::vector<std::pair<double, double>>{{1, 1}, {1e300, 1e300}, {1e-300, 1e-300}, {1e150, 1e-150}, {1e-150, 1e150}};
  const std::size_t n = 4096;
  for (auto [sx, sy] : scales) {
    INFO("scales " << sx << ", " << sy);
    const auto hx = random_complex<V>(n, sx), hy = random_complex<V>(n, sy);
    auto cr = [](C c) { return CR(R(c.real()), R(c.imag())); };
    struct Op {
      const char* dev;
      std::function<CR(CR, CR)> host;
      bool needs_unit_scale;  // x*y and x+y overflow or lose meaning at mixed extremes
      std::function<R(CR, CR)> size{};  // empty: |ref|
    };
    const std::vector<Op> ops = {
        {"x / y", [](CR a, CR b) { return a / b; }, false},
        {"x * y", [](CR a, CR b) { return a * b; }, true},
        {"x + y", [](CR a, CR b) { return a + b; }, true},
        {"x - y", [](CR a, CR b) { return a - b; }, true},
        {"x * y + conj(x)", [](CR a, CR b) { return a * b + std::conj(a); }, true,
         [](CR a, CR b) { return std::abs(a) * std::abs(b) + std::abs(a); }},
        {"x / y.real()", [](CR a, CR b) { return a / b.real(); }, false},
        {"y.imag() / x", [](CR a, CR b) { return b.imag() / a; }, true},
        {"2 * x - y / 2", [](CR a, CR b) { return R(2) * a - b / R(2); }, true,
         [](CR a, CR b) { return 2 * std::abs(a) + std::abs(b) / 2; }},
        {"-x + (x == y ? x : y)", [](CR a, CR b) { return -a + (a == b ? a : b); }, true},
    };
    for (const auto& o : ops) {
      if (o.needs_unit_scale && !(sx == 1 && sy == 1)) continue;
      INFO(o.dev);
      const auto got = run<V>(o.dev, hx, hy);
      int bad = 0;
      for (std::size_t j = 0; j < n; ++j)
        if (!near_norm<V>(got[j], o.host(cr(hx[j]), cr(hy[j])), 4, o.size ? o.size(cr(hx[j]), cr(hy[j])) : R(0))) {
          if (++bad <= 3) UNSCOPED_INFO("x " << hx[j] << " y " << hy[j] << " got " << got[j]);
        }
      CHECK(bad == 0);
    }
  }
}

template <class V>
void check_functions() {
  typedef std::complex<V> C;
  typedef HostRef<V> R;
  typedef std::complex<R> CR;
  struct Fn {
    const char* dev;
    std::function<CR(CR, CR)> host;
    double k;
  };
  const std::vector<Fn> fns = {
      {"exp(x)", [](CR a, CR) { return std::exp(a); }, 16},
      {"log(x)", [](CR a, CR) { return std::log(a); }, 16},
      {"log10(x)", [](CR a, CR) { return std::log10(a); }, 16},
      {"sqrt(x)", [](CR a, CR) { return std::sqrt(a); }, 16},
      {"sin(x)", [](CR a, CR) { return std::sin(a); }, 16},
      {"cos(x)", [](CR a, CR) { return std::cos(a); }, 16},
      {"tan(x)", [](CR a, CR) { return std::tan(a); }, 16},
      {"sinh(x)", [](CR a, CR) { return std::sinh(a); }, 16},
      {"cosh(x)", [](CR a, CR) { return std::cosh(a); }, 16},
      {"tanh(x)", [](CR a, CR) { return std::tanh(a); }, 16},
      {"asin(x)", [](CR a, CR) { return std::asin(a); }, 16},
      {"acos(x)", [](CR a, CR) { return std::acos(a); }, 16},
      {"atan(x)", [](CR a, CR) { return std::atan(a); }, 16},
      {"asinh(x)", [](CR a, CR) { return std::asinh(a); }, 16},
      {"acosh(x)", [](CR a, CR) { return std::acosh(a); }, 16},
      {"atanh(x)", [](CR a, CR) { return std::atanh(a); }, 16},
      {"T(abs(x), arg(x))", [](CR a, CR) { return CR(std::abs(a), std::arg(a)); }, 4},
      {"T(norm(x), real(x) - imag(x))", [](CR a, CR) { return CR(std::norm(a), a.real() - a.imag()); }, 4},
      {"polar(abs(x), arg(y))", [](CR a, CR b) { return std::polar(std::abs(a), std::arg(b)); }, 16},
      {"pow(x, y * 0.25)", [](CR a, CR b) { return std::pow(a, b * R(0.25)); }, 128},
      {"pow(x, 3)", [](CR a, CR) { return a * a * a; }, 8},
      {"pow(x, -5)", [](CR a, CR) { return R(1) / (a * a * a * a * a); }, 16},
  };
  const std::size_t n = 4096;
  // Small, moderate and large arguments (the last only where the result stays finite).
  for (double scale : {1e-3, 1.0, 1e3}) {
    const auto hx = random_complex<V>(n, scale), hy = random_complex<V>(n, 1.0);
    for (const auto& f : fns) {
      const std::string dev = f.dev;
      const bool overflows = scale > 1 && (dev.starts_with("exp") || dev.starts_with("sin") ||
                                           dev.starts_with("cos") || dev.starts_with("pow") ||
                                           dev.starts_with("tan(") || dev.starts_with("sinh") ||
                                           dev.starts_with("cosh"));
      if (overflows) continue;
      INFO(f.dev << " at scale " << scale);
      const auto got = run<V>(f.dev, hx, hy);
      int bad = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const CR a(R(hx[j].real()), R(hx[j].imag())), b(R(hy[j].real()), R(hy[j].imag()));
        if (!near_norm<V>(got[j], f.host(a, b), f.k)) {
          if (++bad <= 3) UNSCOPED_INFO("x " << hx[j] << " y " << hy[j] << " got " << got[j] << " want " << f.host(a, b));
        }
      }
      CHECK(bad == 0);
    }
  }
}

}  // namespace

TEST_CASE("complex arithmetic matches std::complex, division at extreme magnitudes too",
          "[gpu][ops][complex]") {
  SECTION("complex64") { check_binary_arithmetic<float>(); }
  SECTION("complex128") { check_binary_arithmetic<double>(); }
}

TEST_CASE("complex functions match std::complex within their norm-wise ULP bounds",
          "[gpu][ops][complex]") {
  SECTION("complex64") { check_functions<float>(); }
  SECTION("complex128") { check_functions<double>(); }
}

TEST_CASE("complex kernels divide like NumPy at zero and keep signed zeros", "[gpu][ops][complex]") {
  typedef std::complex<double> C;
  const double inf = std::numeric_limits<double>::infinity();
  const auto got = run<double>("x / y", {C(1, 2), C(-3, 0.5), C(0, 0)}, {C(0, 0), C(0, 0), C(0, 0)});
  // NumPy: each part divided by |0|: (1/0, 2/0) = (inf, inf); 0/0 is nan.
  CHECK(got[0] == C(inf, inf));
  CHECK(got[1] == C(-inf, inf));
  CHECK((std::isnan(got[2].real()) && std::isnan(got[2].imag())));
  const auto s = run<double>("sqrt(x)", {C(-4, 0.0), C(-4, -0.0), C(4, -0.0)}, {C(1, 1), C(1, 1), C(1, 1)});
  CHECK(s[0] == C(0, 2));
  CHECK(s[1] == C(0, -2));
  CHECK((s[2] == C(2, 0) && std::signbit(s[2].imag())));
}
