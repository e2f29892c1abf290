// Built-in reductions and ndarray members on a GPU against float64 host references (exact for
// integers), NumPy's dtypes and NaN rules.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

double host_sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s;
}

bool close(double got, double want, double rel = 1e-5) {
  return std::abs(got - want) <= rel * (1 + std::abs(want));
}

// A float32 sum of mixed signs can be small beside its terms: its rounding error scales with
// the sum of |terms| (a tree of partial sums: about log2(n) * eps of it), not with the result.
double abs_sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += std::abs(double(x));
  return s;
}
bool close_sum(double got, double want, double terms) {
  return std::abs(got - want) <= 1e-6 * terms;
}

}  // namespace

TEST_CASE("sum, mean, var, std, min, max of float32 match the host", "[ops][gpu]") {
  const std::size_t n = 3000017;
  auto h = test::random_vector<float>(n);
  ndarray x = asarray(h);
  const double s = host_sum(h), m = s / double(n);
  double ss = 0, mn = 1e30, mx = -1e30;
  for (float v : h)
    ss += (v - m) * (v - m), mn = std::min<double>(mn, v), mx = std::max<double>(mx, v);
  const double terms = abs_sum(h);
  CHECK(close_sum(sum(x).get<float>()[0], s, terms));
  CHECK(close_sum(x.sum().get<float>()[0], s, terms));
  CHECK(close_sum(mean(x).get<float>()[0], m, terms / double(n)));
  CHECK(close(var(x).get<float>()[0], ss / double(n), 1e-4));
  CHECK(close(var(x, {}, false, {.ddof = 1}).get<float>()[0], ss / double(n - 1), 1e-4));
  CHECK(close(x.std().get<float>()[0], std::sqrt(ss / double(n)), 1e-4));
  CHECK(min(x).get<float>()[0] == float(mn));
  CHECK(x.max().get<float>()[0] == float(mx));
  CHECK(sum(x).dtype() == float32);
  CHECK(close(linalg::norm(x).get<float>()[0], std::sqrt([&] {
                double q = 0;
                for (float v : h) q += double(v) * v;
                return q;
              }()),
              1e-5));
}

TEST_CASE("integer sums are exact with NumPy's dtypes, and wrap when asked", "[ops][gpu]") {
  auto h = test::random_vector<std::int8_t>(100001);
  ndarray x = asarray(h);
  std::int64_t s = 0;
  std::int8_t wrapped = 0;
  for (auto v : h) s += v, wrapped = std::int8_t(wrapped + v);
  ndarray r = sum(x);
  CHECK(r.dtype() == int64);
  CHECK(r.get<std::int64_t>()[0] == s);
  CHECK(sum(x, {}, false, {.dtype = int8}).get<std::int8_t>()[0] == wrapped);
  auto u = test::random_vector<std::uint16_t>(999);
  CHECK(sum(asarray(u)).dtype() == uint64);
  CHECK(mean(x).dtype() == float64);
  CHECK(count_nonzero(x).get<std::int64_t>()[0] ==
        std::int64_t(h.size()));  // random data is never 0
}

TEST_CASE("argmin/argmax return the first extreme; NaN propagates as NumPy", "[ops][gpu]") {
  auto h = test::random_vector<float>(70001);
  h[500] = 50, h[60000] = 50, h[7] = -50, h[9] = -50;
  ndarray x = asarray(h);
  CHECK(argmax(x).get<std::int64_t>()[0] == 500);
  CHECK(x.argmin().get<std::int64_t>()[0] == 7);
  h[1234] = std::numeric_limits<float>::quiet_NaN();
  ndarray y = asarray(h);
  CHECK(std::isnan(max(y).get<float>()[0]));
  CHECK(nanmax(y).get<float>()[0] == 50);
  CHECK(argmax(y).get<std::int64_t>()[0] == 1234);
  std::vector<float> clean = h;
  clean[1234] = 0;
  const double want = host_sum(clean);
  const float got_sum = nansum(y).get<float>()[0], got_mean = nanmean(y).get<float>()[0];
  INFO("nansum " << got_sum << " nanmean " << got_mean << " host sum " << want);
  const double terms = abs_sum(clean);
  CHECK(close_sum(got_sum, want, terms));
  CHECK(close_sum(got_mean, want / double(h.size() - 1), terms / double(h.size() - 1)));
}

TEST_CASE("argmin/argmax (the first index) and max/min of arrays at their dtype's extremes",
          "[ops][gpu]") {
  // Every element equals the lowest (argmax) or highest (argmin) value the dtype holds, the
  // value argmin/argmax start from: index 0 whole, along rows, and down columns.
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::tuple<dtype, scalar, scalar>> extremes = {
      {bool_, scalar(false), scalar(true)},
      {int8, scalar(std::int8_t(-128)), scalar(std::int8_t(127))},
      {uint8, scalar(std::uint8_t(0)), scalar(std::uint8_t(255))},
      {int16, scalar(std::numeric_limits<std::int16_t>::min()),
       scalar(std::numeric_limits<std::int16_t>::max())},
      {uint32, scalar(std::uint32_t(0)), scalar(std::numeric_limits<std::uint32_t>::max())},
      {int64, scalar(std::numeric_limits<std::int64_t>::min()),
       scalar(std::numeric_limits<std::int64_t>::max())},
      {float16, scalar(-inf), scalar(inf)},
      {float32, scalar(-inf), scalar(inf)},
      {float64, scalar(-inf), scalar(inf)}};
  for (const auto& [t, lo, hi] : extremes) {
    INFO(t.name());
    const ndarray low = full({300, 2000}, lo, t), high = full({300, 2000}, hi, t);
    CHECK(argmax(low).get<std::int64_t>() == std::vector<std::int64_t>{0});
    CHECK(argmin(high).get<std::int64_t>() == std::vector<std::int64_t>{0});
    CHECK(argmax(low, 1).get<std::int64_t>() == std::vector<std::int64_t>(300, 0));
    CHECK(argmin(high, 1).get<std::int64_t>() == std::vector<std::int64_t>(300, 0));
    CHECK(argmax(low, 0).get<std::int64_t>() == std::vector<std::int64_t>(2000, 0));
    CHECK(argmin(high, 0).get<std::int64_t>() == std::vector<std::int64_t>(2000, 0));
    // max and min start from the same values: the extremes themselves come back.
    const auto as_f64 = [](const ndarray& a) { return a.astype(float64).get<double>(); };
    const double l = as_f64(full({1}, lo, t))[0], u = as_f64(full({1}, hi, t))[0];
    CHECK(as_f64(max(low)) == std::vector<double>{l});
    CHECK(as_f64(min(high)) == std::vector<double>{u});
    CHECK(as_f64(max(low, 1)) == std::vector<double>(300, l));
    CHECK(as_f64(min(high, 0)) == std::vector<double>(2000, u));
  }
  // A NaN beats -inf, and the first of two NaNs wins, along rows and down columns.
  std::vector<float> h(300 * 2000, -float(inf));
  h[std::size_t(5 * 2000 + 700)] = h[std::size_t(9 * 2000 + 700)] = std::nanf("");
  h[std::size_t(5 * 2000 + 900)] = std::nanf("");
  const ndarray x = asarray(h, Shape{300, 2000});
  const auto rows = argmax(x, 1).get<std::int64_t>();
  CHECK(rows[5] == 700);
  CHECK(rows[9] == 700);
  CHECK(rows[6] == 0);
  const auto cols = argmin(x, 0).get<std::int64_t>();
  CHECK(cols[700] == 5);
  CHECK(cols[900] == 5);
  CHECK(cols[0] == 0);
}

TEST_CASE("reductions along axes, keepdims, members and views", "[ops][gpu]") {
  const Shape shape{37, 129};
  auto h = test::random_vector<float>(std::size_t(shape_size(shape)));
  ndarray x = asarray(h, shape);
  std::vector<double> rows(37, 0), cols(129, 0);
  for (int i = 0; i < 37; ++i)
    for (int j = 0; j < 129; ++j)
      rows[std::size_t(i)] += h[std::size_t(i * 129 + j)],
          cols[std::size_t(j)] += h[std::size_t(i * 129 + j)];
  auto r = x.sum(1).get<float>();
  auto c = x.T().sum(1, true);
  CHECK(c.shape() == Shape{129, 1});
  auto cv = c.get<float>();
  for (int i = 0; i < 37; ++i) CHECK(close(r[std::size_t(i)], rows[std::size_t(i)]));
  for (int j = 0; j < 129; ++j) CHECK(close(cv[std::size_t(j)], cols[std::size_t(j)]));
  CHECK(all_of(x).get<bool>()[0]);
  CHECK(any(x, 0).get<bool>() == std::vector<bool>(129, true));
  CHECK(prod(asarray<float>({}), {}, false).get<float>()[0] == 1);
  CHECK_THROWS_WITH(max(asarray<float>({})),
                    Catch::Contains("zero-size array to reduction operation maximum"));
  CHECK_THROWS_WITH(argmax(empty({0}, float32)),
                    Catch::Contains("attempt to get argmax of an empty sequence"));
  CHECK(close(linalg::norm(x, 1.0, 1).get<float>()[3], [&] {
    double q = 0;
    for (int j = 0; j < 129; ++j) q += std::abs(h[std::size_t(3 * 129 + j)]);
    return q;
  }()));
  // Induced matrix norms: largest row sum (inf), smallest column sum (-1).
  std::vector<double> row_sums(37, 0.0), col_sums(129, 0.0);
  for (int i = 0; i < 37; ++i)
    for (int j = 0; j < 129; ++j) {
      const double a = std::abs(double(h[std::size_t(i * 129 + j)]));
      row_sums[std::size_t(i)] += a, col_sums[std::size_t(j)] += a;
    }
  CHECK(close(linalg::norm(x, INFINITY).get<float>()[0],
              *std::max_element(row_sums.begin(), row_sums.end())));
  CHECK(close(linalg::norm(x, -1.0).get<float>()[0],
              *std::min_element(col_sums.begin(), col_sums.end())));
  CHECK(linalg::norm(x, INFINITY, {}, true).shape() == Shape{1, 1});
}

// NumPy's answers (NumPy 2.4.6): var/std propagate nan and inf for every axis length, one
// element included ((x - mean)^2 is nan there), and divide by max(n - ddof, 0).
TEST_CASE("var and std give nan for inf and nan elements over every axis length, as NumPy",
          "[ops][gpu]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const axes none(std::initializer_list<std::int64_t>{});
  for (dtype t : {float32, float64, float16}) {
    INFO(t.name());
    const ndarray x = asarray<double>({nan, inf, -inf, 1.5, 2.5, -4.0}, Shape{6, 1}).astype(t);
    auto values = [](const ndarray& r) { return r.astype(float64).get<double>(); };
    auto poisoned = [&](const Shape& s) {
      ndarray o = empty(s, t);
      o.fill(7.0);
      return o;
    };
    // One element per row: nan for nan, inf, -inf; 0 for the finite ones.
    for (bool fused : {false, true}) {
      INFO("fused " << fused);
      ndarray v = poisoned({6}), s = poisoned({6, 1});
      if (fused) {
        var(x * 1, 1, false, {.out = v});
        kiln::std(x + 0, none, false, {.out = s});  // axis=(): every element alone
      } else {
        var(x, 1, false, {.out = v});
        kiln::std(x, none, false, {.out = s});
      }
      for (const auto& got : {values(v), values(s)}) {
        REQUIRE(got.size() == 6);
        for (int k = 0; k < 3; ++k) CHECK(std::isnan(got[k]));
        for (int k = 3; k < 6; ++k) CHECK(got[k] == 0.0);
      }
    }
    // Longer axes: one non-finite element makes the whole variance nan.
    const ndarray y = asarray<double>({1, inf, 3, 4, -inf, inf, 5, 6, 7}, Shape{3, 3}).astype(t);
    const auto vy = values(var(y, 1));
    CHECK(std::isnan(vy[0]));
    CHECK(std::isnan(vy[1]));
    CHECK(vy[2] == Approx(2.0 / 3).epsilon(1e-3));
    CHECK(std::isnan(values(kiln::std(y))[0]));
  }
  // ddof at or past n: m2 / 0 (inf, or nan for m2 = 0), never a negative count.
  const ndarray a = asarray<double>({1, 2, 3}), b = asarray<double>({1, 1}),
                c = asarray<double>({1, 2});
  CHECK(var(a, {}, false, {.ddof = 4}).get<double>()[0] == inf);
  CHECK(std::isnan(var(b, {}, false, {.ddof = 3}).get<double>()[0]));
  CHECK(var(c, {}, false, {.ddof = 2}).get<double>()[0] == inf);
  CHECK(kiln::std(a, {}, false, {.ddof = 4}).get<double>()[0] == inf);
  CHECK(var(c, {}, false, {.ddof = -1}).get<double>()[0] == Approx(1.0 / 6));
}

TEST_CASE("0-d arrays reduce with axis 0 or -1 as with every axis, as NumPy", "[ops][gpu]") {
  const ndarray z = asarray<float>({2.5f}).reshape(Shape{});
  REQUIRE(z.ndim() == 0);
  CHECK(sum(z, 0).get<float>() == std::vector<float>{2.5f});
  CHECK(sum(z, 0).shape() == Shape{});
  CHECK(max(z, -1, true).shape() == Shape{});
  CHECK(max(z, -1).get<float>() == std::vector<float>{2.5f});
  CHECK(nanmean(z, 0).get<float>() == std::vector<float>{2.5f});
  CHECK(argmax(z, 0).get<std::int64_t>() == std::vector<std::int64_t>{0});
  CHECK(count_nonzero(z * 1, -1).get<std::int64_t>() == std::vector<std::int64_t>{1});
  // A reduced axis of nonzero length with an empty result: no error, an empty array.
  const ndarray e = empty({3, 0}, float32);
  CHECK(max(e, 0).shape() == Shape{0});
  CHECK(argmax(e, 0).shape() == Shape{0});
}
