// kiln's device complex type on a GPU: arithmetic and every function against std::complex on
// the host, on random data (never zeros) at several magnitudes, for complex64 and complex128.
//
// Bounds are norm-wise, |got - ref| <= k * eps * |ref| (the usual measure for complex
// functions; a tiny part next to a large one may differ more relative to itself). The host
// reference is computed one precision up (complex128 from complex64 inputs, long double for
// complex128). Arithmetic: k = 4 (FMA contraction and Smith's division round a few times);
// functions: k = 16 (CUDA's real functions are within 2-4 ULP and are composed a few times);
// pow: k = 128 (exp(b log a) carries log a's error times |b log a|, up to ~30 here).
//
// The NumPy golden table (tests/ops/golden/complex_functions.txt) is checked on the op
// table's device code with -ftz=false, and through kiln's expressions for complex128:
// infinities, NaNs and signed zeros exactly as NumPy's, finite parts within 16 ULP (CUDA's
// real functions are within 1-4 ULP and the complex formulas compose a few of them),
// multiply and divide bit for bit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kiln/codegen/op_table.hpp"
#include "kiln/kiln.hpp"
#include "support/complex_golden.hpp"
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
      single ? std::vector<std::pair<double, double>>{{1, 1},
                                                      {1e30, 1e30},
                                                      {1e-30, 1e-30},
                                                      {1e18, 1e-18},
                                                      {1e-18, 1e18}}
             : std::vector<std::pair<double, double>>{
                   {1, 1}, {1e300, 1e300}, {1e-300, 1e-300}, {1e150, 1e-150}, {1e-150, 1e150}};
  const std::size_t n = 4096;
  for (auto [sx, sy] : scales) {
    INFO("scales " << sx << ", " << sy);
    const auto hx = random_complex<V>(n, sx), hy = random_complex<V>(n, sy);
    auto cr = [](C c) { return CR(R(c.real()), R(c.imag())); };
    struct Op {
      const char* dev;
      std::function<CR(CR, CR)> host;
      bool needs_unit_scale;            // x*y and x+y overflow or lose meaning at mixed extremes
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
        if (!near_norm<V>(got[j], o.host(cr(hx[j]), cr(hy[j])), 4,
                          o.size ? o.size(cr(hx[j]), cr(hy[j])) : R(0))) {
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
      {"T(norm(x), real(x) - imag(x))",
       [](CR a, CR) { return CR(std::norm(a), a.real() - a.imag()); }, 4},
      {"polar(abs(x), arg(y))", [](CR a, CR b) { return std::polar(std::abs(a), std::arg(b)); },
       16},
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
          if (++bad <= 3)
            UNSCOPED_INFO("x " << hx[j] << " y " << hy[j] << " got " << got[j] << " want "
                               << f.host(a, b));
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

TEST_CASE("complex kernels divide like NumPy at zero and keep signed zeros",
          "[gpu][ops][complex]") {
  typedef std::complex<double> C;
  const double inf = std::numeric_limits<double>::infinity();
  const auto got =
      run<double>("x / y", {C(1, 2), C(-3, 0.5), C(0, 0)}, {C(0, 0), C(0, 0), C(0, 0)});
  // NumPy: each part divided by |0|: (1/0, 2/0) = (inf, inf); 0/0 is nan.
  CHECK(got[0] == C(inf, inf));
  CHECK(got[1] == C(-inf, inf));
  CHECK((std::isnan(got[2].real()) && std::isnan(got[2].imag())));
  const auto s =
      run<double>("sqrt(x)", {C(-4, 0.0), C(-4, -0.0), C(4, -0.0)}, {C(1, 1), C(1, 1), C(1, 1)});
  CHECK(s[0] == C(0, 2));
  CHECK(s[1] == C(0, -2));
  CHECK((s[2] == C(2, 0) && std::signbit(s[2].imag())));
}

namespace {

template <class V>
std::vector<std::complex<V>> narrow_all(const std::vector<std::complex<double>>& v) {
  std::vector<std::complex<V>> out;
  for (const auto& z : v) out.emplace_back(V(z.real()), V(z.imag()));
  return out;
}

// e evaluated into a poisoned output of e's dtype, back on the host as complex<double>.
template <class O>
std::vector<std::complex<double>> run_golden(const expr& e, std::size_t n) {
  auto out = asarray<O>(std::vector<O>(n, O(-777)));
  eval_into(e, out);
  std::vector<std::complex<double>> r;
  for (const auto& v : out.template get<O>()) r.emplace_back(std::complex<double>(v));
  return r;
}

const std::vector<std::pair<std::string, std::function<expr(const ndarray&)>>>& golden_unary() {
  static const std::vector<std::pair<std::string, std::function<expr(const ndarray&)>>> v = {
      {"sqrt", [](const ndarray& a) { return kiln::sqrt(a); }},
      {"exp", [](const ndarray& a) { return kiln::exp(a); }},
      {"exp2", [](const ndarray& a) { return kiln::exp2(a); }},
      {"expm1", [](const ndarray& a) { return kiln::expm1(a); }},
      {"log", [](const ndarray& a) { return kiln::log(a); }},
      {"log2", [](const ndarray& a) { return kiln::log2(a); }},
      {"log10", [](const ndarray& a) { return kiln::log10(a); }},
      {"log1p", [](const ndarray& a) { return kiln::log1p(a); }},
      {"sin", [](const ndarray& a) { return kiln::sin(a); }},
      {"cos", [](const ndarray& a) { return kiln::cos(a); }},
      {"tan", [](const ndarray& a) { return kiln::tan(a); }},
      {"sinh", [](const ndarray& a) { return kiln::sinh(a); }},
      {"cosh", [](const ndarray& a) { return kiln::cosh(a); }},
      {"tanh", [](const ndarray& a) { return kiln::tanh(a); }},
      {"arcsin", [](const ndarray& a) { return kiln::arcsin(a); }},
      {"arccos", [](const ndarray& a) { return kiln::arccos(a); }},
      {"arctan", [](const ndarray& a) { return kiln::arctan(a); }},
      {"arcsinh", [](const ndarray& a) { return kiln::arcsinh(a); }},
      {"arccosh", [](const ndarray& a) { return kiln::arccosh(a); }},
      {"arctanh", [](const ndarray& a) { return kiln::arctanh(a); }},
      {"sign", [](const ndarray& a) { return kiln::sign(a); }},
      {"reciprocal", [](const ndarray& a) { return kiln::reciprocal(a); }},
      {"square", [](const ndarray& a) { return kiln::square(a); }},
  };
  return v;
}

// How a function runs on the device: through kiln's expressions (the user's path, default
// NVRTC options), or as an ElementwiseKernel over the op table's device expression with
// -ftz=false (the same device code, float32 subnormals kept as NumPy keeps them: with CuPy's
// default -ftz=true a complex64 result that passes through a subnormal can differ).
enum class path { expression, kernel_no_ftz };

const codegen::op_row& row_named(const std::string& name) {
  for (int k = 0; k < codegen::kNumOps; ++k)
    if (codegen::op_info(codegen::op_id(k)).name == name)
      return codegen::op_info(codegen::op_id(k));
  FAIL("no op " << name);
  return codegen::op_info(codegen::op_id(0));
}

template <class O>
std::vector<std::complex<double>> to_wide(const ndarray& out) {
  std::vector<std::complex<double>> r;
  for (const auto& v : out.template get<O>()) r.emplace_back(std::complex<double>(v));
  return r;
}

// name(a[, b]) on the device, as complex<double>; O: the result's host type.
template <class O>
std::vector<std::complex<double>> run_op(path p, const std::string& name, const ndarray& a,
                                         const ndarray* b) {
  if (p == path::expression) {
    static const std::map<std::string, std::function<expr(const ndarray&)>> unary = [] {
      std::map<std::string, std::function<expr(const ndarray&)>> m(golden_unary().begin(),
                                                                   golden_unary().end());
      m["absolute"] = [](const ndarray& x) { return kiln::abs(x); };
      m["angle"] = [](const ndarray& x) { return kiln::angle(x); };
      return m;
    }();
    if (!b) return run_golden<O>(unary.at(name)(a), std::size_t(a.size()));
    const expr e = name == "divide" ? a / *b : name == "multiply" ? a * *b : kiln::power(a, *b);
    return run_golden<O>(e, std::size_t(a.size()));
  }
  const codegen::op_row& row = row_named(name);
  std::string code(row.device);
  for (auto at = code.find("$0"); at != std::string::npos; at = code.find("$0"))
    code.replace(at, 2, "x");
  for (auto at = code.find("$1"); at != std::string::npos; at = code.find("$1"))
    code.replace(at, 2, "y");
  const dtype out_t = dtype_of<O>();
  ElementwiseKernel k(
      b ? "T x, T y" : "T x", std::string(out_t.name()) + " z", "z = " + code, "golden_" + name,
      {.preamble = codegen::expression_helpers(row.helpers), .options = {"-ftz=false"}});
  ndarray out = asarray<O>(std::vector<O>(std::size_t(a.size()), O(-777)));
  if (b)
    k(a, *b, out);
  else
    k(a, out);
  return to_wide<O>(out);
}

template <class V>
void check_golden(const std::string& dtype, path p) {
  typedef std::complex<V> C;
  const auto& t = test::complex_golden().at(dtype);
  const bool single = std::is_same_v<V, float>;
  const auto x = asarray<C>(narrow_all<V>(t.grid));
  const test::part_rule rule{single, 16};
  int failed = 0;
  auto report = [&](const std::string& name, const std::vector<std::complex<double>>& got,
                    const std::vector<std::complex<double>>& want,
                    const std::vector<std::complex<double>>& in,
                    const std::vector<std::complex<double>>* in2, auto&& rule_for) {
    int bad = 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
      const std::string why = test::complex_mismatch(got[k], want[k], rule_for(k));
      if (why.empty()) continue;
      if (++bad <= 40)
        UNSCOPED_INFO(dtype << " " << name << in[k] << (in2 ? " " : "")
                            << (in2 ? (*in2)[k] : std::complex<double>()) << " = " << got[k]
                            << ", NumPy " << want[k] << ": " << why);
    }
    if (bad)
      UNSCOPED_INFO(dtype << " " << name << ": " << bad << " of " << want.size() << " differ");
    failed += bad != 0;
  };
  for (const auto& [name, fn] : golden_unary())
    report(name, run_op<C>(p, name, x, nullptr), t.unary.at(name), t.grid, nullptr,
           [&](std::size_t) { return rule; });
  for (const std::string name : {"absolute", "angle"}) {
    const auto& want = t.real.at(name);
    std::vector<std::complex<double>> w(want.begin(), want.end());
    report(name, run_op<V>(p, name, x, nullptr), w, t.grid, nullptr,
           [&](std::size_t) { return rule; });
  }
  const auto a = asarray<C>(narrow_all<V>(t.a)), b = asarray<C>(narrow_all<V>(t.b));
  const test::part_rule exact{single, 0};
  for (const std::string name : {"divide", "multiply"})
    report(name, run_op<C>(p, name, a, &b), t.binary.at(name), t.a, &t.b,
           [&](std::size_t) { return exact; });
  const auto& pw = t.binary.at("power");
  auto finite = [](std::complex<double> z) {
    return std::isfinite(z.real()) && std::isfinite(z.imag());
  };
  report("power", run_op<C>(p, "power", a, &b), pw, t.a, &t.b, [&](std::size_t k) {
    test::part_rule r = rule;
    r.norm_scale = test::power_error_scale(t.a[k], t.b[k], pw[k]);
    // Annex G gives cpow no special values: with an inf or nan operand, NumPy's (glibc's) zero
    // signs come from the sign of a NaN made along the way, which the C standard leaves open.
    // And where |b log a| times epsilon passes 0.1, the phase of exp(b log a) is noise: an
    // overflowed or underflowed result's signs are no one's to match.
    const double eps = single ? 0x1p-23 : 0x1p-52;
    const double phase_noise = std::abs(t.b[k]) * std::abs(std::log(t.a[k])) * eps;
    r.open_sign = !finite(t.a[k]) || !finite(t.b[k]) || phase_noise > 0.1;
    return r;
  });
  CHECK(failed == 0);
}

}  // namespace

TEST_CASE(
    "complex functions on the GPU give NumPy's values, branch cuts, signed zeros and "
    "infinities",
    "[gpu][ops][complex]") {
  SECTION("complex64") { check_golden<float>("complex64", path::kernel_no_ftz); }
  SECTION("complex128") { check_golden<double>("complex128", path::kernel_no_ftz); }
}

TEST_CASE("complex expressions on the GPU give NumPy's values for the whole golden table",
          "[gpu][ops][complex]") {
  // complex128 (NVRTC's -ftz=true, the default, touches float32 only).
  check_golden<double>("complex128", path::expression);
}

TEST_CASE(
    "complex a / a on the GPU is NumPy's bit for bit and expm1, log1p keep small "
    "arguments' digits",
    "[gpu][ops][complex]") {
  typedef std::complex<double> C;
  // a / a over the golden table's finite non-zero rows with a == b, against NumPy's quotient
  // (1 + 0j for most; 49 / 49 is 1 - 2^-53 in NumPy too).
  const auto& t = test::complex_golden().at("complex128");
  std::vector<C> a, want;
  for (std::size_t k = 0; k < t.a.size(); ++k)
    if (t.a[k] == t.b[k] && std::isfinite(t.a[k].real()) && std::isfinite(t.a[k].imag()) &&
        t.a[k] != 0.0) {
      a.push_back(t.a[k]);
      want.push_back(t.binary.at("divide")[k]);
    }
  REQUIRE(a.size() > 300);
  const auto x = asarray<C>(a);
  const auto q = run_golden<C>(x / x, a.size());
  int same = 0, ones = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    same += q[k] == want[k] && std::signbit(q[k].imag()) == std::signbit(want[k].imag());
    ones += q[k] == C(1, 0);
  }
  CHECK(same == int(a.size()));
  CHECK(ones > int(a.size()) / 2);
  // expm1 and log1p near 0 (NumPy's log1p gives 0 for the first two real parts).
  const auto small = asarray<C>({C(0, 1e-30), C(1e-20, 0), C(1e-8, 1e-8)});
  const auto e = run_golden<C>(kiln::expm1(small), 3);
  CHECK(e[0].real() == Approx(-5e-61).epsilon(1e-12));
  CHECK(e[0].imag() == 1e-30);
  CHECK(e[1] == C(1e-20, 0));
  const auto l = run_golden<C>(kiln::log1p(small), 3);
  CHECK(l[0].real() == Approx(5e-61).epsilon(1e-12));
  CHECK(l[1].real() == Approx(1e-20).epsilon(1e-14));
  CHECK(l[2].real() == Approx(1e-8).epsilon(1e-14));
}

// The expressions issue 20 reported, with NumPy 2.4.6's values (complex64 unless noted).
TEST_CASE("the issue's complex expressions give NumPy's values on the GPU", "[gpu][ops][complex]") {
  typedef std::complex<float> C;
  const float inf = std::numeric_limits<float>::infinity();
  auto one = [](const expr& e) { return run_golden<C>(e, 1)[0]; };
  auto z = [](float re, float im) { return asarray<C>({C(re, im)}); };
  const auto s = one(kiln::sin(kiln::sqrt(z(0.26f, inf))));
  CHECK((std::isnan(s.real()) && s.imag() == inf));
  const auto l = one(kiln::log(kiln::tanh(z(-3.4814205f, 0))));
  CHECK(l.imag() == Approx(3.1415927));                    // +pi: tanh keeps the +0 imaginary part
  CHECK(l.real() == Approx(-0.0018927476).epsilon(1e-3));  // log|tanh|: 1 ULP of tanh is 3e-5 of it
  CHECK(one(kiln::sign(z(-inf, -0.97f))) == std::complex<double>(-1, 0));
  const auto t = one(kiln::tanh(z(inf, 1.56f)));
  CHECK((t == std::complex<double>(1, 0) && !std::signbit(t.imag())));
  CHECK(one(kiln::sqrt(z(-2.637582f, 0))).imag() == Approx(1.6240635));
  CHECK(one(kiln::log(z(-3.9360032f, 0))).imag() == Approx(3.1415927));
  CHECK(one(kiln::arcsin(z(1.3550842f, 0))).imag() == Approx(0.8195828));
  CHECK(one(kiln::arctan(z(0, 1.2513849f))).real() == Approx(1.5707964));
  CHECK(one(kiln::arcsinh(z(0, 1.3973596f))).real() == Approx(0.8643147));
  CHECK(one(kiln::arccosh(z(-0.98561853f, 0))).imag() == Approx(2.9717922));
  // complex128: real(cos(expm1(1e300+0.52j))) is inf.
  const auto w = asarray<std::complex<double>>({std::complex<double>(1e300, 0.52)});
  CHECK(run_golden<double>(kiln::real(kiln::cos(kiln::expm1(w))), 1)[0].real() ==
        std::numeric_limits<double>::infinity());
}
