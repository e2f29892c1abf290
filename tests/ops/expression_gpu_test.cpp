// Fused expressions on a GPU: every operator and function against host references on random
// data (never zeros), per dtype class; broadcasting, views, 0-d and empty arrays, in place
// with overlap, kiln::fuse, and the cache (a repeated structure never compiles again).
//
// ULP bounds (CUDA's documented maxima, with margin): float32 and float64 transcendental
// functions within 4 ULP of the correctly rounded double/long double host result (tan,
// power, and the inverse hyperbolics within 8); float16 and bfloat16 computed in float32 then
// rounded once, so within 1 ULP of their own format; arithmetic exact.
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <tuple>
#include <vector>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

template <class T>
bool near_ulp(T got, double ref, double ulps) {
  if (std::isnan(ref)) return std::isnan(double(got));
  if (std::isinf(ref)) return double(got) == ref;
  const double eps = std::numeric_limits<T>::epsilon();
  const double tol = ulps * eps * std::max(std::abs(ref), double(std::numeric_limits<T>::min()));
  return std::abs(double(got) - ref) <= tol;
}

struct Fn1 {
  const char* name;
  std::function<expr(const ndarray&)> dev;
  double (*host)(double);
  int domain;  // 0: any, 1: positive, 2: (-1, 1), 3: >= 1
  double ulps;
};

const std::vector<Fn1>& fns1() {
  static const std::vector<Fn1> v = {
      {"sin", [](const ndarray& a) { return kiln::sin(a); }, [](double x) { return std::sin(x); },
       0, 4},
      {"cos", [](const ndarray& a) { return kiln::cos(a); }, [](double x) { return std::cos(x); },
       0, 4},
      {"tan", [](const ndarray& a) { return kiln::tan(a); }, [](double x) { return std::tan(x); },
       2, 8},
      {"arcsin", [](const ndarray& a) { return kiln::arcsin(a); },
       [](double x) { return std::asin(x); }, 2, 4},
      {"arccos", [](const ndarray& a) { return kiln::arccos(a); },
       [](double x) { return std::acos(x); }, 2, 4},
      {"arctan", [](const ndarray& a) { return kiln::arctan(a); },
       [](double x) { return std::atan(x); }, 0, 4},
      {"sinh", [](const ndarray& a) { return kiln::sinh(a); },
       [](double x) { return std::sinh(x); }, 2, 4},
      {"cosh", [](const ndarray& a) { return kiln::cosh(a); },
       [](double x) { return std::cosh(x); }, 2, 4},
      {"tanh", [](const ndarray& a) { return kiln::tanh(a); },
       [](double x) { return std::tanh(x); }, 0, 4},
      {"arcsinh", [](const ndarray& a) { return kiln::arcsinh(a); },
       [](double x) { return std::asinh(x); }, 0, 8},
      {"arccosh", [](const ndarray& a) { return kiln::arccosh(a); },
       [](double x) { return std::acosh(x); }, 3, 8},
      {"arctanh", [](const ndarray& a) { return kiln::arctanh(a); },
       [](double x) { return std::atanh(x); }, 2, 8},
      {"exp", [](const ndarray& a) { return kiln::exp(a); }, [](double x) { return std::exp(x); },
       0, 4},
      {"exp2", [](const ndarray& a) { return kiln::exp2(a); },
       [](double x) { return std::exp2(x); }, 0, 4},
      {"expm1", [](const ndarray& a) { return kiln::expm1(a); },
       [](double x) { return std::expm1(x); }, 2, 4},
      {"log", [](const ndarray& a) { return kiln::log(a); }, [](double x) { return std::log(x); },
       1, 4},
      {"log2", [](const ndarray& a) { return kiln::log2(a); },
       [](double x) { return std::log2(x); }, 1, 4},
      {"log10", [](const ndarray& a) { return kiln::log10(a); },
       [](double x) { return std::log10(x); }, 1, 4},
      {"log1p", [](const ndarray& a) { return kiln::log1p(a); },
       [](double x) { return std::log1p(x); }, 1, 4},
      {"sqrt", [](const ndarray& a) { return kiln::sqrt(a); },
       [](double x) { return std::sqrt(x); }, 1, 1},
      {"cbrt", [](const ndarray& a) { return kiln::cbrt(a); },
       [](double x) { return std::cbrt(x); }, 0, 4},
      {"square", [](const ndarray& a) { return kiln::square(a); }, [](double x) { return x * x; },
       0, 1},
      {"reciprocal", [](const ndarray& a) { return kiln::reciprocal(a); },
       [](double x) { return 1 / x; }, 0, 1},
      {"floor", [](const ndarray& a) { return kiln::floor(a); },
       [](double x) { return std::floor(x); }, 0, 0},
      {"ceil", [](const ndarray& a) { return kiln::ceil(a); },
       [](double x) { return std::ceil(x); }, 0, 0},
      {"trunc", [](const ndarray& a) { return kiln::trunc(a); },
       [](double x) { return std::trunc(x); }, 0, 0},
      {"rint", [](const ndarray& a) { return kiln::rint(a); },
       [](double x) { return std::nearbyint(x); }, 0, 0},
      {"sign", [](const ndarray& a) { return kiln::sign(a); },
       [](double x) { return double((x > 0) - (x < 0)); }, 0, 0},
      {"absolute", [](const ndarray& a) { return kiln::abs(a); },
       [](double x) { return std::abs(x); }, 0, 0},
      {"negative", [](const ndarray& a) { return -a; }, [](double x) { return -x; }, 0, 0},
  };
  return v;
}

std::vector<double> inputs(std::size_t n, int domain) {
  auto v = test::random_vector<double>(n, -8, 8);
  for (auto& x : v) {
    if (domain == 1) x = std::abs(x) + 0.25;
    if (domain == 2) x = std::fmod(x, 0.95);
    if (domain == 3) x = std::abs(x) + 1;
  }
  return v;
}

template <class T>
void check_float_functions() {
  const std::size_t n = 4099;  // not a multiple of any vector width
  for (const auto& f : fns1()) {
    INFO(f.name << " " << dtype_of<T>().name());
    const auto hv = inputs(n, f.domain);
    std::vector<T> h(hv.begin(), hv.end());
    auto x = asarray<T>(h);
    ndarray z = f.dev(x);
    REQUIRE(z.dtype() == dtype_of<T>());
    const auto got = z.get<T>();
    int bad = 0;
    for (std::size_t k = 0; k < n; ++k)
      if (!near_ulp<T>(got[k], f.host(double(h[k])), f.ulps == 0 ? 0.5 : f.ulps)) ++bad;
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("sin(x) * 5 + y * y runs as one kernel on float32 and float64 with broadcasting",
          "[gpu][ops]") {
  auto hx = test::random_vector<float>(6 * 257), hy = test::random_vector<float>(257);
  auto x = asarray<float>(hx, Shape{6, 257}), y = asarray<float>(hy);
  ndarray z = kiln::sin(x) * 5 + y * y;
  CHECK(z.shape() == Shape{6, 257});
  CHECK(z.dtype() == float32);
  const auto g = z.get<float>();
  for (std::size_t k = 0; k < g.size(); ++k) {
    const double ref = std::sin(double(hx[k])) * 5 + double(hy[k % 257]) * hy[k % 257];
    CHECK(std::abs(g[k] - ref) <= 1e-4 * std::max(1.0, std::abs(ref)));
  }
  auto x64 = x.astype(float64), y64 = y.astype(float64);
  ndarray z64 = kiln::sin(x64) * 5 + y64 * y64;
  const auto g64 = z64.get<double>();
  for (std::size_t k = 0; k < g64.size(); ++k) {
    const double ref = std::sin(double(hx[k])) * 5 + double(hy[k % 257]) * hy[k % 257];
    CHECK(std::abs(g64[k] - ref) <= 1e-12 * std::max(1.0, std::abs(ref)));
  }
}

TEST_CASE("every math function matches the host within its ULP bound on float32 and float64",
          "[gpu][ops]") {
  check_float_functions<float>();
  check_float_functions<double>();
}

TEST_CASE("float16 and bfloat16 compute in float32 and round once", "[gpu][ops]") {
  auto hv = inputs(1000, 0);
  std::vector<half> h;
  std::vector<bf16> hb;
  for (double v : hv) h.push_back(half(float(v))), hb.push_back(bf16(float(v)));
  ndarray z = kiln::sin(asarray<half>(h)) * 2.5;
  ndarray zb = kiln::sin(asarray<bf16>(hb)) * 2.5;
  CHECK(z.dtype() == float16);
  CHECK(zb.dtype() == bfloat16);
  const auto g = z.get<half>();
  const auto gb = zb.get<bf16>();
  int bad = 0;
  for (std::size_t k = 0; k < h.size(); ++k) {
    // NumPy: the weak 2.5 becomes float16, the loop computes in float32, one rounding.
    const float ref = float(half(std::sin(float(h[k])))) * float(half(2.5f));
    if (std::abs(float(g[k]) - float(half(ref))) > 2e-3f * std::max(1.0f, std::abs(ref))) ++bad;
    const float refb = float(bf16(std::sin(float(hb[k])))) * 2.5f;  // 2.5 is exact in bfloat16
    if (std::abs(float(gb[k]) - refb) > 1.6e-2f * std::max(1.0f, std::abs(refb))) ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE(
    "integer arithmetic follows NumPy; floor division and remainder signs, division by "
    "zero gives 0, int / int is float64",
    "[gpu][ops]") {
  const std::size_t n = 1001;
  auto ha = test::random_vector<std::int32_t>(n, -50, 50),
       hb = test::random_vector<std::int32_t>(n, -7, 7);
  for (std::size_t k = 0; k < n; k += 10) hb[k] = 0;  // division by zero on purpose
  auto a = asarray<std::int32_t>(ha), b = asarray<std::int32_t>(hb);
  const auto fd = ndarray(kiln::floor_divide(a, b)).get<std::int32_t>();
  const auto md = ndarray(a % b).get<std::int32_t>();
  const auto dv = ndarray(a / b).get<double>();
  const auto pw = ndarray(kiln::power(a, 3)).get<std::int32_t>();
  const auto sh = ndarray((a << 3) ^ (a >> 2)).get<std::int32_t>();
  const auto cmp = ndarray((a < b) & (a != 3)).get<bool>();
  for (std::size_t k = 0; k < n; ++k) {
    const std::int32_t x = ha[k], y = hb[k];
    INFO(x << " " << y);
    if (y == 0) {
      CHECK(fd[k] == 0);
      CHECK(md[k] == 0);
    } else {
      CHECK(fd[k] == std::int32_t(std::floor(double(x) / y)));
      CHECK(md[k] == x - std::int32_t(std::floor(double(x) / y)) * y);
      CHECK(dv[k] == double(x) / double(y));
    }
    CHECK(pw[k] == x * x * x);
    CHECK(sh[k] == ((x << 3) ^ (x >> 2)));
    CHECK(cmp[k] == ((x < y) && (x != 3)));
  }
  // uint8 wraps like NumPy; x_u8 + 1 stays uint8.
  std::vector<std::uint8_t> hu{250, 3, 7, 255};
  auto u = asarray<std::uint8_t>(hu);
  ndarray s = u + 10;
  CHECK(s.dtype() == uint8);
  CHECK(s.get<std::uint8_t>() == std::vector<std::uint8_t>{4, 13, 17, 9});
}

TEST_CASE("comparisons, where, clip, maximum with NaN, isnan and astype inside one expression",
          "[gpu][ops]") {
  std::vector<double> hx{1.5, -2, std::nan(""), 7, -0.5}, hy{2, -3, 1, std::nan(""), 0.25};
  auto x = asarray<double>(hx), y = asarray<double>(hy);
  const auto m = ndarray(kiln::maximum(x, y)).get<double>();
  CHECK(m[0] == 2);
  CHECK(m[1] == -2);
  CHECK(std::isnan(m[2]));
  CHECK(std::isnan(m[3]));
  const auto fm = ndarray(kiln::fmax(x, y)).get<double>();
  CHECK(fm[2] == 1);
  CHECK(fm[3] == 7);
  const auto w = ndarray(kiln::where(x > 0, x, 0)).get<double>();
  CHECK(w == std::vector<double>{1.5, 0, 0, 7, 0});
  const auto c = ndarray(kiln::clip(y, -1, 1)).get<double>();
  CHECK(c[0] == 1);
  CHECK(c[1] == -1);
  const auto nanmask = ndarray(kiln::isnan(x) | kiln::isnan(y)).get<bool>();
  CHECK(nanmask == std::vector<bool>{false, false, true, true, false});
  const auto i = ndarray(kiln::astype(x * 2, int16)).dtype();
  CHECK(i == int16);
}

TEST_CASE("complex arithmetic, abs, real, imag, conj and angle", "[gpu][ops]") {
  using C = std::complex<float>;
  std::vector<C> h{{1, 2}, {-3, 0.5f}, {0.25f, -4}};
  auto z = asarray<C>(h);
  const auto r = ndarray(z * z + C(1, -1)).get<C>();
  const auto a = ndarray(kiln::abs(z)).get<float>();
  const auto an = ndarray(kiln::angle(z)).get<float>();
  const auto cj = ndarray(kiln::conj(z)).get<C>();
  const auto im = ndarray(kiln::imag(z)).get<float>();
  for (std::size_t k = 0; k < h.size(); ++k) {
    CHECK(std::abs(r[k] - (h[k] * h[k] + C(1, -1))) < 1e-5f);
    CHECK(std::abs(a[k] - std::abs(h[k])) < 1e-5f);
    CHECK(std::abs(an[k] - std::arg(h[k])) < 1e-5f);
    CHECK(cj[k] == std::conj(h[k]));
    CHECK(im[k] == h[k].imag());
  }
}

TEST_CASE("expressions on transposed and sliced views, 0-d and empty arrays", "[gpu][ops]") {
  auto hx = test::random_vector<float>(12 * 9);
  auto x = asarray<float>(hx, Shape{12, 9});
  auto t = x.T();  // (9, 12), not contiguous
  auto s = x(slice(1, std::nullopt, 2), slice(std::nullopt, std::nullopt, -3));  // (6, 3)
  const auto g = ndarray(t * 2 + 1).get<float>();
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 12; ++j)
      CHECK(g[std::size_t(i * 12 + j)] == hx[std::size_t(j * 9 + i)] * 2 + 1);
  const auto gs = ndarray(s - 1).get<float>();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 3; ++j)
      CHECK(gs[std::size_t(i * 3 + j)] == hx[std::size_t((1 + 2 * i) * 9 + (8 - 3 * j))] - 1);
  auto zero_d = asarray<double>({2.5}, Shape{});
  ndarray z0 = zero_d * zero_d + 1;
  CHECK(z0.ndim() == 0);
  CHECK(z0.get<double>() == std::vector<double>{7.25});
  auto empty = asarray<float>(std::vector<float>{}, Shape{0, 3});
  ndarray ze = kiln::sin(empty) + 1;
  CHECK(ze.shape() == Shape{0, 3});
}

TEST_CASE("in-place operators write x in one kernel, with NumPy's results under overlap",
          "[gpu][ops]") {
  auto hx = test::random_vector<double>(1000);
  auto x = asarray<double>(hx);
  x *= 5;
  x += x * 2;
  auto g = x.get<double>();
  for (std::size_t k = 0; k < hx.size(); ++k) CHECK(g[k] == hx[k] * 5 + hx[k] * 5 * 2);
  // x += x[::-1]: as if the reversed input were copied first.
  auto y = asarray<double>(hx);
  y += y(slice(std::nullopt, std::nullopt, -1));
  g = y.get<double>();
  for (std::size_t k = 0; k < hx.size(); ++k) CHECK(g[k] == hx[k] + hx[hx.size() - 1 - k]);
  // same_kind casting: float32 += float64 computes in float64 and stores float32.
  auto hf = test::random_vector<float>(100);
  auto f = asarray<float>(hf);
  f += asarray<double>(std::vector<double>(100, 0.1));
  const auto gf = f.get<float>();
  for (std::size_t k = 0; k < hf.size(); ++k) CHECK(gf[k] == float(double(hf[k]) + 0.1));
  auto i = asarray<std::int32_t>({1, 2, 3});
  CHECK_THROWS_AS(i += 2.5, TypeError);  // int32 += float64 is not same_kind
  CHECK_THROWS_AS(i += asarray<std::int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3}), ValueError);
}

TEST_CASE("fuse runs a lambda as one kernel; tuples of outputs and in-place arguments",
          "[gpu][ops]") {
  auto hx = test::random_vector<float>(500), hy = test::random_vector<float>(500);
  auto x = asarray<float>(hx), y = asarray<float>(hy);
  auto f = kiln::fuse([](auto a, auto b) { return kiln::sin(a) * 5 + b * b; });
  ndarray z = f(x, y);
  auto g = kiln::fuse([](auto a, auto b) { return std::make_tuple(a + b, a - b); });
  auto [s, d] = g(x, y);
  auto h = kiln::fuse([](auto& a, auto b, double c) {
    a *= c;
    a += b;
  });
  auto x2 = x.copy();
  h(x2, y, 2.0);
  const auto gz = z.get<float>(), gs = s.get<float>(), gd = d.get<float>(), gx = x2.get<float>();
  for (std::size_t k = 0; k < hx.size(); ++k) {
    CHECK(std::abs(gz[k] - (std::sin(hx[k]) * 5 + hy[k] * hy[k])) <
          1e-4f * std::max(1.0f, std::abs(gz[k])));
    CHECK(gs[k] == hx[k] + hy[k]);
    CHECK(gd[k] == hx[k] - hy[k]);
    CHECK(gx[k] == float(double(float(hx[k] * 2.0)) + hy[k]));
  }
}

TEST_CASE("a repeated expression structure compiles once; scalar values are arguments",
          "[gpu][ops]") {
  auto x = asarray<float>(test::random_vector<float>(64));
  ndarray a = x * 5.0f + 1;  // may compile
  const auto before = cache::stats().nvrtc_compiles.load();
  ndarray b = x * 6.0f + 2;
  ndarray c = x * 7.0f + 3;
  CHECK(cache::stats().nvrtc_compiles.load() == before);
  const auto ga = a.get<float>(), gc = c.get<float>();
  const auto hx = x.get<float>();
  // The device contracts x * 5 + 1 into one fused multiply-add (as CuPy's kernels do): one
  // rounding instead of two, so allow a float32 ulp.
  for (std::size_t k = 0; k < hx.size(); ++k) {
    CHECK(ga[k] == Approx(double(hx[k]) * 5 + 1).epsilon(2e-7).margin(1e-6));
    CHECK(gc[k] == Approx(double(hx[k]) * 7 + 3).epsilon(2e-7).margin(1e-6));
  }
}

TEST_CASE("a very large expression splits into parts and still gives the right values",
          "[gpu][ops]") {
  auto hx = test::random_vector<double>(300, 0.5, 1.0);
  auto x = asarray<double>(hx);
  expr e = x;
  for (int k = 0; k < 150; ++k) e = e * 0.5 + x;
  ndarray z = e;
  const auto g = z.get<double>();
  for (std::size_t i = 0; i < hx.size(); ++i) {
    double r = hx[i];
    for (int k = 0; k < 150; ++k) r = r * 0.5 + hx[i];
    CHECK(std::abs(g[i] - r) <= 1e-12 * r);
  }
}
