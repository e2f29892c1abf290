// Host <-> device and device <-> device transfers, for every dtype and view.
#include <catch2/catch.hpp>
#include <thread>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using kiln::test::random_vector;

TEMPLATE_TEST_CASE("every dtype round-trips host -> device -> host", "[runtime][gpu]", bool,
                   std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t,
                   std::uint16_t, std::uint32_t, std::uint64_t, float, double, std::complex<float>,
                   std::complex<double>) {
  auto h = random_vector<TestType>(1000);
  auto a = asarray(h, Shape{10, 100});
  CHECK(a.dtype() == dtype_of<TestType>());
  CHECK(a.shape() == Shape{10, 100});
  CHECK(a.template get<TestType>() == h);
}

TEST_CASE("float16 and bfloat16 round-trip bit-exactly", "[runtime][gpu]") {
  std::vector<half> h;
  std::vector<bf16> b;
  for (float f : random_vector<float>(513)) {
    h.push_back(half(f));
    b.push_back(bf16(f));
  }
  CHECK(asarray(h).get<half>() == h);
  CHECK(asarray(b).get<bf16>() == b);
}

TEST_CASE("get<T> with the wrong T raises TypeError", "[runtime][gpu]") {
  auto a = asarray<float>({1.f, 2.f});
  KILN_CHECK_THROWS(a.get<double>(), TypeError,
                    Catch::Matchers::Contains("float32") && Catch::Matchers::Contains("float64"));
  CHECK_THROWS_AS(asarray<float>({1.f, 2.f, 3.f}, Shape{2, 2}), ShapeError);
}

TEST_CASE("views read back the host-expected elements", "[runtime][gpu]") {
  const int R = 5, C = 7;
  auto h = random_vector<std::int32_t>(R * C);
  auto a = asarray(h, Shape{R, C});
  auto at = [&](int r, int c) { return h[r * C + c]; };

  auto t = a.T().get<std::int32_t>();
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r) CHECK(t[c * R + r] == at(r, c));

  auto s = a(slice(1, 5, 2), slice(std::nullopt, std::nullopt, -3)).get<std::int32_t>();
  std::vector<std::int32_t> want;
  for (int r = 1; r < 5; r += 2)
    for (int c = C - 1; c >= 0; c -= 3) want.push_back(at(r, c));
  CHECK(s == want);

  auto col = a(all, std::int64_t(3)).get<std::int32_t>();
  for (int r = 0; r < R; ++r) CHECK(col[r] == at(r, 3));

  auto b = a(std::int64_t(2)).expand_dims(0).broadcast_to({3, C}).get<std::int32_t>();
  for (int k = 0; k < 3; ++k)
    for (int c = 0; c < C; ++c) CHECK(b[k * C + c] == at(2, c));

  auto z = a(std::int64_t(4), std::int64_t(6));
  CHECK(z.ndim() == 0);
  CHECK(z.get<std::int32_t>() == std::vector<std::int32_t>{at(4, 6)});
  auto r = a.reshape_view({C, R});
  REQUIRE(r);
  CHECK(r->get<std::int32_t>() == h);
}

TEST_CASE("zero-size and 0-d arrays work", "[runtime][gpu]") {
  auto e = empty({0, 3}, float64);
  CHECK(e.size() == 0);
  CHECK(e.get<double>().empty());
  auto z = zeros({}, int16);
  CHECK(z.get<std::int16_t>() == std::vector<std::int16_t>{0});
  auto zz = zeros({4, 4}, complex64);
  CHECK(zz.get<std::complex<float>>() == std::vector<std::complex<float>>(16));
  auto f = zeros_like(empty({3, 2}, float32, order::F));
  CHECK(f.is_f_contiguous());
}

TEST_CASE("device-to-device copies", "[runtime][gpu]") {
  auto h = random_vector<double>(4096);
  auto a = asarray(h);
  auto b = empty_like(a);
  copy_contiguous(a, b);
  CHECK(b.get<double>() == h);
}

TEST_CASE("copies between two GPUs, both directions", "[runtime][gpu][multigpu]") {
  auto h = random_vector<double>(1 << 20);
  auto a = asarray(h);
  ndarray other;
  {
    DeviceGuard on(1);
    other = empty({1 << 20}, float64);
    CHECK(other.device() == 1);
  }
  copy_contiguous(a, other);
  CHECK(other.get<double>() == h);
  auto back = empty_like(a);
  copy_contiguous(other, back);
  CHECK(back.device() == 0);
  CHECK(back.get<double>() == h);
}
