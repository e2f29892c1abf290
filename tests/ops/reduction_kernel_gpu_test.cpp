// ReductionKernel on a GPU: results against float64 host references on random data, outputs
// poisoned first, over every strategy (rows, columns, full, strided), many shapes.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

using kiln::test::poisoned;

// Host reference: reduce `x` (C-order data of `shape`) over `mask` with f, from `init`.
template <class F>
std::vector<double> host_reduce(const std::vector<double>& x, const Shape& shape,
                                std::uint64_t mask, double init, F f) {
  const Shape out = reduced_shape(shape, mask, false);
  std::vector<double> r(std::size_t(shape_size(out)), init);
  std::vector<std::int64_t> idx(std::size_t(shape.size()), 0);
  for (std::size_t flat = 0; flat < x.size(); ++flat) {
    std::int64_t o = 0;
    for (int d = 0; d < shape.size(); ++d)
      if (!(mask >> d & 1)) o = o * shape[d] + idx[std::size_t(d)];
    r[std::size_t(o)] = f(r[std::size_t(o)], x[flat]);
    for (int d = shape.size() - 1; d >= 0; --d) {
      if (++idx[std::size_t(d)] < shape[d]) break;
      idx[std::size_t(d)] = 0;
    }
  }
  return r;
}

// `scale`, where given: each output's sum of |x|. A float32 sum that cancels to near zero is
// only as exact as its terms: an error of a float32 epsilon of that scale is rounding.
void check_close(const std::vector<float>& got, const std::vector<double>& want, double rel = 1e-5,
                 const std::vector<double>& scale = {}) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double tol = rel * (1 + std::abs(want[k])) + (scale.empty() ? 0.0 : 1.2e-7 * scale[k]);
    if (!(std::abs(double(got[k]) - want[k]) <= tol) && bad++ == 0) first = k;
  }
  INFO("first mismatch at " << first << ": got " << (bad ? got[first] : 0) << " want "
                            << (bad ? want[first] : 0));
  CHECK(bad == 0);
}

const ReductionKernel& sum_kernel() {
  static const ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "test_sum");
  return k;
}

}  // namespace

TEST_CASE("a sum reduction matches the host over every axis subset of a 4-D array", "[ops][gpu]") {
  const Shape shape{5, 33, 7, 130};
  auto h = test::random_vector<float>(std::size_t(shape_size(shape)));
  std::vector<double> hd(h.begin(), h.end());
  ndarray x = asarray(h, shape);
  for (std::uint64_t mask = 1; mask < 16; ++mask) {
    // Every axis as NumPy's axis=None, any other set as a list.
    const auto axes_of = [](std::uint64_t m) { return m == 15 ? axes() : axes::from_mask(m); };
    const axes a = axes_of(mask);
    INFO("mask " << mask);
    ndarray out = poisoned(reduced_shape(shape, mask, false), float32);
    sum_kernel()(x, out, reduce_options{.axis = a});
    const auto add = [](double s, double v) { return s + v; };
    const auto add_abs = [](double s, double v) { return s + std::abs(v); };
    check_close(out.get<float>(), host_reduce(hd, shape, mask, 0, add), 1e-4,
                host_reduce(hd, shape, mask, 0, add_abs));
    // The same through a transposed view (other strategies).
    ndarray t = x.transpose({3, 2, 1, 0});
    std::uint64_t tmask = 0;
    for (int d = 0; d < 4; ++d)
      if (mask >> d & 1) tmask |= 1ull << (3 - d);
    const axes ta = axes_of(tmask);
    ndarray tr = sum_kernel()(t, reduce_options{.axis = ta});
    // The host's sums over the transpose's elements in its C order.
    const auto tf = copy(t).get<float>();
    const std::vector<double> td(tf.begin(), tf.end());
    check_close(tr.get<float>(), host_reduce(td, t.shape(), tmask, 0, add), 1e-4,
                host_reduce(td, t.shape(), tmask, 0, add_abs));
  }
}

TEST_CASE("reductions cover odd sizes, 1-element axes, keepdims, 0-d and empty arrays",
          "[ops][gpu]") {
  for (Shape shape : {Shape{1}, Shape{7}, Shape{1000003}, Shape{3, 1}, Shape{1, 3},
                      Shape{257, 1025}, Shape{1025, 3}, Shape{2, 1, 70001}}) {
    INFO(shape.str());
    auto h = test::random_vector<float>(std::size_t(shape_size(shape)));
    std::vector<double> hd(h.begin(), h.end());
    ndarray x = asarray(h, shape);
    for (int d = -1; d < shape.size(); ++d) {
      const std::uint64_t mask = d < 0 ? (1ull << shape.size()) - 1 : 1ull << d;
      ndarray out = poisoned(reduced_shape(shape, mask, true), float32);
      sum_kernel()(
          x, reduce_options{.axis = d < 0 ? axes() : axes(d), .keepdims = true, .out = {out}});
      check_close(out.get<float>(),
                  host_reduce(hd, shape, mask, 0, [](double s, double v) { return s + v; }), 1e-4);
    }
  }
  ndarray scalar0 = asarray<float>({2.5f}, Shape{});
  CHECK(sum_kernel()(scalar0).get<float>() == std::vector<float>{2.5f});
  ndarray empty0 = empty({0, 4}, float32);
  CHECK(sum_kernel()(empty0, reduce_options{.axis = 0}).get<float>() ==
        std::vector<float>(4, 0.0f));
  ReductionKernel mx("T x", "T y", "x", "a > b ? a : b", "y = a", "", "test_max");
  CHECK_THROWS_WITH(
      mx(empty0, reduce_options{.axis = 0}),
      Catch::Contains("zero-size array to reduction operation test_max which has no identity"));
  const ndarray none = mx(empty0, reduce_options{.axis = 1});  // nothing to reduce into
  CHECK(none.shape() == Shape{0});
}

TEST_CASE("with no identity a non-empty reduction gives the true result (CuPy gives 0)",
          "[ops][gpu]") {
  ReductionKernel mx("T x", "T y", "x", "a > b ? a : b", "y = a", "", "test_max_neg");
  for (std::int64_t n : {1, 31, 4097, 3000001}) {
    auto h = test::random_vector<float>(std::size_t(n), -9, -1);
    ndarray x = asarray(h);
    float want = -1e30f;
    for (float v : h) want = std::max(want, v);
    CHECK(mx(x).get<float>() == std::vector<float>{want});
    ndarray rows =
        mx(x.reshape({1, n}), reduce_options{.axis = 0});  // an outer reduction of one row
    CHECK(rows.get<float>() == h);
  }
}

TEST_CASE("every output of a multi-output reduction is returned", "[ops][gpu]") {
  ReductionKernel k("T x", "T s, T my_s2", "x", "a + b", "s = a;\nmy_s2 = a * 2", "0", "test_two");
  auto h = test::random_vector<float>(10007);
  ndarray x = asarray(h, Shape{1, 10007});
  auto r = k(x, reduce_options{.axis = 1});
  REQUIRE(r.size() == 2);
  double want = 0;
  for (float v : h) want += v;
  check_close(r[0].get<float>(), {want});
  check_close(r[1].get<float>(), {2 * want});
}

TEST_CASE("the CuPy-docs l2norm, broadcast inputs and argmax-style _J", "[ops][gpu]") {
  ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
  auto h = test::random_vector<float>(1 << 20);
  double want = 0;
  for (float v : h) want += double(v) * v;
  check_close(l2(asarray(h)).get<float>(), {std::sqrt(want)});
  ReductionKernel dot("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "test_dot");
  auto hx = test::random_vector<float>(300 * 5), hy = test::random_vector<float>(5);
  ndarray z = dot(asarray(hx, Shape{300, 5}), asarray(hy), reduce_options{.axis = 1});
  std::vector<double> w(300, 0);
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 5; ++j)
      w[std::size_t(i)] += double(hx[std::size_t(i * 5 + j)]) * hy[std::size_t(j)];
  check_close(z.get<float>(), w);
  ReductionKernel am(
      "T x", "int64 y", "arg_t{(double)x, (long long)_J}",
      "(b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a", "y = a.i", "", "test_argmax",
      {.reduce_type = "arg_t", .preamble = "struct arg_t { double v; long long i; };"});
  auto ha = test::random_vector<float>(50001);
  ha[777] = 100;
  ha[40000] = 100;
  CHECK(am(asarray(ha)).get<std::int64_t>() == std::vector<std::int64_t>{777});
}

TEST_CASE("a sum over more than 2^31 int8 elements uses 64-bit indices", "[ops][gpu]") {
  ReductionKernel k("int8 x", "int64 y", "(long long)x", "a + b", "y = a", "0", "test_big_sum");
  const std::int64_t n = (std::int64_t(1) << 31) + 4096;
  ndarray x = empty({n}, int8);
  fill(x, 3);
  CHECK(k(x).get<std::int64_t>() == std::vector<std::int64_t>{3 * n});
  auto rows = k(x.reshape({n / 4096, 4096}), reduce_options{.axis = -1}).get<std::int64_t>();
  CHECK(rows == std::vector<std::int64_t>(std::size_t(n / 4096), 3 * 4096));
  auto cols = k(x.reshape({n / 4096, 4096}), reduce_options{.axis = 0}).get<std::int64_t>();
  CHECK(cols == std::vector<std::int64_t>(4096, 3 * (n / 4096)));
}

TEST_CASE("split reductions reuse each stream's counters, which every launch leaves zero",
          "[ops][gpu]") {
  // Few rows of many elements split each row over several blocks, whose last block counts
  // the others in a counter of the stream (split_counters.hpp). Back-to-back launches on
  // several streams, row (60 and 700 rows), whole-array and column (outer) splits, and more
  // streams than get a slab must all give the host's sums.
  const auto add = [](double s, double v) { return s + v; };
  const auto add_abs = [](double s, double v) { return s + std::abs(v); };
  struct Case {
    Shape shape;
    std::uint64_t mask;
  };
  const Case cases[] = {{{60, 40000}, 2}, {{700, 9000}, 2}, {{1 << 21}, 1}, {{30000, 900}, 1}};
  std::vector<ndarray> xs;
  std::vector<std::vector<double>> want, scale;
  for (const Case& c : cases) {
    auto h = test::random_vector<float>(std::size_t(shape_size(c.shape)));
    std::vector<double> hd(h.begin(), h.end());
    xs.push_back(asarray(h, c.shape));
    want.push_back(host_reduce(hd, c.shape, c.mask, 0, add));
    scale.push_back(host_reduce(hd, c.shape, c.mask, 0, add_abs));
  }
  auto run_all = [&](const std::string& where) {
    for (std::size_t k = 0; k < std::size(cases); ++k) {
      INFO(where << ", case " << k);
      ndarray out = poisoned(reduced_shape(cases[k].shape, cases[k].mask, false), float32);
      sum_kernel()(xs[k], out, reduce_options{.axis = axes::from_mask(cases[k].mask)});
      check_close(out.get<float>(), want[k], 1e-4, scale[k]);
    }
  };
  Stream s1(true), s2(true);
  for (int round = 0; round < 3; ++round) {
    run_all("default stream");
    {
      StreamGuard use(s1);
      run_all("stream 1");
    }
    {
      StreamGuard use(s2);
      run_all("stream 2");
    }
  }
  std::vector<Stream> many;
  for (int k = 0; k < 70; ++k) many.emplace_back(true);
  for (std::size_t k = 0; k < many.size(); ++k) {
    StreamGuard use(many[k]);
    INFO("stream " << k << " of " << many.size());
    ndarray out = poisoned({60}, float32);
    sum_kernel()(xs[0], out, reduce_options{.axis = -1});
    check_close(out.get<float>(), want[0], 1e-4, scale[0]);
  }
}

TEST_CASE("row reductions over rows of any length and alignment match the host", "[ops][gpu]") {
  // Long rows that whole 16-byte vectors do not tile are read in vectors from each row's
  // first boundary, the ends one element at a time (shorter ones element by element): odd
  // lengths, views starting past an element, a block per row and several blocks per row,
  // warps per row, float16 / float32 / float64, sums, max (no identity) and argmax.
  const auto add = [](double s, double v) { return s + v; };
  const auto add_abs = [](double s, double v) { return s + std::abs(v); };
  const auto maxf = [](double s, double v) { return std::max(s, v); };
  const ReductionKernel max_kernel("T x", "T y", "x", "a > b ? a : b", "y = a", "",
                                   "test_peel_max");
  struct Case {
    std::int64_t rows, cols, skip;  // a (rows, cols + skip) array, viewed from column `skip`
  };
  for (const Case& c : {Case{3, 18631, 0}, Case{5000, 203, 1}, Case{64, 1001, 3}, Case{7, 37, 1},
                        Case{2, 300001, 2}, Case{257, 4099, 0}, Case{40, 9001, 1}}) {
    INFO("rows " << c.rows << " cols " << c.cols << " skip " << c.skip);
    auto h = test::random_vector<float>(std::size_t(c.rows * (c.cols + c.skip)));
    const ndarray full_x = asarray(h, Shape{c.rows, c.cols + c.skip});
    const ndarray x = full_x(all, slice(c.skip, std::nullopt));
    std::vector<double> hd;  // the view's elements in C order
    for (std::int64_t r = 0; r < c.rows; ++r)
      for (std::int64_t k = 0; k < c.cols; ++k)
        hd.push_back(h[std::size_t(r * (c.cols + c.skip) + c.skip + k)]);
    const Shape shape{c.rows, c.cols};
    ndarray s = poisoned({c.rows}, float32);
    sum_kernel()(x, s, reduce_options{.axis = -1});
    check_close(s.get<float>(), host_reduce(hd, shape, 2, 0, add), 1e-4,
                host_reduce(hd, shape, 2, 0, add_abs));
    ndarray m = poisoned({c.rows}, float32);
    max_kernel(x, m, reduce_options{.axis = -1});
    const auto want_max = host_reduce(hd, shape, 2, -1e300, maxf);
    const auto got_max = m.get<float>();
    CHECK(std::vector<double>(got_max.begin(), got_max.end()) == want_max);
    const auto idx = argmax(x, -1).get<std::int64_t>();
    std::size_t bad = 0;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const auto row = hd.begin() + r * c.cols;
      bad += idx[std::size_t(r)] != std::max_element(row, row + c.cols) - row;
    }
    CHECK(bad == 0);
    // float16 and float64 rows of the same data.
    const ndarray xh = x.astype(float16), xd = x.astype(float64);
    const auto hh = copy(xh).astype(float64).get<double>();
    const auto sh = sum(xh, -1, false, {.dtype = float32}).get<float>();
    check_close(sh, host_reduce(hh, shape, 2, 0, add), 1e-3, host_reduce(hh, shape, 2, 0, add_abs));
    const auto sd = sum(xd, -1).get<double>();
    const auto wd = host_reduce(hd, shape, 2, 0, add);
    std::size_t dbad = 0;
    for (std::size_t k = 0; k < wd.size(); ++k)
      dbad += !(std::abs(sd[k] - wd[k]) <= 1e-9 * (1 + std::abs(wd[k])));
    CHECK(dbad == 0);
  }
}
