// One-pass moments on a GPU: var, std, var_mean and std_mean against float64 two-pass host
// references, on data far from zero (where a naive one-pass formula loses every digit), with
// NumPy's NaN, inf, single-element, ddof and float16 rules; outputs poisoned first.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

using kiln::test::poisoned;

// Two-pass mean and variance in float64 of float32 data (the values the GPU sees).
std::pair<double, double> two_pass(const float* x, std::size_t n, std::size_t step = 1) {
  double s = 0;
  for (std::size_t k = 0; k < n; ++k) s += x[k * step];
  const double m = s / double(n);
  double q = 0;
  for (std::size_t k = 0; k < n; ++k) q += (x[k * step] - m) * (x[k * step] - m);
  return {m, q / double(n)};
}

// NumPy's float32 two-pass variance (mean by float32 pairwise sums, then float32 squares
// summed pairwise): the accuracy kiln's one pass must match.
double numpy_var_error(const std::vector<float>& x, double exact) {
  auto pairwise = [](auto&& self, const float* v, std::size_t n) -> float {
    if (n <= 8) {
      float s = 0;
      for (std::size_t k = 0; k < n; ++k) s += v[k];
      return s;
    }
    return self(self, v, n / 2) + self(self, v + n / 2, n - n / 2);
  };
  const float mean = pairwise(pairwise, x.data(), x.size()) / float(x.size());
  std::vector<float> d(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) d[k] = (x[k] - mean) * (x[k] - mean);
  const double v = double(pairwise(pairwise, d.data(), d.size()) / float(x.size()));
  return std::abs(v - exact) / exact;
}

}  // namespace

TEST_CASE("var and std in one pass are as accurate as NumPy's two passes far from zero",
          "[ops][gpu]") {
  std::mt19937_64 rng(7);
  for (double offset : {0.0, 1e3, 1e5}) {
    std::normal_distribution<float> dist(float(offset), 1.0f);
    std::vector<float> h(1 << 22);
    for (auto& v : h) v = dist(rng);
    const ndarray x = asarray(h);
    const auto [m, v] = two_pass(h.data(), h.size());
    const double numpy_err = numpy_var_error(h, v);
    ndarray got = poisoned({}, float32);
    var(x, {}, false, {.out = got});
    const double err = std::abs(double(got.get<float>()[0]) - v) / v;
    INFO("offset " << offset << ": kiln error " << err << ", NumPy's " << numpy_err);
    CHECK(err <= std::max(4 * numpy_err, 2e-6));
    const double sd = double(kiln::std(x).get<float>()[0]);
    CHECK(std::abs(sd - std::sqrt(v)) <= std::max(4 * numpy_err, 2e-6) * std::sqrt(v));
  }
}

TEST_CASE("var_mean and std_mean give both statistics of an axis set in one call", "[ops][gpu]") {
  const Shape shape{8, 32, 14, 14};
  auto h = test::random_vector<float>(std::size_t(shape_size(shape)), 10, 14);
  const ndarray x = asarray(h, shape);
  const auto [v, m] = var_mean(x, {0, 2, 3}, true, {.ddof = 1});
  CHECK(v.shape() == Shape{1, 32, 1, 1});
  CHECK(m.shape() == Shape{1, 32, 1, 1});
  const auto [s, m2] = std_mean(x, {0, 2, 3});
  const auto hv = v.get<float>(), hm = m.get<float>(), hs = s.get<float>(), hm2 = m2.get<float>();
  for (std::int64_t c = 0; c < 32; ++c) {
    std::vector<float> g;
    for (std::int64_t n = 0; n < 8; ++n)
      for (std::int64_t k = 0; k < 196; ++k) g.push_back(h[std::size_t((n * 32 + c) * 196 + k)]);
    const auto [wm, wv] = two_pass(g.data(), g.size());
    const double n = double(g.size());
    CHECK(std::abs(hm[std::size_t(c)] - wm) <= 1e-5 * std::abs(wm));
    CHECK(std::abs(hm2[std::size_t(c)] - wm) <= 1e-5 * std::abs(wm));
    CHECK(std::abs(hv[std::size_t(c)] - wv * n / (n - 1)) <= 1e-4 * wv);
    CHECK(std::abs(hs[std::size_t(c)] - std::sqrt(wv)) <= 1e-4 * std::sqrt(wv));
  }
  // int inputs give float64; an expression fuses (one kernel reads x and y).
  const auto [vi, mi] = var_mean(asarray<std::int32_t>({1, 2, 3, 4}));
  CHECK(vi.dtype() == float64);
  CHECK(vi.get<double>()[0] == 1.25);
  CHECK(mi.get<double>()[0] == 2.5);
  const auto [ve, me] = var_mean(x * 2 - 20, {0, 2, 3});
  const auto hve = ve.get<float>();
  for (std::int64_t c = 0; c < 32; ++c)
    CHECK(std::abs(hve[std::size_t(c)] - 4 * hv[std::size_t(c)] * 1567 / 1568) <=
          1e-3 * hve[std::size_t(c)]);
  (void)me;
}

TEST_CASE("moments propagate NaN and inf and handle one element as NumPy", "[ops][gpu]") {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(var(asarray<float>({3.0f})).get<float>()[0] == 0.0f);
  CHECK(std::isnan(var(asarray<float>({inf})).get<float>()[0]));
  CHECK(std::isnan(var(asarray<float>({nan})).get<float>()[0]));
  CHECK(std::isnan(var(asarray<float>({1.0f, inf, 2.0f})).get<float>()[0]));
  CHECK(std::isnan(var(asarray<float>({-inf, -inf})).get<float>()[0]));
  CHECK(std::isnan(std::get<1>(var_mean(asarray<float>({1.0f, nan}))).get<float>()[0]));
  CHECK(std::isinf(std::get<1>(var_mean(asarray<float>({1.0f, inf}))).get<float>()[0]));
  // ddof >= n: NumPy divides by max(n - ddof, 0): inf, or NaN for zero deviations.
  CHECK(std::isinf(var(asarray<float>({1.0f, 2.0f}), {}, false, {.ddof = 2}).get<float>()[0]));
  CHECK(std::isnan(var(asarray<float>({2.0f, 2.0f}), {}, false, {.ddof = 3}).get<float>()[0]));
  // Empty: NaN.
  CHECK(std::isnan(var(empty({0}, float32)).get<float>()[0]));
  // Equal values: exactly 0, never a rounding-negative.
  CHECK(var(full({100001}, 0.1f)).get<float>()[0] == 0.0f);
}

TEST_CASE("float16 moments accumulate in float32 and round once", "[ops][gpu]") {
  std::vector<half> h;
  std::vector<float> f;
  for (float v : test::random_vector<float>(50001, 1, 3)) {
    h.emplace_back(v);
    f.push_back(float(h.back()));
  }
  const ndarray x = asarray(h);
  const auto [v, m] = var_mean(x);
  REQUIRE(v.dtype() == float16);
  const auto [wm, wv] = two_pass(f.data(), f.size());
  CHECK(std::abs(double(float(m.get<half>()[0])) - wm) <= 2e-3 * wm);
  CHECK(std::abs(double(float(v.get<half>()[0])) - wv) <= 2e-3 * wv);
}
