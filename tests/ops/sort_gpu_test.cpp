// kiln::sort / kiln::argsort on the GPU against a stable host sort with NumPy's NaN-last order.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using kiln::test::random_vector;

namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bf16>)
    return std::isnan(float(v));
  else
    return false;
}

// NumPy's order: NaNs after everything, -0.0 == +0.0.
template <class T>
bool less(T a, T b) {
  if (is_nan(a)) return false;
  if (is_nan(b)) return true;
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bf16>)
    return float(a) < float(b);
  else
    return a < b;
}

// Stable argsort of each row of a (rows x n) host matrix.
template <class T>
std::vector<std::int64_t> host_argsort(const std::vector<T>& v, std::int64_t rows, std::int64_t n) {
  std::vector<std::int64_t> idx(v.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    auto first = idx.begin() + r * n;
    std::iota(first, first + n, 0);
    std::stable_sort(first, first + n, [&](std::int64_t a, std::int64_t b) {
      return less(v[r * n + a], v[r * n + b]);
    });
  }
  return idx;
}

template <class T>
bool same_value(T a, T b) {
  if (is_nan(a) || is_nan(b)) return is_nan(a) && is_nan(b);
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bf16>)
    return float(a) == float(b);
  else
    return a == b;
}

// Leaves freed, poisoned blocks in the pool, so outputs that are not fully written show it.
void poison_pool(std::size_t bytes) {
  auto p = empty({std::int64_t(bytes)}, uint8);
  p.fill(0xA5);
}

// Random values with many ties (few distinct values), and NaNs for floating types.
template <class T>
std::vector<T> tied_values(std::size_t n) {
  auto v = random_vector<T>(n, -6, 6);
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bf16>) {
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 7 == 3) v[i] = T(float(std::round(float(v[i]))));  // ties
      if (i % 11 == 5) v[i] = T(std::numeric_limits<float>::quiet_NaN());
      if (i % 19 == 9) v[i] = T(std::copysign(std::numeric_limits<float>::quiet_NaN(), -1.0f));
      if (i % 13 == 6) v[i] = T(i % 2 ? -0.0f : 0.0f);
      if (i % 17 == 1) v[i] = T(i % 2 ? -INFINITY : INFINITY);
    }
  } else if constexpr (!std::is_same_v<T, bool>) {
    for (std::size_t i = 0; i < n; i += 5) v[i] = v[(i * 7) % n];  // ties
    if constexpr (std::is_signed_v<T>) v[1] = std::numeric_limits<T>::min();
    v[2] = std::numeric_limits<T>::max();
  }
  return v;
}

template <class T>
void check_rows(std::int64_t rows, std::int64_t n) {
  const auto h = tied_values<T>(std::size_t(rows * n));
  ndarray a = asarray(h, Shape{rows, n});
  poison_pool(std::size_t(rows * n) * 16);
  const auto ref = host_argsort(h, rows, n);
  ndarray idx = argsort(a);
  CHECK(idx.dtype() == int64);
  CHECK(idx.shape() == Shape{rows, n});
  CHECK(idx.get<std::int64_t>() == ref);  // stable: exactly the host's permutation
  poison_pool(std::size_t(rows * n) * 16);
  ndarray s = sort(a);
  CHECK(s.dtype() == a.dtype());
  const std::vector<T> got = s.get<T>();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!same_value(got[i], h[std::size_t(i / n * n + ref[i])])) ++bad;
  CHECK(bad == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("sort and argsort order every real dtype with NaNs last and stable ties",
                   "[ops][gpu]", bool, std::int8_t, std::uint8_t, std::int16_t, std::uint16_t,
                   std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, half, bf16, float,
                   double) {
  SECTION("one long row (DeviceRadixSort)") { check_rows<TestType>(1, 100003); }
  SECTION("many short rows (DeviceSegmentedSort)") { check_rows<TestType>(257, 37); }
  SECTION("a few long rows") { check_rows<TestType>(3, 40000); }
}

TEST_CASE("argsort keeps -0.0 and +0.0 in input order, as NumPy's stable argsort", "[ops][gpu]") {
  auto a = asarray<float>({0.0f, -0.0f, 1.0f, -0.0f, 0.0f, -1.0f});
  CHECK(argsort(a).get<std::int64_t>() == std::vector<std::int64_t>{5, 0, 1, 3, 4, 2});
  auto s = sort(a).get<float>();
  CHECK(s[0] == -1.0f);
  CHECK(s[5] == 1.0f);
}

// CUB orders NaNs with the sign bit first; kiln moves them after everything (NumPy's order).
TEMPLATE_TEST_CASE("sort puts NaNs of either sign last and keeps their bits", "[ops][gpu]", float,
                   double) {
  const TestType nan = std::numeric_limits<TestType>::quiet_NaN();
  for (const double negative_share : {0.3, 1.0}) {
    INFO("share of negative NaNs " << negative_share);
    auto h = random_vector<TestType>(100003, -5, 5);
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> u(0, 1);
    for (auto& x : h) {
      const double r = u(gen);
      if (r < negative_share)
        x = std::copysign(nan, TestType(-1));
      else if (r < negative_share + 0.1)
        x = nan;
    }
    poison_pool(h.size() * sizeof(TestType) * 4);
    const auto got = sort(asarray(h)).template get<TestType>();
    std::vector<TestType> numbers;
    std::size_t negative_nans = 0, positive_nans = 0;
    for (TestType x : h) {
      if (!std::isnan(x))
        numbers.push_back(x);
      else if (std::signbit(x))
        ++negative_nans;
      else
        ++positive_nans;
    }
    std::sort(numbers.begin(), numbers.end());
    REQUIRE(got.size() == h.size());
    CHECK(std::vector<TestType>(got.begin(), got.begin() + std::ptrdiff_t(numbers.size())) ==
          numbers);
    std::size_t got_negative = 0, got_positive = 0, not_nan = 0;
    for (std::size_t i = numbers.size(); i < got.size(); ++i) {
      if (!std::isnan(got[i]))
        ++not_nan;
      else if (std::signbit(got[i]))
        ++got_negative;
      else
        ++got_positive;
    }
    CHECK(not_nan == 0);
    CHECK(got_negative == negative_nans);
    CHECK(got_positive == positive_nans);
  }
}

TEST_CASE("sort along any axis of a non-contiguous view matches the host", "[ops][gpu]") {
  const std::int64_t d0 = 6, d1 = 50, d2 = 7;
  auto h = random_vector<double>(std::size_t(d0 * d1 * d2));
  auto base = asarray(h, Shape{d0, d1, d2});
  auto v = base.transpose({2, 1, 0});                              // shape (7, 50, 6), F-ordered
  auto at = [&](std::int64_t i, std::int64_t j, std::int64_t k) {  // v[i, j, k]
    return h[std::size_t(k * d1 * d2 + j * d2 + i)];
  };
  for (int axis : {0, 1, 2, -1}) {
    INFO("axis " << axis);
    auto s = sort(v, axis);
    auto idx = argsort(v, axis);
    CHECK(s.shape() == v.shape());
    CHECK(s.is_c_contiguous());
    const auto got = s.get<double>();
    const auto got_idx = idx.get<std::int64_t>();
    const int ax = axis < 0 ? axis + 3 : axis;
    const Shape sh = v.shape();
    std::size_t bad = 0;
    for (std::int64_t i = 0; i < sh[0]; ++i)
      for (std::int64_t j = 0; j < sh[1]; ++j)
        for (std::int64_t k = 0; k < sh[2]; ++k) {
          std::int64_t pos[3] = {i, j, k};
          // the host's sorted line through (i, j, k) along ax
          std::vector<double> line;
          for (std::int64_t t = 0; t < sh[ax]; ++t) {
            std::int64_t p[3] = {i, j, k};
            p[ax] = t;
            line.push_back(at(p[0], p[1], p[2]));
          }
          auto sorted = line;
          std::sort(sorted.begin(), sorted.end());
          const std::size_t flat = std::size_t((i * sh[1] + j) * sh[2] + k);
          if (got[flat] != sorted[std::size_t(pos[ax])]) ++bad;
          if (line[std::size_t(got_idx[flat])] != sorted[std::size_t(pos[ax])]) ++bad;
        }
    CHECK(bad == 0);
  }
}

TEST_CASE("sort of empty arrays and of one element", "[ops][gpu]") {
  CHECK(sort(empty({0, 5}, float32)).shape() == Shape{0, 5});
  CHECK(argsort(empty({4, 0}, int16), 1).shape() == Shape{4, 0});
  CHECK(sort(asarray<int>({42})).get<int>() == std::vector<int>{42});
  CHECK(argsort(asarray<int>({42})).get<std::int64_t>() == std::vector<std::int64_t>{0});
}

TEST_CASE("sort runs on the current stream", "[ops][gpu]") {
  Stream s;
  auto h = random_vector<float>(1 << 16);
  auto a = asarray(h);
  ndarray out;
  {
    StreamGuard use(s);
    out = sort(a);
  }
  s.synchronize();
  std::sort(h.begin(), h.end());
  CHECK(out.get<float>() == h);
}

TEST_CASE("the sort header's example gives NumPy's answers", "[ops][gpu]") {
  // NumPy: x = [[3, nan, -1], [2, 2, 0]] (float32); np.sort(x) -> [[-1, 3, nan], [0, 2, 2]],
  // np.argsort(x, axis=0, kind="stable") -> [[1, 1, 0], [0, 0, 1]].
  auto x = asarray<float>({3, NAN, -1, 2, 2, 0}, Shape{2, 3});
  const auto s = sort(x).get<float>();
  CHECK(s[0] == -1);
  CHECK(s[1] == 3);
  CHECK(std::isnan(s[2]));
  CHECK(std::vector<float>(s.begin() + 3, s.end()) == std::vector<float>{0, 2, 2});
  CHECK(argsort(x, 0).get<std::int64_t>() == std::vector<std::int64_t>{1, 1, 0, 0, 0, 1});
}
