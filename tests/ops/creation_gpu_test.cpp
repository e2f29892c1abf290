// Creation and conversion routines on the GPU, against host references.
#include <catch2/catch.hpp>
#include <cmath>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using kiln::test::random_vector;

TEST_CASE("full, ones and their _like forms", "[ops][gpu]") {
  auto a = full({3, 4}, 7, int16);
  CHECK(a.dtype() == int16);
  CHECK(a.get<std::int16_t>() == std::vector<std::int16_t>(12, 7));
  CHECK(full({2}, 2.5).dtype() == float64);
  CHECK(full({2}, 2.5f).get<float>() == std::vector<float>{2.5f, 2.5f});
  CHECK(ones({5}).get<double>() == std::vector<double>(5, 1.0));
  CHECK(ones({2, 2}, complex64).get<std::complex<float>>() ==
        std::vector<std::complex<float>>(4, {1, 0}));
  auto f = empty({3, 2}, float32, order::F);
  auto ol = ones_like(f, int8);
  CHECK(ol.dtype() == int8);
  CHECK(ol.is_f_contiguous());
  CHECK(ol.get<std::int8_t>() == std::vector<std::int8_t>(6, 1));
  CHECK(full_like(a, -3).get<std::int16_t>() == std::vector<std::int16_t>(12, -3));
  CHECK_THROWS_AS(full({2}, 300, uint8), ValueError);
  CHECK(full({}, true).get<bool>() == std::vector<bool>{true});
  CHECK(full({0, 5}, 1.0).size() == 0);
}

TEST_CASE("fill writes every element of any view and keeps the rest", "[ops][gpu]") {
  auto h = random_vector<double>(6 * 8);
  auto a = asarray(h, Shape{6, 8});
  auto v = a(slice(1, 5, 2), slice(std::nullopt, std::nullopt, -3));  // rows 1,3; cols 7,4,1
  v.fill(-1.5);
  auto got = a.get<double>();
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 8; ++c) {
      bool in_view = (r == 1 || r == 3) && (c == 7 || c == 4 || c == 1);
      CHECK(got[r * 8 + c] == (in_view ? -1.5 : h[r * 8 + c]));
    }
  auto b = asarray(random_vector<std::uint8_t>(10));
  CHECK_THROWS_AS(b.fill(-1), ValueError);
}

TEST_CASE("arange matches NumPy's lengths and values", "[ops][gpu]") {
  auto r = arange(0, 10, 3);
  CHECK(r.dtype() == int64);
  CHECK(r.get<std::int64_t>() == std::vector<std::int64_t>{0, 3, 6, 9});
  CHECK(arange(5).get<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(10, 0, -4).get<std::int64_t>() == std::vector<std::int64_t>{10, 6, 2});
  CHECK(arange(3, 3).size() == 0);
  auto f = arange(0.5, 2.0, 0.5);
  CHECK(f.dtype() == float64);
  CHECK(f.get<double>() == std::vector<double>{0.5, 1.0, 1.5});
  auto big = arange(std::int64_t(1) << 40, (std::int64_t(1) << 40) + 3);
  CHECK(big.get<std::int64_t>()[2] == (std::int64_t(1) << 40) + 2);
  CHECK(arange(0, 4, 1, float32).get<float>() == std::vector<float>{0, 1, 2, 3});
}

TEST_CASE("linspace includes the endpoint exactly and floors for integers", "[ops][gpu]") {
  auto l = linspace(0.0, 1.0, 5);
  CHECK(l.get<double>() == std::vector<double>{0, 0.25, 0.5, 0.75, 1.0});
  auto n = linspace(0.0, 1.0, 4, false).get<double>();
  CHECK(n == std::vector<double>{0, 0.25, 0.5, 0.75});
  auto odd = linspace(0.1, 0.7, 7).get<double>();
  CHECK(odd.back() == 0.7);
  for (int i = 0; i < 7; ++i) CHECK(odd[i] == Approx(0.1 + 0.1 * i));
  CHECK(linspace(-1.0, 1.0, 5, true, int32).get<std::int32_t>() ==
        std::vector<std::int32_t>{-1, -1, 0, 0, 1});
  CHECK(linspace(2.0, 3.0, 1).get<double>() == std::vector<double>{2.0});
  CHECK(linspace(0, 1, 0).size() == 0);
}

TEST_CASE("astype converts every dtype pair like NumPy, from any layout", "[ops][gpu]") {
  auto h = random_vector<double>(4 * 6, -100, 100);
  auto src = asarray(h, Shape{4, 6}).T();  // non-contiguous source
  // Host reference in C order of the transposed view.
  std::vector<double> ref;
  for (int c = 0; c < 6; ++c)
    for (int r = 0; r < 4; ++r) ref.push_back(h[r * 6 + c]);
  for (dtype t : kAllDtypes) {
    INFO(t.name());
    auto out = src.astype(t);
    CHECK(out.dtype() == t);
    CHECK(out.shape() == Shape{6, 4});
    CHECK(out.is_c_contiguous());
    visit_dtype(t, [&]<class T>(T) {
      auto got = out.get<T>();
      for (std::size_t k = 0; k < ref.size(); ++k) {
        double d = ref[k];
        if constexpr (std::is_same_v<T, bool>)
          CHECK(got[k] == (d != 0));
        else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bf16>)
          CHECK(float(got[k]) == Approx(d).epsilon(1e-2));
        else if constexpr (requires { typename T::value_type; })
          CHECK(got[k].real() == Approx(d).epsilon(1e-6));
        else if constexpr (std::is_integral_v<T>) {
          if (d >= double(std::numeric_limits<T>::min()) &&
              d <= double(std::numeric_limits<T>::max()))
            CHECK(got[k] == T(d));  // truncation toward zero where the value fits
        } else
          CHECK(double(got[k]) == Approx(d).epsilon(1e-6));
      }
    });
  }
  auto c = asarray<std::complex<double>>({{1.5, 2}, {-3, 4}});
  CHECK(c.astype(float64).get<double>() == std::vector<double>{1.5, -3});  // drops imag
  CHECK(c.astype(bool_).get<bool>() == std::vector<bool>{true, true});
}

TEST_CASE("copy, reshape and ravel of non-contiguous views", "[ops][gpu]") {
  auto h = random_vector<float>(3 * 4 * 5);
  auto a = asarray(h, Shape{3, 4, 5});
  auto t = a.transpose({2, 0, 1});
  auto c = t.copy();
  CHECK(c.is_c_contiguous());
  CHECK(c.get<float>() == t.get<float>());
  auto flat = t.ravel();  // needs a copy
  CHECK(flat.shape() == Shape{60});
  CHECK(flat.get<float>() == t.get<float>());
  auto r = t.reshape({5, -1});
  CHECK(r.shape() == Shape{5, 12});
  CHECK(r.get<float>() == t.get<float>());
  CHECK(a.reshape({12, 5}).buffer() == a.buffer());  // a view, no copy
  auto e = asarray<float>({}).reshape({0, 3});
  CHECK(e.shape() == Shape{0, 3});
}
