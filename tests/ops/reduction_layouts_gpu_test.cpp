// Built-in reductions over every layout family on a GPU, against float64 host references on
// random data with poisoned outputs: every axis set of 4-D arrays (non-adjacent axes, the
// batch-norm axes), transposed, sliced and reversed views, short reduced extents beside long
// kept ones and the reverse, keepdims, size-1 and empty axes, 0-d, several dtype classes,
// argmin/argmax along outer axes, and more than 2^31 elements.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

using kiln::test::poisoned;

axes axes_of(std::uint64_t mask, int ndim) {
  std::vector<std::int64_t> ax;
  for (int d = 0; d < ndim; ++d)
    if (mask >> d & 1) ax.push_back(d);
  switch (ax.size()) {
    case 1:
      return axes(ax[0]);
    case 2:
      return axes{ax[0], ax[1]};
    case 3:
      return axes{ax[0], ax[1], ax[2]};
    case 4:
      return axes{ax[0], ax[1], ax[2], ax[3]};
    default:
      return axes();
  }
}

// Per output (C order of the reduced shape), the reduced elements of x (C-order data of
// `shape`) in C order of the reduced axes.
std::vector<std::vector<double>> groups(const std::vector<double>& x, const Shape& shape,
                                        std::uint64_t mask) {
  std::vector<std::vector<double>> g(std::size_t(shape_size(reduced_shape(shape, mask, false))));
  std::vector<std::int64_t> idx(std::size_t(shape.size()), 0);
  for (std::size_t flat = 0; flat < x.size(); ++flat) {
    std::int64_t o = 0;
    for (int d = 0; d < shape.size(); ++d)
      if (!(mask >> d & 1)) o = o * shape[d] + idx[std::size_t(d)];
    g[std::size_t(o)].push_back(x[flat]);
    for (int d = shape.size() - 1; d >= 0; --d) {
      if (++idx[std::size_t(d)] < shape[d]) break;
      idx[std::size_t(d)] = 0;
    }
  }
  return g;
}

struct Stats {
  double sum = 0, mean = 0, var = 0, max = -std::numeric_limits<double>::infinity(), abs = 0;
  std::int64_t argmax = 0;
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  for (std::size_t k = 0; k < v.size(); ++k) {
    s.sum += v[k];
    s.abs += std::abs(v[k]);
    if (v[k] > s.max) s.max = v[k], s.argmax = std::int64_t(k);
  }
  s.mean = s.sum / double(v.size());
  for (double x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= double(v.size());
  return s;
}

template <class T>
std::vector<double> host(const ndarray& a) {
  std::vector<double> out;
  for (const T& v : a.get<T>()) {
    if constexpr (std::is_same_v<T, half>)
      out.push_back(double(float(v)));
    else
      out.push_back(double(v));
  }
  return out;
}

// sum, mean, var, max (and argmax for one axis) of `x` over `mask` against the host; every
// output poisoned first, keepdims both ways.
void check_float32(const ndarray& x, std::uint64_t mask) {
  const auto hx = host<float>(x);
  const auto g = groups(hx, x.shape(), mask);
  const axes ax = axes_of(mask, x.ndim());
  for (bool keep : {false, true}) {
    const Shape shape = reduced_shape(x.shape(), mask, keep);
    ndarray s = poisoned(shape, float32), m = poisoned(shape, float32),
            v = poisoned(shape, float32), mx = poisoned(shape, float32);
    sum(x, ax, keep, {.out = s});
    mean(x, ax, keep, {.out = m});
    var(x, ax, keep, {.out = v});
    max(x, ax, keep, {.out = mx});
    const auto hs = s.get<float>(), hm = m.get<float>(), hv = v.get<float>(), hmx = mx.get<float>();
    std::size_t bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o) {
      const Stats t = stats(g[o]);
      const double n = double(g[o].size());
      bad += std::abs(hs[o] - t.sum) > 1e-5 * t.abs + 1e-6;
      bad += std::abs(hm[o] - t.mean) > 1e-5 * t.abs / n + 1e-6;
      bad += std::abs(hv[o] - t.var) > 1e-4 * t.var + 1e-6;
      bad += double(hmx[o]) != t.max;
    }
    INFO(x.shape().str() << " strides " << x.strides().str() << " mask " << mask << " keepdims "
                         << keep);
    CHECK(bad == 0);
  }
  if (std::popcount(mask) == 1) {
    const int axis = std::countr_zero(mask);
    ndarray am = poisoned(reduced_shape(x.shape(), mask, false), int64);
    argmax(x, axis, false, {.out = am});
    const auto ha = am.get<std::int64_t>();
    std::size_t bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o) bad += ha[o] != stats(g[o]).argmax;
    INFO(x.shape().str() << " argmax along " << axis);
    CHECK(bad == 0);
  }
}

ndarray random_f32(const Shape& shape, double lo = -4, double hi = 4) {
  return asarray(test::random_vector<float>(std::size_t(shape_size(shape)), lo, hi), shape);
}

}  // namespace

TEST_CASE("reductions over every axis set of a 4-D array match the host", "[ops][gpu]") {
  const ndarray x = random_f32({6, 33, 7, 130});
  for (std::uint64_t mask = 1; mask < 16; ++mask) check_float32(x, mask);
}

TEST_CASE("reductions over transposed, sliced and reversed views match the host", "[ops][gpu]") {
  const ndarray x = random_f32({12, 40, 9, 66});
  const ndarray t = x.transpose({2, 0, 3, 1});
  const ndarray sl =
      x(kiln::all, slice(1, std::nullopt, 2), kiln::all, slice(std::nullopt, std::nullopt, -1));
  const ndarray od =
      x(slice(0, 11), kiln::all, slice(1, 8), slice(3, 63));  // odd extents, offset base
  for (const ndarray* v : {&t, &sl, &od})
    for (std::uint64_t mask : {0b0001ull, 0b0010ull, 0b0100ull, 0b1000ull, 0b0101ull, 0b1010ull,
                               0b1101ull, 0b1111ull, 0b0110ull})
      check_float32(*v, mask);
}

TEST_CASE("batch-norm axes (0, 2, 3) of NCHW and (0, 2) of 3-D reduce as the host", "[ops][gpu]") {
  check_float32(random_f32({8, 16, 14, 14}), 0b1101);
  check_float32(random_f32({4, 64, 7, 7}), 0b1101);
  check_float32(random_f32({16, 24, 256}), 0b101);
  check_float32(random_f32({5, 3, 1, 1}), 0b1101);  // size-1 spatial axes
}

TEST_CASE("short reduced extents beside long kept ones and the reverse reduce as the host",
          "[ops][gpu]") {
  check_float32(random_f32({200003, 16}), 0b01);
  check_float32(random_f32({200003, 16}), 0b10);
  check_float32(random_f32({16, 200003}), 0b01);
  check_float32(random_f32({16, 200003}), 0b10);
  check_float32(random_f32({3, 1000003}), 0b10);
  check_float32(random_f32({1000003, 3}), 0b01);
  check_float32(random_f32({1, 1}), 0b11);
  check_float32(random_f32({7, 1, 5}), 0b010);  // a size-1 reduced axis
}

TEST_CASE("argmin and argmax along outer axes return the first extreme", "[ops][gpu]") {
  // Few distinct values: ties everywhere; the first index must win in every column.
  const Shape shape{2000, 37};
  std::vector<float> h(std::size_t(shape_size(shape)));
  for (std::size_t k = 0; k < h.size(); ++k) h[k] = float((k * 7919) % 13);
  const ndarray x = asarray(h, shape);
  ndarray amax = poisoned({37}, int64), amin = poisoned({37}, int64);
  argmax(x, 0, false, {.out = amax});
  argmin(x, 0, false, {.out = amin});
  const auto hx = amax.get<std::int64_t>(), hn = amin.get<std::int64_t>();
  for (std::int64_t c = 0; c < 37; ++c) {
    std::int64_t bi = 0, si = 0;
    for (std::int64_t r = 0; r < 2000; ++r) {
      if (h[std::size_t(r * 37 + c)] > h[std::size_t(bi * 37 + c)]) bi = r;
      if (h[std::size_t(r * 37 + c)] < h[std::size_t(si * 37 + c)]) si = r;
    }
    CHECK(hx[std::size_t(c)] == bi);
    CHECK(hn[std::size_t(c)] == si);
  }
  // keepdims along a middle axis of a transposed view
  const ndarray y = random_f32({64, 50, 33}).transpose({1, 0, 2});
  const ndarray ak = argmax(y, 1, true);
  CHECK(ak.shape() == Shape{50, 1, 33});
  const auto g = groups(host<float>(y), y.shape(), 0b010);
  const auto ha = ak.get<std::int64_t>();
  std::size_t bad = 0;
  for (std::size_t o = 0; o < g.size(); ++o) bad += ha[o] != stats(g[o]).argmax;
  CHECK(bad == 0);
}

TEST_CASE("integer, float16, float64 and bool reductions over axis sets keep NumPy's dtypes",
          "[ops][gpu]") {
  const Shape shape{20, 31, 66};
  const auto hi = test::random_vector<std::int8_t>(std::size_t(shape_size(shape)), -100, 100);
  const ndarray xi = asarray(hi, shape);
  for (std::uint64_t mask : {0b001ull, 0b101ull, 0b110ull, 0b011ull}) {
    const ndarray s = sum(xi, axes_of(mask, 3));
    REQUIRE(s.dtype() == int64);
    const auto g = groups(std::vector<double>(hi.begin(), hi.end()), shape, mask);
    const auto hs = s.get<std::int64_t>();
    std::size_t bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o) bad += double(hs[o]) != stats(g[o]).sum;  // exact
    INFO("mask " << mask);
    CHECK(bad == 0);
  }
  // float16 accumulates in float32 and rounds once (NumPy's float16 sums use float32 too).
  std::vector<half> hh;
  for (float f : test::random_vector<float>(std::size_t(shape_size(shape)), -2, 2))
    hh.push_back(half(f));
  const ndarray xh = asarray(hh, shape);
  std::vector<double> hd;
  for (half v : hh) hd.push_back(double(float(v)));
  for (std::uint64_t mask : {0b001ull, 0b101ull, 0b100ull}) {
    const ndarray s = sum(xh, axes_of(mask, 3));
    REQUIRE(s.dtype() == float16);
    const auto g = groups(hd, shape, mask);
    const auto hs = s.get<half>();
    std::size_t bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o) {
      const Stats t = stats(g[o]);
      bad += std::abs(double(float(hs[o])) - t.sum) > 1e-3 * std::abs(t.sum) + 1e-4 * t.abs + 1e-3;
    }
    INFO("mask " << mask);
    CHECK(bad == 0);
  }
  const auto hdd = test::random_vector<double>(std::size_t(shape_size(shape)));
  const ndarray xd = asarray(hdd, shape);
  for (std::uint64_t mask : {0b101ull, 0b010ull}) {
    const ndarray v = var(xd, axes_of(mask, 3), false, {.ddof = 1});
    const auto g = groups(hdd, shape, mask);
    const auto hv = v.get<double>();
    std::size_t bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o) {
      const Stats t = stats(g[o]);
      const double want = t.var * double(g[o].size()) / double(g[o].size() - 1);
      bad += std::abs(hv[o] - want) > 1e-12 * want;
    }
    CHECK(bad == 0);
  }
  std::vector<bool> hb(std::size_t(shape_size(shape)));
  for (std::size_t k = 0; k < hb.size(); ++k) hb[k] = (k % 97) == 3;
  const ndarray xb = asarray(hb, shape);
  const auto anyb = any(xb, {0, 2}).get<bool>();
  const auto cnt = count_nonzero(xb, {0, 2}).get<std::int64_t>();
  for (std::int64_t j = 0; j < 31; ++j) {
    std::int64_t c = 0;
    for (std::int64_t i = 0; i < 20; ++i)
      for (std::int64_t k = 0; k < 66; ++k) c += hb[std::size_t((i * 31 + j) * 66 + k)];
    CHECK(cnt[std::size_t(j)] == c);
    CHECK(anyb[std::size_t(j)] == (c > 0));
  }
}

TEST_CASE("empty and 0-d reductions over axis sets give NumPy's results", "[ops][gpu]") {
  const ndarray e = empty({0, 5, 3}, float32);
  CHECK(sum(e, {0, 2}).get<float>() == std::vector<float>(5, 0.0f));
  const auto m = mean(e, {0, 2}).get<float>();
  CHECK(std::all_of(m.begin(), m.end(), [](float v) { return std::isnan(v); }));
  CHECK(sum(e, 1).shape() == Shape{0, 3});
  const ndarray z = asarray<float>({3.5f}, Shape{});
  CHECK(sum(z).get<float>() == std::vector<float>{3.5f});
  CHECK(var(z).get<float>() == std::vector<float>{0.0f});
  CHECK(argmax(z).get<std::int64_t>() == std::vector<std::int64_t>{0});
}

TEST_CASE("reductions over more than 2^31 elements along outer and inner axes are exact",
          "[ops][gpu]") {
  const std::int64_t rows = (std::int64_t(1) << 20) + 3, cols = 2048;  // 2^31 + 6144 int8
  const ndarray x = ones({rows, cols}, int8);
  const auto down = sum(x, 0).get<std::int64_t>();
  CHECK(std::all_of(down.begin(), down.end(), [&](std::int64_t v) { return v == rows; }));
  const auto across = sum(x(slice(rows - 5, rows)), 1).get<std::int64_t>();
  CHECK(std::all_of(across.begin(), across.end(), [&](std::int64_t v) { return v == cols; }));
  CHECK(sum(x).get<std::int64_t>()[0] == rows * cols);
  CHECK(argmax(x, 0).get<std::int64_t>()[0] == 0);
}

TEST_CASE("runs of odd length and alignment (16-byte windows) reduce as the host in every dtype",
          "[ops][gpu]") {
  // Runs along the last reduced axis that whole vectors do not tile: NCHW planes of 7 x 7 and
  // 5 x 5, the (.., 8, 49) float16 batch statistics, views starting past a 16-byte boundary,
  // short rows of 123, long ones; a block per row, blocks splitting a row, lane groups.
  struct Case {
    Shape shape;
    std::uint64_t mask;
    std::int64_t skip;  // the view starts `skip` elements into each last-axis row
  };
  for (const Case& c : {Case{{6, 10, 8, 49}, 0b1011, 0}, Case{{3, 96, 5, 5}, 0b1101, 0},
                        Case{{4, 9, 3, 41}, 0b1101, 1}, Case{{5000, 123}, 0b10, 1},
                        Case{{2, 3, 70001}, 0b101, 3}, Case{{40, 3, 7, 7}, 0b1101, 2}}) {
    Shape base_shape = c.shape;
    base_shape[base_shape.size() - 1] += c.skip;
    const ndarray base = random_f32(base_shape);
    const auto view = [&](const ndarray& a) { return a(ellipsis, slice(c.skip, std::nullopt)); };
    const ndarray x = view(base);
    INFO(x.shape().str() << " mask " << c.mask << " skip " << c.skip);
    check_float32(x, c.mask);
    const axes ax = axes_of(c.mask, x.ndim());
    // float16: summed in float32, as NumPy does.
    const ndarray xh = view(base.astype(float16));
    const auto gh = groups(host<half>(xh), x.shape(), c.mask);
    const auto sh = sum(xh, ax, false, {.dtype = float32}).get<float>();
    std::size_t bad = 0;
    for (std::size_t o = 0; o < gh.size(); ++o) {
      const Stats t = stats(gh[o]);
      bad += std::abs(double(sh[o]) - t.sum) > 1e-5 * t.abs + 1e-5;
    }
    CHECK(bad == 0);
    // float64 sums, int8 sums (exact, int64), complex64 sums.
    const ndarray xd = view(base.astype(float64));
    const auto gd = groups(host<double>(xd), x.shape(), c.mask);
    const auto sd = sum(xd, ax).get<double>();
    bad = 0;
    for (std::size_t o = 0; o < gd.size(); ++o)
      bad += std::abs(sd[o] - stats(gd[o]).sum) > 1e-12 * stats(gd[o]).abs + 1e-12;
    CHECK(bad == 0);
    const ndarray xi = view((base * 25.0f).astype(int8).eval());
    const auto gi = groups(host<std::int8_t>(xi), x.shape(), c.mask);
    const auto si = sum(xi, ax).get<std::int64_t>();
    bad = 0;
    for (std::size_t o = 0; o < gi.size(); ++o) bad += double(si[o]) != stats(gi[o]).sum;
    CHECK(bad == 0);
    const ndarray xc = view(base.astype(complex64));
    const auto sc = sum(xc, ax).get<std::complex<float>>();
    const auto g = groups(host<float>(x), x.shape(), c.mask);
    bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o) {
      const Stats t = stats(g[o]);
      bad += std::abs(double(sc[o].real()) - t.sum) > 1e-5 * t.abs + 1e-5 || sc[o].imag() != 0.0f;
    }
    CHECK(bad == 0);
    // argmax over every axis of the view (the position counts along the runs).
    const auto hx = host<float>(x);
    const auto want = std::max_element(hx.begin(), hx.end()) - hx.begin();
    CHECK(argmax(x).get<std::int64_t>()[0] == want);
    CHECK(argmax(xd).get<std::int64_t>()[0] == want);
  }
}

TEST_CASE("inputs streamed flat with their period folded reduce as the host in every dtype",
          "[ops][gpu]") {
  // Dense inputs whose reduced outer axis wraps a short period (the folded strategy): narrow
  // columns whose rows whole vectors do not tile, (.., 8, 49) batch statistics, periods that
  // divide 512 and ones that do not, a flat length off the vector (the last partial vector),
  // argmax's positions, a reduction with no identity, keepdims both ways.
  ReductionKernel no_identity("T x", "T y", "x", "a > b ? a : b", "y = a", "", "folded_max");
  struct Case {
    Shape shape;
    std::uint64_t mask;
  };
  for (const Case& c :
       {Case{{20001, 61}, 0b01}, Case{{300, 8, 49}, 0b101}, Case{{5001, 3, 7}, 0b101},
        Case{{20001, 37}, 0b01}, Case{{40, 250, 2, 3}, 0b1011}}) {
    const ndarray x = random_f32(c.shape);
    INFO(x.shape().str() << " mask " << c.mask);
    check_float32(x, c.mask);
    const axes ax = axes_of(c.mask, x.ndim());
    const auto g = groups(host<float>(x), x.shape(), c.mask);
    ndarray mx = poisoned(reduced_shape(x.shape(), c.mask, false), float32);
    no_identity(x, mx, reduce_options{.axis = ax});
    const auto hmx = mx.get<float>();
    std::size_t bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o) bad += double(hmx[o]) != stats(g[o]).max;
    CHECK(bad == 0);
    // float16 summed in float32, float64, int8 (exact, int64), complex64.
    const ndarray xh = x.astype(float16);
    const auto gh = groups(host<half>(xh), x.shape(), c.mask);
    const auto sh = sum(xh, ax, false, {.dtype = float32}).get<float>();
    bad = 0;
    for (std::size_t o = 0; o < gh.size(); ++o)
      bad += std::abs(double(sh[o]) - stats(gh[o]).sum) > 1e-5 * stats(gh[o]).abs + 1e-5;
    CHECK(bad == 0);
    const ndarray xd = x.astype(float64);
    const auto sd = sum(xd, ax).get<double>();
    bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o)
      bad += std::abs(sd[o] - stats(g[o]).sum) > 1e-12 * stats(g[o]).abs + 1e-12;
    CHECK(bad == 0);
    const ndarray xi = (x * 25.0f).astype(int8).eval();
    const auto gi = groups(host<std::int8_t>(xi), x.shape(), c.mask);
    const auto si = sum(xi, ax).get<std::int64_t>();
    bad = 0;
    for (std::size_t o = 0; o < gi.size(); ++o) bad += double(si[o]) != stats(gi[o]).sum;
    CHECK(bad == 0);
    const auto sc = sum(x.astype(complex64), ax).get<std::complex<float>>();
    bad = 0;
    for (std::size_t o = 0; o < g.size(); ++o)
      bad += std::abs(double(sc[o].real()) - stats(g[o]).sum) > 1e-5 * stats(g[o]).abs + 1e-5 ||
             sc[o].imag() != 0.0f;
    CHECK(bad == 0);
  }
}
