// ElementwiseKernel on a GPU: results against host references on random data (never zeros),
// outputs poisoned before each run.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/engine/expression.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/stream.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

using kiln::test::poisoned;

// An array of `shape` whose every byte is 0x5A: never a value a kernel would write by luck.
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bf16>)
    return double(float(v));
  else if constexpr (std::is_same_v<T, std::complex<float>> ||
                     std::is_same_v<T, std::complex<double>>)
    return double(v.real());
  else
    return double(v);
}

// NumPy's astype for one value, on the host.
template <class To, class From>
To host_cast(From v) {
  constexpr bool from_complex =
      std::is_same_v<From, std::complex<float>> || std::is_same_v<From, std::complex<double>>;
  constexpr bool to_complex =
      std::is_same_v<To, std::complex<float>> || std::is_same_v<To, std::complex<double>>;
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (from_complex)
      return v.real() != 0 || v.imag() != 0;
    else
      return as_double(v) != 0;
  } else if constexpr (to_complex) {
    using V = typename To::value_type;
    if constexpr (from_complex)
      return To(V(v.real()), V(v.imag()));
    else
      return To(V(as_double(v)), V(0));
  } else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bf16>) {
    if constexpr (std::is_same_v<From, float>)
      return To(v);
    else
      return To(float(as_double(v)));  // exact for the test values
  } else {
    return To(as_double(v));  // truncation toward zero for ints
  }
}

template <class T>
bool same_value(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return a == b || (std::isnan(a) && std::isnan(b));
  else
    return a == b;
}

template <class T>
void check_equal(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!same_value(got[k], want[k]) && bad++ == 0) first = k;
  INFO("first mismatch at " << first);
  CHECK(bad == 0);
}

template <class T>
std::vector<T> random_of(std::size_t n) {
  return test::random_vector<T>(n);
}
template <>
std::vector<half> random_of<half>(std::size_t n) {
  auto f = test::random_vector<float>(n);
  std::vector<half> h(n);
  for (std::size_t k = 0; k < n; ++k) h[k] = half(std::round(f[k] * 4) / 4);  // exact in half
  return h;
}
template <>
std::vector<bf16> random_of<bf16>(std::size_t n) {
  auto f = test::random_vector<float>(n);
  std::vector<bf16> h(n);
  for (std::size_t k = 0; k < n; ++k) h[k] = bf16(std::round(f[k] * 4) / 4);
  return h;
}

ndarray upload_bools(const std::vector<bool>& v, const Shape& s) { return asarray(v, s); }

template <class T>
ndarray upload(const std::vector<T>& v, const Shape& s) {
  if constexpr (std::is_same_v<T, bool>)
    return upload_bools(std::vector<bool>(v.begin(), v.end()), s);
  else
    return asarray(v, s);
}

}  // namespace

TEST_CASE("the README kernel matches the host on a size with a vector tail", "[ops][gpu]") {
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = (x - 2 > y) ? x * y : x + y",
                      "my_kernel");
  const std::size_t n = 1000003;
  auto hx = test::random_vector<float>(n), hy = test::random_vector<float>(n);
  ndarray x = asarray(hx), y = asarray(hy);
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = (hx[i] - 2 > hy[i]) ? hx[i] * hy[i] : hx[i] + hy[i];
  ndarray z = k(x, y);
  check_equal(z.get<float>(), want);
  ndarray out = poisoned({std::int64_t(n)}, float32);
  ndarray same = k(x, y, out);
  CHECK(same.data() == out.data());  // the given output is returned
  check_equal(out.get<float>(), want);
  // Misaligned views take the unvectorized path.
  ndarray xs = x(slice(1, std::nullopt)), ys = y(slice(1, std::nullopt));
  ndarray zs = k(xs, ys);
  check_equal(zs.get<float>(), std::vector<float>(want.begin() + 1, want.end()));
}

TEMPLATE_TEST_CASE("casts between dtypes follow NumPy", "[ops][gpu]", bool, std::int8_t,
                   std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t,
                   std::uint32_t, std::uint64_t, half, bf16, float, double, std::complex<float>,
                   std::complex<double>) {
  using From = TestType;
  const std::size_t n = 4099;
  auto hx = random_of<From>(n);
  ndarray x = upload(hx, {std::int64_t(n)});
  auto run = [&](auto to) {
    using To = decltype(to);
    ndarray y = poisoned({std::int64_t(n)}, dtype_of<To>());
    builtin::cast_kernel()(x, y);
    std::vector<To> want(n);
    for (std::size_t k = 0; k < n; ++k) want[k] = host_cast<To>(From(hx[k]));
    if constexpr (std::is_same_v<To, bool>) {
      auto got = y.get<bool>();
      check_equal(std::vector<bool>(got.begin(), got.end()),
                  std::vector<bool>(want.begin(), want.end()));
    } else {
      check_equal(y.get<To>(), want);
    }
  };
  run(double{});
  run(std::int64_t{});
  run(bool{});
  run(float{});
  run(std::complex<double>{});
}

TEMPLATE_TEST_CASE("every dtype adds elementwise over contiguous, strided and broadcast inputs",
                   "[ops][gpu]", std::int8_t, std::int32_t, std::uint16_t, std::uint64_t, half,
                   bf16, float, double, std::complex<float>, std::complex<double>) {
  using T = TestType;
  ElementwiseKernel k("T x, T y", "T z", "z = x + y", "add_any");
  auto host_add = [](T a, T b) {
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bf16>)
      return T(float(a) + float(b));
    else
      return T(a + b);
  };
  const std::int64_t rows = 37, cols = 129;
  auto hx = random_of<T>(std::size_t(rows * cols)), hy = random_of<T>(std::size_t(cols));
  ndarray x = upload(hx, {rows, cols}), y = upload(hy, {cols});
  SECTION("broadcast row") {
    std::vector<T> want(std::size_t(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        want[std::size_t(r * cols + c)] =
            host_add(hx[std::size_t(r * cols + c)], hy[std::size_t(c)]);
    check_equal(k(x, y).get<T>(), want);
  }
  SECTION("transposed view plus a 0-d array") {
    ndarray xt = x.T();  // (cols, rows), not contiguous
    ndarray s = upload(std::vector<T>{hy[3]}, Shape{});
    std::vector<T> want(std::size_t(rows * cols));
    for (std::int64_t c = 0; c < cols; ++c)
      for (std::int64_t r = 0; r < rows; ++r)
        want[std::size_t(c * rows + r)] = host_add(hx[std::size_t(r * cols + c)], hy[3]);
    ndarray out = poisoned({cols, rows}, dtype_of<T>());
    k(xt, s, out);
    check_equal(out.get<T>(), want);
  }
  SECTION("reversed, stepped views") {
    ndarray xv = x(slice(std::nullopt, std::nullopt, -2), slice(1, std::nullopt, 3));
    ndarray yv = y(slice(1, std::nullopt, 3));
    const std::int64_t r2 = xv.shape()[0], c2 = xv.shape()[1];
    std::vector<T> want;
    for (std::int64_t r = 0; r < r2; ++r)
      for (std::int64_t c = 0; c < c2; ++c)
        want.push_back(host_add(hx[std::size_t((rows - 1 - 2 * r) * cols + 1 + 3 * c)],
                                hy[std::size_t(1 + 3 * c)]));
    check_equal(k(xv, yv).get<T>(), want);
  }
}

TEST_CASE("raw parameters index whole arrays; size= sets the loop when all arrays are raw",
          "[ops][gpu]") {
  ElementwiseKernel rev("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse");
  auto hx = test::random_vector<std::int32_t>(1001);
  ndarray x = asarray(hx);
  ndarray y = poisoned({1001}, int32);
  rev(x, y);
  check_equal(y.get<std::int32_t>(), std::vector<std::int32_t>(hx.rbegin(), hx.rend()));

  ElementwiseKernel gather(
      "raw T m", "raw T out",
      "out[i] = m[{i % m.shape()[0], i / m.shape()[0]}] + T(m.strides()[1] / sizeof(T))",
      "gather2d");
  auto hm = test::random_vector<double>(12);
  ndarray m = asarray(hm, Shape{3, 4}).T();  // (4, 3), strides (8, 32)
  ndarray out = poisoned({12}, float64);
  gather(m, out, launch_options{.size = 12});
  std::vector<double> want(12);
  for (int i = 0; i < 12; ++i) want[std::size_t(i)] = hm[std::size_t((i / 4) * 4 + i % 4)] + 4.0;
  check_equal(out.get<double>(), want);
  CHECK_THROWS_WITH(rev(x, y, launch_options{.size = 5}), Catch::Contains("size= is only allowed"));
}

TEST_CASE("scalars convert to their parameter's dtype with NumPy's rules", "[ops][gpu]") {
  ElementwiseKernel k("T x, float32 s, uint8 b", "T z", "z = x * s + b", "scale_add");
  auto hx = test::random_vector<float>(777);
  ndarray x = asarray(hx);
  std::vector<float> want(777);
  // x * 0.5 is exact, so a fused multiply-add rounds like the host's two steps.
  for (std::size_t i = 0; i < 777; ++i) want[i] = hx[i] * 0.5f + 7;
  check_equal(k(x, 0.5, 7).get<float>(), want);
  check_equal(k(x, 0.5, std::uint64_t(7)).get<float>(), want);
  CHECK_THROWS_AS(k(x, 0.5, 300), ValueError);
  CHECK_THROWS_AS(k(x, 0.5, -1), ValueError);
}

TEST_CASE("return_tuple, no_return and several outputs", "[ops][gpu]") {
  auto hx = test::random_vector<std::int32_t>(500);
  ndarray x = asarray(hx);
  ElementwiseKernel two("T x", "T q, T r", "q = x / 3; r = x % 3", "divmod3");
  auto res = two(x);
  REQUIRE(res.size() == 2);
  std::vector<std::int32_t> q(500), r(500);
  for (std::size_t i = 0; i < 500; ++i) q[i] = hx[i] / 3, r[i] = hx[i] % 3;
  check_equal(res[0].get<std::int32_t>(), q);
  check_equal(res[1].get<std::int32_t>(), r);
  CHECK_THROWS_AS(ndarray(two(x)), TypeError);

  ElementwiseKernel tup("T x", "T y", "y = x + 1", "plus_one_tuple", {.return_tuple = true});
  auto t = tup(x);
  REQUIRE(t.size() == 1);
  CHECK_THROWS_AS(t.array(), TypeError);
  CHECK(t[0].shape() == x.shape());

  ElementwiseKernel none("T x", "T y", "y = x + 1", "plus_one_none", {.no_return = true});
  ndarray y = poisoned({500}, int32);
  CHECK(none(x, y).empty());
  std::vector<std::int32_t> want(500);
  for (std::size_t i = 0; i < 500; ++i) want[i] = hx[i] + 1;
  check_equal(y.get<std::int32_t>(), want);
}

TEST_CASE("outputs may be inputs; partly overlapping inputs are read before any write",
          "[ops][gpu]") {
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "add_inplace");
  auto hx = test::random_vector<float>(4096), hy = test::random_vector<float>(4096);
  ndarray x = asarray(hx), y = asarray(hy);
  add(x, y, x);  // x += y
  std::vector<float> want(4096);
  for (std::size_t i = 0; i < 4096; ++i) want[i] = hx[i] + hy[i];
  check_equal(x.get<float>(), want);

  ElementwiseKernel shift("T x", "T z", "z = x", "shift_copy");
  ndarray a = asarray(hy);
  shift(a(slice(1, std::nullopt)), a(slice(std::nullopt, -1)));  // a[:-1] = a[1:]
  auto got = a.get<float>();
  for (std::size_t i = 0; i + 1 < 4096; ++i) want[i] = hy[i + 1];
  want[4095] = hy[4095];
  check_equal(got, want);
}

TEST_CASE("empty and 0-d arrays", "[ops][gpu]") {
  ElementwiseKernel k("T x", "T z", "z = x * 2", "times_two_edge");
  const auto before = cache::stats().nvrtc_compiles.load() + cache::stats().disk_hits.load();
  ndarray e = k(ndarray({0, 3}, float32));
  CHECK(e.shape() == Shape({0, 3}));
  CHECK(cache::stats().nvrtc_compiles.load() + cache::stats().disk_hits.load() == before);
  ndarray s = asarray(std::vector<double>{3.25}, Shape{});
  ndarray z = k(s);
  CHECK(z.ndim() == 0);
  CHECK(z.get<double>() == std::vector<double>{6.5});
}

TEST_CASE("more than 2^31 elements use 64-bit indices", "[ops][gpu]") {
  const std::int64_t n = (std::int64_t(1) << 31) + 4099;
  ElementwiseKernel gen("", "int8 z", "z = (signed char)((i >> 24) ^ (i * 7))", "gen_big");
  ElementwiseKernel inc("int8 x", "int8 z", "z = x + 1", "inc_big");
  ndarray x = poisoned({n}, int8);
  gen(x);
  ndarray z = inc(x);
  std::vector<std::int8_t> got = z.get<std::int8_t>();
  std::size_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (got[std::size_t(i)] != std::int8_t(std::int8_t((i >> 24) ^ (i * 7)) + 1)) ++bad;
  CHECK(bad == 0);
  // Strided over > 2^31 elements: every other element of x.
  ndarray half_view = x(slice(std::nullopt, std::nullopt, 2));
  ndarray h = inc(half_view);
  auto hv = h.get<std::int8_t>();
  CHECK(hv.back() ==
        std::int8_t(std::int8_t(((n - 1 - (n - 1) % 2) >> 24) ^ ((n - 1 - (n - 1) % 2) * 7)) + 1));
}

TEST_CASE("compile errors in user code reach the caller with the user's line", "[ops][gpu]") {
  ElementwiseKernel k("T x", "T z", "z = x;\nz = nope;", "broken_user_code");
  ndarray x = asarray(test::random_vector<float>(10));
  try {
    k(x);
    FAIL("no CompileError");
  } catch (const CompileError& e) {
    CHECK_THAT(e.log(), Catch::Contains("operation(2)"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("broken_user_code"));
  }
}

TEST_CASE("kernels run on the stream given per call, and on two streams at once", "[ops][gpu]") {
  ElementwiseKernel k("T x", "T z", "z = x * x", "square_streams");
  Stream s1, s2;
  auto ha = test::random_vector<double>(300000), hb = test::random_vector<double>(300000);
  ndarray a = asarray(ha), b = asarray(hb);
  ndarray za = k(a, launch_options{.stream = &s1});
  ndarray zb = k(b, launch_options{.stream = &s2});
  s1.synchronize();
  s2.synchronize();
  std::vector<double> wa(300000), wb(300000);
  for (std::size_t i = 0; i < wa.size(); ++i) wa[i] = ha[i] * ha[i], wb[i] = hb[i] * hb[i];
  check_equal(za.get<double>(), wa);
  check_equal(zb.get<double>(), wb);
  {
    StreamGuard use(s2);
    check_equal(k(a).get<double>(), wa);
  }
}

TEST_CASE("the second call with the same dtypes and layout hits the memory cache", "[ops][gpu]") {
  ElementwiseKernel k("T x, T y", "T z", "z = x - y", "sub_cached");
  ndarray x = asarray(test::random_vector<float>(1 << 20)),
          y = asarray(test::random_vector<float>(1 << 20));
  ndarray z = k(x, y);
  auto& st = cache::stats();
  const auto compiles = st.nvrtc_compiles.load(), hits = st.disk_hits.load(),
             misses = st.disk_misses.load();
  for (int r = 0; r < 10; ++r) k(x, y, z);
  ElementwiseKernel same("T x, T y", "T z", "z = x - y", "sub_cached");  // equal definition
  same(x, y, z);
  CHECK(st.nvrtc_compiles.load() == compiles);
  CHECK(st.disk_hits.load() == hits);
  CHECK(st.disk_misses.load() == misses);
}

TEST_CASE("per-call block sizes, and bad calls that need arrays", "[ops][gpu]") {
  ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = x + y", "add_checks");
  auto hx = test::random_vector<float>(10000), hy = test::random_vector<float>(10000);
  ndarray x = asarray(hx), y = asarray(hy);
  std::vector<float> want(10000);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = hx[i] + hy[i];
  check_equal(k(x, y, launch_options{.block_size = 64}).get<float>(), want);
  check_equal(k(x, y, launch_options{.block_size = 1024}).get<float>(), want);
  CHECK_THROWS_AS(k(x, y, launch_options{.block_size = 2048}), ValueError);
  ndarray d = asarray(test::random_vector<double>(10000));
  CHECK_THROWS_WITH(k(d, y), Catch::Contains("'x' is a float64 array"));
  CHECK_THROWS_AS(k(x, asarray(test::random_vector<float>(3))), ShapeError);
  CHECK_THROWS_WITH(k(x, asarray(test::random_vector<float>(3))),
                    Catch::Contains("could not be broadcast together with shapes (10000,) (3,)"));
  // An output may broadcast the inputs up (NumPy's out=), but must be the broadcast shape.
  ndarray up = poisoned({2, 10000}, float32);
  k(x, y, up);
  auto got_up = up.get<float>();
  check_equal(std::vector<float>(got_up.begin() + 10000, got_up.end()), want);
  ndarray wrong = poisoned({10000, 1}, float32);
  CHECK_THROWS_WITH(k(x, y, wrong), Catch::Contains("output 'z' has shape (10000, 1)"));
  ElementwiseKernel nored("T x", "T z", "z = x + 1", "no_reduce", {.reduce_dims = false});
  ndarray m = asarray(test::random_vector<float>(24), Shape{2, 3, 4});
  auto hm = m.get<float>();
  auto got = nored(m.transpose(Shape{2, 0, 1})).get<float>();
  std::vector<float> w;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) w.push_back(hm[std::size_t(b * 12 + c * 4 + a)] + 1);
  check_equal(got, w);
}

namespace {

// x.T + y and its relatives on an R x C loop (x stored C x R, so x.T is R x C and transposed),
// against the host; outputs poisoned first. These take the tiled path where the loop stays 2-D.
template <class T>
void check_transposed_adds(std::int64_t R, std::int64_t C) {
  INFO(fmt::format("{} x {} {}", R, C, dtype_of<T>().name()));
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "add_transposed");
  auto sum = [](T a, T b) {
    if constexpr (std::is_same_v<T, half>)
      return T(float(a) + float(b));  // exact: the inputs are quarters
    else
      return T(a + b);
  };
  const auto n = std::size_t(R * C);
  const auto hx = random_of<T>(n), hy = random_of<T>(n);
  const ndarray x = upload(hx, {C, R}), y = upload(hy, {R, C}), yc = upload(hy, {C, R});
  auto xt = [&](std::int64_t r, std::int64_t c) { return hx[std::size_t(c * R + r)]; };
  auto yr = [&](std::int64_t r, std::int64_t c) { return hy[std::size_t(r * C + c)]; };
  auto want_of = [&](auto f) {
    std::vector<T> w(n);
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t c = 0; c < C; ++c) w[std::size_t(r * C + c)] = f(r, c);
    return w;
  };
  const auto want =
      want_of([&](std::int64_t r, std::int64_t c) { return sum(xt(r, c), yr(r, c)); });
  {  // x.T + y
    ndarray z = poisoned({R, C}, dtype_of<T>());
    add(x.T(), y, z);
    check_equal(z.get<T>(), want);
  }
  {  // y + x.T
    ndarray z = poisoned({R, C}, dtype_of<T>());
    add(y, x.T(), z);
    check_equal(z.get<T>(),
                want_of([&](std::int64_t r, std::int64_t c) { return sum(yr(r, c), xt(r, c)); }));
  }
  {  // x.T + yc.T: both transposed
    ndarray z = poisoned({R, C}, dtype_of<T>());
    add(x.T(), yc.T(), z);
    check_equal(z.get<T>(), want_of([&](std::int64_t r, std::int64_t c) {
                  return sum(xt(r, c), hy[std::size_t(c * R + r)]);
                }));
  }
  {  // a transposed output: zc.T = x.T + y, so zc (C x R) holds the transpose of want
    ndarray zc = poisoned({C, R}, dtype_of<T>());
    add(x.T(), y, zc.T());
    std::vector<T> w(n);
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t c = 0; c < C; ++c) w[std::size_t(c * R + r)] = want[std::size_t(r * C + c)];
    check_equal(zc.get<T>(), w);
  }
  {  // in place: y2 = x.T + y2 (the same elements: no copy)
    ndarray y2 = upload(hy, {R, C});
    add(x.T(), y2, y2);
    check_equal(y2.get<T>(), want);
  }
}

template <class T>
void check_transposed_in_place_square(std::int64_t m) {
  // a += a.T overlaps a other than element for element: the input is copied first (NumPy's
  // result, as if a.T were read before any write).
  INFO(fmt::format("{0} x {0} {1}", m, dtype_of<T>().name()));
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "add_transposed");
  const auto ha = random_of<T>(std::size_t(m * m));
  ndarray a = upload(ha, {m, m});
  add(a, a.T(), a);
  std::vector<T> want(ha.size());
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 0; c < m; ++c)
      want[std::size_t(r * m + c)] = T(ha[std::size_t(r * m + c)] + ha[std::size_t(c * m + r)]);
  check_equal(a.get<T>(), want);
}

}  // namespace

TEST_CASE("transposed operands (tiled through shared memory) match the host for odd shapes",
          "[ops][gpu]") {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {
      {1, 1}, {31, 31}, {33, 33}, {1000, 3}, {3, 1000}, {8193, 17}, {64, 96}, {1, 40}};
  for (auto [r, c] : shapes) check_transposed_adds<float>(r, c);
  for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{33, 70}, {1000, 3}, {3, 1000}}) {
    check_transposed_adds<std::int8_t>(r, c);
    check_transposed_adds<double>(r, c);
    check_transposed_adds<std::complex<float>>(r, c);
  }
  // 1- and 2-byte dtypes by units of 8 elements (64 x 96), by the largest unit both axes hold
  // (36 x 40: by 4; 44 x 70: by pairs) and by one element (45 x 33).
  for (auto [r, c] :
       {std::pair<std::int64_t, std::int64_t>{64, 96}, {36, 40}, {44, 70}, {45, 33}}) {
    check_transposed_adds<std::int8_t>(r, c);
    check_transposed_adds<std::int16_t>(r, c);
    check_transposed_adds<half>(r, c);
  }
  for (std::int64_t m : {1, 31, 33, 257}) {
    check_transposed_in_place_square<float>(m);
    check_transposed_in_place_square<std::complex<float>>(m);
  }
}

TEST_CASE("a tiled loop of more than 65535 row tiles covers every tile", "[ops][gpu]") {
  check_transposed_adds<float>(65535 * 32 + 45, 20);
}

TEST_CASE("an expression with a transposed operand takes the same tiled kernel", "[ops][gpu]") {
  const std::int64_t R = 300, C = 517;
  const auto hx = test::random_vector<float>(std::size_t(R * C)),
             hy = test::random_vector<float>(std::size_t(R * C));
  const ndarray x = asarray(hx, Shape{C, R}), y = asarray(hy, Shape{R, C});
  ndarray z = poisoned({R, C}, float32);
  z = x.T() * 2.0f + y;
  std::vector<float> want(std::size_t(R * C));
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c)
      want[std::size_t(r * C + c)] = hx[std::size_t(c * R + r)] * 2.0f + hy[std::size_t(r * C + c)];
  check_equal(z.get<float>(), want);
}
