// kiln::random::Generator on the GPU: moments within tolerance, ranges, and reproducibility.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "kiln/kiln.hpp"

using namespace kiln;

namespace {

template <class T>
std::pair<double, double> mean_var(const std::vector<T>& v) {
  double s = 0, s2 = 0;
  for (T x : v) s += double(x);
  const double m = s / double(v.size());
  for (T x : v) s2 += (double(x) - m) * (double(x) - m);
  return {m, s2 / double(v.size())};
}

}  // namespace

TEST_CASE("random is uniform in [0, 1) with the right moments, float32 and float64", "[ops][gpu]") {
  auto rng = random::default_rng(1234);
  const std::int64_t n = 1 << 20;
  auto d = rng.random({n / 1024, 1024});
  CHECK(d.dtype() == float64);
  CHECK(d.shape() == Shape{n / 1024, 1024});
  auto hd = d.get<double>();
  CHECK(*std::min_element(hd.begin(), hd.end()) >= 0.0);
  CHECK(*std::max_element(hd.begin(), hd.end()) < 1.0);
  auto [m, v] = mean_var(hd);
  CHECK(m == Approx(0.5).margin(3e-3));
  CHECK(v == Approx(1.0 / 12).margin(2e-3));
  auto hf = rng.random({n}, float32).get<float>();
  CHECK(*std::min_element(hf.begin(), hf.end()) >= 0.0f);
  CHECK(*std::max_element(hf.begin(), hf.end()) < 1.0f);
  auto [mf, vf] = mean_var(hf);
  CHECK(mf == Approx(0.5).margin(3e-3));
  CHECK(vf == Approx(1.0 / 12).margin(2e-3));
}

TEST_CASE("normal and standard_normal have the asked mean and deviation, odd sizes too",
          "[ops][gpu]") {
  auto rng = random::default_rng(99);
  auto z = rng.standard_normal({1000001}).get<double>();
  CHECK(z.size() == 1000001);
  auto [m, v] = mean_var(z);
  CHECK(m == Approx(0.0).margin(5e-3));
  CHECK(v == Approx(1.0).margin(1e-2));
  auto g = rng.normal(10.0, 2.5, {333, 999}, float32).get<float>();
  auto [mg, vg] = mean_var(g);
  CHECK(mg == Approx(10.0).margin(2e-2));
  CHECK(std::sqrt(vg) == Approx(2.5).margin(2e-2));
}

TEST_CASE("uniform stays in [low, high) and integers cover [low, high) for several dtypes",
          "[ops][gpu]") {
  auto rng = random::default_rng(5);
  auto u = rng.uniform(-3.0, 7.0, {200000}).get<double>();
  CHECK(*std::min_element(u.begin(), u.end()) >= -3.0);
  CHECK(*std::max_element(u.begin(), u.end()) < 7.0);
  CHECK(mean_var(u).first == Approx(2.0).margin(3e-2));
  auto k = rng.integers(-4, 6, {100000});
  CHECK(k.dtype() == int64);
  auto hk = k.get<std::int64_t>();
  std::set<std::int64_t> seen(hk.begin(), hk.end());
  CHECK(seen == std::set<std::int64_t>{-4, -3, -2, -1, 0, 1, 2, 3, 4, 5});
  CHECK(mean_var(hk).first == Approx(0.5).margin(5e-2));
  auto k8 = rng.integers(0, 256, {50000}, uint8).get<std::uint8_t>();
  std::set<int> seen8(k8.begin(), k8.end());
  CHECK(seen8.size() == 256);
  auto big = rng.integers(0, std::int64_t(1) << 62, {10000}).get<std::int64_t>();
  CHECK(*std::max_element(big.begin(), big.end()) > (std::int64_t(1) << 61));
  auto k16 = rng.integers(-300, -200, {1000}, int16).get<std::int16_t>();
  CHECK(*std::min_element(k16.begin(), k16.end()) >= -300);
  CHECK(*std::max_element(k16.begin(), k16.end()) < -200);
}

TEST_CASE("the same seed gives the same numbers and successive calls continue the stream",
          "[ops][gpu]") {
  auto a = random::default_rng(42), b = random::default_rng(42), c = random::default_rng(43);
  auto a1 = a.random({1001}).get<double>();
  auto b1 = b.random({1001}).get<double>();
  CHECK(a1 == b1);
  CHECK(c.random({1001}).get<double>() != a1);
  auto a2 = a.random({1001}).get<double>();
  CHECK(a2 != a1);  // the next call continues rather than repeating
  std::set<double> all(a1.begin(), a1.end());
  all.insert(a2.begin(), a2.end());
  CHECK(all.size() == 2002);  // no overlap between the two calls
  CHECK(b.random({1001}).get<double>() == a2);
  CHECK(a.standard_normal({7}, float32).get<float>() ==
        b.standard_normal({7}, float32).get<float>());
  CHECK(a.integers(0, 1000, {9}).get<std::int64_t>() ==
        b.integers(0, 1000, {9}).get<std::int64_t>());
  CHECK(a.offset() == b.offset());
  CHECK(a.offset() > 0);
  // On another stream: still the same numbers.
  Stream s;
  std::vector<double> on_stream;
  {
    StreamGuard use(s);
    on_stream = random::default_rng(42).random({1001}).get<double>();
  }
  CHECK(on_stream == a1);
}
