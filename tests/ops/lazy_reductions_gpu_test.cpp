// Lazy reductions on a GPU (lazy_expr, kiln::fuse): softmax, log-softmax, layer norm,
// standardising over batch axes and batch statistics against float64 host references on
// random data, outputs poisoned first; both plans (one row kernel; passes of composite
// reductions), in place, float16 and float64 rows.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kiln/kiln.hpp"
#include "rows/row_plan.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

using kiln::test::poisoned;

ndarray random_f32(const Shape& shape, std::vector<float>& host, double lo = -3, double hi = 3) {
  host = test::random_vector<float>(std::size_t(shape_size(shape)), lo, hi);
  return asarray(host, shape);
}

// float16 data (random float32 rounded) and its values on the host, as float.
ndarray random_f16(const Shape& shape, std::vector<float>& host) {
  std::vector<float> h;
  const ndarray a = random_f32(shape, h).astype(float16);
  host.clear();
  for (half v : a.get<half>()) host.push_back(float(v));
  return a;
}

std::vector<double> host_softmax(const std::vector<float>& x, std::int64_t rows, std::int64_t n,
                                 bool log_form) {
  std::vector<double> out(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* v = &x[std::size_t(r * n)];
    double m = v[0], s = 0;
    for (std::int64_t k = 0; k < n; ++k) m = std::max(m, double(v[k]));
    for (std::int64_t k = 0; k < n; ++k) s += std::exp(double(v[k]) - m);
    for (std::int64_t k = 0; k < n; ++k)
      out[std::size_t(r * n + k)] =
          log_form ? double(v[k]) - m - std::log(s) : std::exp(double(v[k]) - m) / s;
  }
  return out;
}

std::vector<double> host_layer_norm(const std::vector<float>& x, std::int64_t rows, std::int64_t n,
                                    const std::vector<float>& g, const std::vector<float>& b,
                                    double eps) {
  std::vector<double> out(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* v = &x[std::size_t(r * n)];
    double m = 0, q = 0;
    for (std::int64_t k = 0; k < n; ++k) m += v[k];
    m /= double(n);
    for (std::int64_t k = 0; k < n; ++k) q += (v[k] - m) * (v[k] - m);
    q /= double(n);
    for (std::int64_t k = 0; k < n; ++k)
      out[std::size_t(r * n + k)] =
          (v[k] - m) / std::sqrt(q + eps) * g[std::size_t(k)] + b[std::size_t(k)];
  }
  return out;
}

// Whether a float32 output element still holds the poison (kiln::test::kPoison in every byte).
bool is_poison(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == 0x01010101u * test::kPoison;
}

template <class T>
double to_double(const T& v) {
  if constexpr (std::is_same_v<T, half>)
    return double(float(v));
  else
    return double(v);
}

template <class T = float>
std::size_t mismatches(const ndarray& got, const std::vector<double>& want, double abs_tol,
                       double rel_tol) {
  const auto h = got.get<T>();
  REQUIRE(h.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t k = 0; k < h.size(); ++k)
    if (!(std::abs(to_double(h[k]) - want[k]) <= abs_tol + rel_tol * std::abs(want[k])) &&
        bad++ == 0)
      first = k;
  if (bad)
    WARN("first mismatch at " << first << ": got " << to_double(h[first]) << ", want "
                              << want[first]);
  return bad;
}

}  // namespace

TEST_CASE("softmax and log-softmax over the last axis match the host for short, long and odd rows",
          "[ops][gpu]") {
  for (Shape shape : {Shape{257, 4096}, Shape{1000, 37}, Shape{64, 8192}, Shape{33, 16384},
                      Shape{5000, 4}, Shape{3, 300001}}) {
    INFO(shape.str());
    std::vector<float> h;
    const ndarray a = random_f32(shape, h);
    const auto x = lazy(a);
    const auto e = exp(x - max(x, -1, true));
    ndarray y = poisoned(shape, float32);
    eval_into(e / sum(e, -1, true), y);
    CHECK(mismatches(y, host_softmax(h, shape[0], shape[1], false), 1e-7, 1e-5) == 0);
    ndarray ls = poisoned(shape, float32);
    eval_into((x - max(x, -1, true)) - log(sum(exp(x - max(x, -1, true)), -1, true)), ls);
    CHECK(mismatches(ls, host_softmax(h, shape[0], shape[1], true), 1e-5, 1e-5) == 0);
  }
}

namespace {

// y / max(x) over `axis` of rows of x holding one value each (the divisor, drawn from the
// float32 range's edges and from random floats) and y of any bits: kiln_div_row's results
// against the host's IEEE division, bit for bit, with subnormal operands and results flushed
// to zero as generated kernels compile (-ftz=true, CuPy's default).
std::size_t row_division_mismatches(const Shape& shape, int axis) {
  const std::size_t n = std::size_t(shape_size(shape));
  const std::int64_t along = shape[std::size_t(axis)];
  std::int64_t inner = 1;
  for (std::size_t d = std::size_t(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  auto row_of = [&](std::size_t i) {
    return std::int64_t(i) / (inner * along) * inner + std::int64_t(i) % inner;
  };
  const float edges[] = {0.0f,          -0.0f,         INFINITY,  -INFINITY, NAN,
                         1e-40f,        -1e-45f,       0x1p-126f, 0x1p126f,  -0x1p127f,
                         3.4028235e38f, 0x1.fffffep0f, 3.0f,      -0.1f};
  std::vector<float> x(n), y(n);
  auto bits = test::random_vector<std::uint32_t>(n, 0, 4294967295.0);
  const auto normal = test::random_vector<float>(n, -3, 3);
  const auto spread = test::random_vector<float>(std::size_t(n / along), -30, 30);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t r = row_of(i);
    const float d = r % 3 == 0
                        ? edges[std::size_t(r / 3) % std::size(edges)]
                        : std::ldexp(1.0f + float(r % 97) / 97.0f, int(spread[std::size_t(r)]));
    x[i] = d;
    float v;
    std::memcpy(&v, &bits[i], sizeof v);
    y[i] = i % 2 ? v : normal[i] * (std::isfinite(d) && d != 0 ? d : 1.0f);
  }
  const auto xl = lazy(asarray(x, shape)), yl = lazy(asarray(y, shape));
  ndarray out = poisoned(shape, float32);
  eval_into(yl / max(xl, axis, true), out);
  const auto got = out.get<float>();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto flush = [](float v) { return std::fpclassify(v) == FP_SUBNORMAL ? 0.0f * v : v; };
    const float want = flush(flush(y[i]) / flush(x[i]));
    std::uint32_t gw, ww;
    std::memcpy(&gw, &got[i], 4);
    std::memcpy(&ww, &want, 4);
    if (gw != ww && !(std::isnan(got[i]) && std::isnan(want)) && bad++ == 0)
      WARN("at " << i << ": " << std::hexfloat << y[i] << " / " << x[i] << " gave " << got[i]
                 << ", IEEE " << want);
  }
  return bad;
}

}  // namespace

TEST_CASE("row kernels dividing by a row's value give IEEE division's results bit for bit",
          "[ops][gpu]") {
  CHECK(row_division_mismatches({300, 4096}, 1) == 0);     // a block a row
  CHECK(row_division_mismatches({3000, 37}, 1) == 0);      // lane groups
  CHECK(row_division_mismatches({4, 37000}, 1) == 0);      // long rows
  CHECK(row_division_mismatches({16, 8, 2048}, 1) == 0);   // rows along an outer axis, across
  CHECK(row_division_mismatches({16, 100, 513}, 1) == 0);  // columns
}

namespace {

// Softmax, log-softmax and layer norm (random weights) over the last axis of float32 rows `a`
// (`h` on the host), each into a poisoned output, against the host's.
void softmax_and_layer_norm_match(const Shape& shape, const ndarray& a,
                                  const std::vector<float>& h) {
  std::vector<float> hg, hb;
  const ndarray g = random_f32({shape[1]}, hg, 0.5, 2), b = random_f32({shape[1]}, hb);
  const auto x = lazy(a);
  ndarray y = poisoned(shape, float32);
  eval_into(exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true), y);
  CHECK(mismatches(y, host_softmax(h, shape[0], shape[1], false), 1e-9, 1e-5) == 0);
  ndarray ls = poisoned(shape, float32);
  eval_into((x - max(x, -1, true)) - log(sum(exp(x - max(x, -1, true)), -1, true)), ls);
  CHECK(mismatches(ls, host_softmax(h, shape[0], shape[1], true), 1e-5, 1e-5) == 0);
  ndarray ln = poisoned(shape, float32);
  eval_into((x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g + b, ln);
  CHECK(mismatches(ln, host_layer_norm(h, shape[0], shape[1], hg, hb, 1e-5), 1e-4, 1e-4) == 0);
}

}  // namespace

TEST_CASE("rows too long for a block's registers match the host", "[ops][gpu]") {
  // Enough rows for two blocks per SM, the rest of each row past the registers' held in
  // shared memory: vectors of four (32000, a vocabulary), single elements (an odd length), and
  // one vector a thread past the registers' (16384 + 2048); past shared memory (36000 on an
  // H100 or H200), streamed: each phase reading its row again from L2.
  for (Shape shape : {Shape{600, 32000}, Shape{300, 20001}, Shape{400, 18432}, Shape{600, 36000}}) {
    INFO(shape.str());
    std::vector<float> h;
    softmax_and_layer_norm_match(shape, random_f32(shape, h), h);
  }
  {
    // Streamed standardizing (no weights) runs var as one-pass moments: data far from zero
    // (1000 + [0, 1)) keeps NumPy's accuracy.
    const Shape shape{600, 36000};
    std::vector<float> h;
    const ndarray a = random_f32(shape, h, 1000, 1001);
    const std::vector<float> ones(std::size_t(shape[1]), 1.0f), zeros(std::size_t(shape[1]), 0.0f);
    const auto x = lazy(a);
    ndarray st = poisoned(shape, float32);
    eval_into((x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f), st);
    CHECK(mismatches(st, host_layer_norm(h, shape[0], shape[1], ones, zeros, 1e-5), 2e-3, 1e-4) ==
          0);
  }
  {
    // Streamed layer norm of data far from zero (1000 + [0, 1)) keeps NumPy's accuracy: var
    // is the mean of squared deviations, where a plain sum of squares would lose every digit.
    const Shape shape{600, 32000};
    std::vector<float> h, hg, hb;
    const ndarray a = random_f32(shape, h, 1000, 1001);
    const ndarray g = random_f32({shape[1]}, hg, 0.5, 2), b = random_f32({shape[1]}, hb);
    const auto x = lazy(a);
    ndarray ln = poisoned(shape, float32);
    eval_into((x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g + b, ln);
    CHECK(mismatches(ln, host_layer_norm(h, shape[0], shape[1], hg, hb, 1e-5), 2e-3, 1e-4) == 0);
  }
  {
    // Three leaves the phases read (x, a per-row scale, a per-column bias), rows of 16384:
    // past the registers 512 lanes hold of three leaves, so held, each leaf a region of its own
    // in shared memory; the per-row scale (no step along the row) is filled through registers.
    const Shape shape{300, 16384};
    std::vector<float> h, hc, hb;
    const ndarray a = random_f32(shape, h);
    const ndarray c = random_f32({shape[0], 1}, hc, 0.5, 2), b = random_f32({shape[1]}, hb);
    const auto x = lazy(a) * lazy(c) + lazy(b);
    ndarray y = poisoned(shape, float32);
    eval_into(exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true), y);
    std::vector<float> hz(h.size());
    for (std::int64_t r = 0; r < shape[0]; ++r)
      for (std::int64_t k = 0; k < shape[1]; ++k)
        hz[std::size_t(r * shape[1] + k)] =
            h[std::size_t(r * shape[1] + k)] * hc[std::size_t(r)] + hb[std::size_t(k)];
    CHECK(mismatches(y, host_softmax(hz, shape[0], shape[1], false), 1e-9, 1e-5) == 0);
  }
  {
    // float64 rows of 12000 (past 512 lanes of 8 pairs), and layer norm in place: each row is
    // read into registers and shared memory before it is written.
    const Shape shape{300, 12000};
    std::vector<float> h, hg, hb;
    const ndarray a = random_f32(shape, h).astype(float64);
    const auto x = lazy(a);
    ndarray y = poisoned(shape, float64);
    eval_into(exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true), y);
    CHECK(mismatches<double>(y, host_softmax(h, shape[0], shape[1], false), 1e-12, 1e-9) == 0);
    ndarray c = copy(random_f32(shape, h));
    fuse([](auto& v) { v = (v - kiln::mean(v, -1, true)) / kiln::std(v, -1, true); })(c);
    std::vector<float> ones(std::size_t(shape[1]), 1.0f), zeros(std::size_t(shape[1]), 0.0f);
    CHECK(mismatches(c, host_layer_norm(h, shape[0], shape[1], ones, zeros, 0.0), 1e-4, 1e-4) == 0);
  }
  // float16 rows of 40000 (past 512 lanes of 8 vectors of 8), computed in float32.
  const Shape shape{300, 40000};
  std::vector<float> hh;
  const ndarray ah = random_f16(shape, hh);
  const auto x = lazy(ah);
  ndarray y = poisoned(shape, float16);
  eval_into(exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true), y);
  CHECK(mismatches<half>(y, host_softmax(hh, shape[0], shape[1], false), 1e-7, 1e-2) == 0);
}

TEST_CASE("rows split over a cluster of blocks match the host", "[ops][gpu]") {
  // Rows too long for one block's registers and shared memory, split over a cluster of 2, 4
  // or 8 blocks (sm_90; earlier GPUs run them streamed or as passes): a vocabulary of 50257
  // (odd: shifted windows), 128256, a row of 2^18 + 3, and one whose rows are too few for
  // two clusters of two per SM (wider clusters). Each phase's totals merge across the
  // cluster's blocks, so the softmax's max and sum, layer norm's mean and var and std's ddof
  // all see the whole row.
  const auto gpu = detail::RowDevice::of(device_properties(current_device()));
  for (Shape shape : {Shape{300, 50257}, Shape{80, 128256}, Shape{36, 262147}, Shape{100, 50257}}) {
    INFO(shape.str());
    {
      // On sm_90 and later these rows plan as clusters (2, 4, 8 and 4 blocks on an H100 or
      // H200); what runs below is that plan.
      const ndarray in = test::untouched(shape), out = test::untouched(shape);
      const std::vector<const ndarray*> arrays{&in, &out};
      const std::vector<dtype> types{float32, float32};
      detail::RowPlan p;
      const bool rows = detail::plan_rows(shape, 0b10, arrays, types, 1, {4, 2}, gpu, p);
      if (gpu.cluster_blocks > 1) CHECK((rows && p.spec.cluster > 1));
    }
    std::vector<float> h;
    const ndarray a = random_f32(shape, h);
    softmax_and_layer_norm_match(shape, a, h);
    const auto x = lazy(a);
    // std with ddof 1: the row's count, not a block's, in the divisor.
    ndarray st = poisoned(shape, float32);
    eval_into((x - mean(x, -1, true)) / kiln::std(x, -1, true, {.ddof = 1}), st);
    std::vector<double> want =
        host_layer_norm(h, shape[0], shape[1], std::vector<float>(std::size_t(shape[1]), 1.0f),
                        std::vector<float>(std::size_t(shape[1]), 0.0f), 0);
    const double scale = std::sqrt(double(shape[1] - 1) / double(shape[1]));
    for (auto& v : want) v *= scale;
    CHECK(mismatches(st, want, 1e-4, 1e-4) == 0);
  }
  // float16 rows of 100000 (8 elements a window), computed in float32.
  const Shape shape{300, 100000};
  std::vector<float> hh;
  const ndarray ah = random_f16(shape, hh);
  const auto x = lazy(ah);
  ndarray y = poisoned(shape, float16);
  eval_into(exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true), y);
  CHECK(mismatches<half>(y, host_softmax(hh, shape[0], shape[1], false), 1e-7, 1e-2) == 0);
}

namespace {

// Softmax (or log-softmax) over axis 0 of a (rows, cols) row-major host array, NumPy's way in
// double: max, exp(x - max), their sum; NaN comes through as NumPy's does.
template <class T>
std::vector<double> host_softmax_axis0(const std::vector<T>& x, std::int64_t rows,
                                       std::int64_t cols, bool log_form,
                                       std::vector<double>* sums = nullptr) {
  std::vector<double> out(x.size());
  for (std::int64_t c = 0; c < cols; ++c) {
    double m = -INFINITY, s = 0;
    bool nan = false;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double v = double(x[std::size_t(r * cols + c)]);
      nan = nan || std::isnan(v);
      m = std::max(m, v);
    }
    if (nan) m = NAN;
    for (std::int64_t r = 0; r < rows; ++r) s += std::exp(double(x[std::size_t(r * cols + c)]) - m);
    if (sums) sums->push_back(s);
    for (std::int64_t r = 0; r < rows; ++r) {
      const double v = double(x[std::size_t(r * cols + c)]);
      out[std::size_t(r * cols + c)] = log_form ? v - m - std::log(s) : std::exp(v - m) / s;
    }
  }
  return out;
}

// Mismatches where NaN must meet NaN.
template <class T>
std::size_t nan_mismatches(const ndarray& got, const std::vector<double>& want, double tol) {
  const auto h = got.get<T>();
  REQUIRE(h.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t k = 0; k < h.size(); ++k) {
    const double g = double(h[k]), w = want[k];
    const bool ok = std::isnan(w)   ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(g - w) <= tol * std::max(1.0, std::abs(w));
    if (!ok && bad++ == 0) WARN("first mismatch at " << k << ": got " << g << ", want " << w);
  }
  return bad;
}

}  // namespace

TEST_CASE("softmax over an outer axis runs its denominator in the max's pass and matches the host",
          "[ops][gpu]") {
  // Columns of 3000 (strided rows: no row kernel), with NumPy's NaN where a column holds inf,
  // NaN or only -inf, and exp(-inf - max) = 0 beside finite values.
  const std::int64_t rows = 3000, cols = 257;
  auto check = [&](auto zero) {
    using T = decltype(zero);
    const dtype t = std::is_same_v<T, float> ? float32 : float64;
    auto h = test::random_vector<T>(std::size_t(rows * cols), -20, 20);
    const T inf = std::numeric_limits<T>::infinity();
    for (std::int64_t r = 0; r < rows; ++r) h[std::size_t(r * cols + 1)] = -inf;  // only -inf
    h[std::size_t(17 * cols + 2)] = inf;
    h[std::size_t(2999 * cols + 3)] = std::numeric_limits<T>::quiet_NaN();
    for (std::int64_t r = 0; r < rows; r += 2) h[std::size_t(r * cols + 4)] = -inf;  // half
    const ndarray a = asarray(h, Shape{rows, cols});
    const auto x = lazy(a);
    const double tol = t == float32 ? 2e-5 : 1e-12;
    std::vector<double> sums;
    const auto want = host_softmax_axis0(h, rows, cols, false, &sums);
    ndarray y = poisoned({rows, cols}, t);
    eval_into(exp(x - max(x, 0, true)) / sum(exp(x - max(x, 0, true)), 0, true), y);
    CHECK(nan_mismatches<T>(y, want, tol) == 0);
    ndarray ls = poisoned({rows, cols}, t);
    auto s = x - max(x, 0, true);
    eval_into(s - log(sum(exp(s), 0, true)), ls);
    CHECK(nan_mismatches<T>(ls, host_softmax_axis0(h, rows, cols, true), tol) == 0);
    // The denominator as a result of its own (NaN for the column of -inf, as NumPy's).
    ndarray d = poisoned({cols}, t);
    eval_into(sum(exp(x - max(x, 0, true)), 0, false), d);
    CHECK(nan_mismatches<T>(d, sums, tol) == 0);
  };
  check(0.0f);
  check(0.0);
  // A middle axis of NCHW (channel softmax): 21 classes.
  const Shape shape{8, 21, 64, 96};
  std::vector<float> h;
  const ndarray a = random_f32(shape, h);
  const auto x = lazy(a);
  ndarray y = poisoned(shape, float32);
  eval_into(exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true), y);
  const std::int64_t hw = 64 * 96;
  std::vector<double> want(h.size());
  for (std::int64_t n = 0; n < 8; ++n)
    for (std::int64_t p = 0; p < hw; ++p) {
      double m = -INFINITY, sum_e = 0;
      for (std::int64_t c = 0; c < 21; ++c)
        m = std::max(m, double(h[std::size_t((n * 21 + c) * hw + p)]));
      for (std::int64_t c = 0; c < 21; ++c)
        sum_e += std::exp(h[std::size_t((n * 21 + c) * hw + p)] - m);
      for (std::int64_t c = 0; c < 21; ++c)
        want[std::size_t((n * 21 + c) * hw + p)] =
            std::exp(h[std::size_t((n * 21 + c) * hw + p)] - m) / sum_e;
    }
  CHECK(nan_mismatches<float>(y, want, 2e-5) == 0);
}

namespace {

// Host references over axis 1 of (N, C, P) data: rows of C elements strided by P.
template <class T>
std::vector<double> host_column_softmax(const std::vector<T>& h, std::int64_t N, std::int64_t C,
                                        std::int64_t P, bool log_form) {
  std::vector<double> out(h.size());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t p = 0; p < P; ++p) {
      auto at = [&](std::int64_t c) { return std::size_t((n * C + c) * P + p); };
      double m = -INFINITY, e = 0;
      for (std::int64_t c = 0; c < C; ++c) m = std::max(m, double(h[at(c)]));
      for (std::int64_t c = 0; c < C; ++c) e += std::exp(double(h[at(c)]) - m);
      for (std::int64_t c = 0; c < C; ++c)
        out[at(c)] =
            log_form ? double(h[at(c)]) - m - std::log(e) : std::exp(double(h[at(c)]) - m) / e;
    }
  return out;
}

// (x - mean) / sqrt(var + eps) * g[c] + b[c] over axis 1 (no g, b: the plain standardizing).
// `in_half`: float16 data, whose mean and x - mean NumPy (and kiln) round to float16 (a row of
// values close together loses most of its deviations' digits there, as it does in NumPy).
std::vector<double> host_column_norm(const std::vector<float>& h, std::int64_t N, std::int64_t C,
                                     std::int64_t P, const std::vector<float>& g = {},
                                     const std::vector<float>& b = {}, bool in_half = false) {
  auto round = [&](double v) { return in_half ? double(float(half(float(v)))) : v; };
  std::vector<double> out(h.size());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t p = 0; p < P; ++p) {
      auto at = [&](std::int64_t c) { return std::size_t((n * C + c) * P + p); };
      double m = 0, q = 0;
      for (std::int64_t c = 0; c < C; ++c) m += h[at(c)];
      m /= double(C);
      for (std::int64_t c = 0; c < C; ++c) q += (h[at(c)] - m) * (h[at(c)] - m);
      q /= double(C);
      const double mr = round(m);
      for (std::int64_t c = 0; c < C; ++c)
        out[at(c)] =
            round(h[at(c)] - mr) / std::sqrt(q + 1e-5) * (g.empty() ? 1.0 : g[std::size_t(c)]) +
            (b.empty() ? 0.0 : b[std::size_t(c)]);
    }
  return out;
}

// Standardizing over axis 1 of random float32 or float16 data of (N, C, ...) into a poisoned
// output: its elements off the host's by more than `tol`.
std::size_t column_standardize_mismatches(const Shape& shape, dtype t, double tol) {
  std::vector<float> h;
  const ndarray a = t == float16 ? random_f16(shape, h) : random_f32(shape, h);
  const auto x = lazy(a);
  ndarray y = poisoned(shape, t);
  eval_into((x - mean(x, 1, true)) / sqrt(var(x, 1, true) + 1e-5), y);
  const auto want = host_column_norm(h, shape[0], shape[1], shape_size(shape) / shape[0] / shape[1],
                                     {}, {}, t == float16);
  return t == float16 ? mismatches<half>(y, want, tol, tol) : mismatches(y, want, tol, tol);
}

// Integers of `shape` from value(k) of each flat index k, on the device and in `host`.
template <class T, class Value>
ndarray column_integers(const Shape& shape, std::vector<T>& host, Value value) {
  host.resize(std::size_t(shape_size(shape)));
  for (std::size_t k = 0; k < host.size(); ++k) host[k] = value(k);
  return asarray(host, shape);
}

// x less its maximum (or minimum) over axis 1 of (N, C, P) integers, exact in double.
template <class T>
std::vector<double> host_column_less_extreme(const std::vector<T>& h, std::int64_t N,
                                             std::int64_t C, std::int64_t P, bool largest) {
  std::vector<double> out(h.size());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t p = 0; p < P; ++p) {
      auto at = [&](std::int64_t c) { return std::size_t((n * C + c) * P + p); };
      T m = h[at(0)];
      for (std::int64_t c = 1; c < C; ++c)
        m = largest ? std::max(m, h[at(c)]) : std::min(m, h[at(c)]);
      for (std::int64_t c = 0; c < C; ++c) out[at(c)] = double(h[at(c)]) - double(m);
    }
  return out;
}

}  // namespace

TEST_CASE("rows along an outer axis (lane groups along strided rows) match the host",
          "[ops][gpu]") {
  // The CPU planner test gives these shapes' plans: 1, 2, 4 and 8 lanes a row.
  SECTION("layer norm over the channels of NCHW, a weight and a bias per channel") {
    const Shape shape{4, 32, 17, 9}, per_channel{1, 32, 1, 1};
    std::vector<float> h, hg, hb;
    const ndarray a = random_f32(shape, h), g = random_f32(per_channel, hg, 0.5, 2),
                  b = random_f32(per_channel, hb);
    const auto x = lazy(a);
    ndarray y = poisoned(shape, float32);
    eval_into((x - mean(x, 1, true)) / sqrt(var(x, 1, true) + 1e-5) * g + b, y);
    CHECK(mismatches(y, host_column_norm(h, 4, 32, 17 * 9, hg, hb), 1e-4, 1e-4) == 0);
  }
  SECTION("log-softmax over axis 0 of (5, 1000) float64, in place") {
    std::vector<float> h;
    ndarray a = random_f32({5, 1000}, h, -30, 30).astype(float64);
    const auto x = lazy(a);
    auto s = x - max(x, 0, true);
    eval_into(s - log(sum(exp(s), 0, true)), a);  // each lane reads its elements before writing
    CHECK(mismatches<double>(a, host_column_softmax(h, 1, 5, 1000, true), 1e-12, 1e-12) == 0);
  }
  SECTION("standardizing over 64 channels (4 lanes of 16, the longest float32 column)") {
    CHECK(column_standardize_mismatches({3, 64, 5, 41}, float32, 1e-4) == 0);
  }
  SECTION("float64 softmax over 100 channels (8 lanes of 16), planes of 23") {
    std::vector<float> h;
    const ndarray a = random_f32({2, 100, 23}, h, -30, 30).astype(float64);
    const auto x = lazy(a);
    ndarray y = poisoned({2, 100, 23}, float64);
    eval_into(exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true), y);
    CHECK(mismatches<double>(y, host_column_softmax(h, 2, 100, 23, false), 1e-13, 1e-12) == 0);
  }
  SECTION("softmax over channels read backwards (a negative step), odd planes") {
    const std::int64_t N = 3, C = 10, P = 6 * 37;
    std::vector<float> h;
    const ndarray a = random_f32({N, C, 6, 37}, h);
    const auto x = lazy(a(all, slice(std::nullopt, std::nullopt, -1)));
    ndarray y = poisoned({N, C, 6, 37}, float32);
    eval_into(exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true), y);
    std::vector<float> reversed(h.size());
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t p = 0; p < P; ++p)
          reversed[std::size_t((n * C + c) * P + p)] = h[std::size_t((n * C + C - 1 - c) * P + p)];
    CHECK(mismatches(y, host_column_softmax(reversed, N, C, P, false), 2e-6, 2e-5) == 0);
  }
  SECTION("float16 softmax over 3 channels of odd planes, computed in float32") {
    const Shape shape{2, 3, 7, 9};
    std::vector<float> hh;
    const ndarray ah = random_f16(shape, hh);
    const auto x = lazy(ah);
    ndarray y = poisoned(shape, float16);
    eval_into(exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true), y);
    CHECK(mismatches<half>(y, host_column_softmax(hh, 2, 3, 63, false), 2e-3, 2e-3) == 0);
  }
}

TEST_CASE("rows along an outer axis taken across (adjacent rows a lane group) match the host",
          "[ops][gpu]") {
  // The CPU planner test gives these shapes' plans: four, eight, sixteen, two rows a group.
  SECTION("softmax over 21 channels, four float32 rows a group of 4 lanes of 8") {
    const Shape shape{4, 21, 16, 36};
    std::vector<float> h;
    const ndarray a = random_f32(shape, h, -20, 20);
    const auto x = lazy(a);
    ndarray y = poisoned(shape, float32);
    eval_into(exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true), y);
    CHECK(mismatches(y, host_column_softmax(h, 4, 21, 16 * 36, false), 2e-7, 2e-5) == 0);
  }
  SECTION("standardizing over 32 channels (4 lanes of 8), the last block partial") {
    CHECK(column_standardize_mismatches({3, 32, 5, 44}, float32, 1e-4) == 0);
  }
  SECTION("log-softmax over 8 channels in place, four rows on one lane") {
    std::vector<float> h;
    ndarray a = random_f32({2, 8, 6, 10}, h, -30, 30);
    const auto x = lazy(a);
    auto s = x - max(x, 1, true);
    eval_into(s - log(sum(exp(s), 1, true)), a);  // each lane reads its elements before writing
    CHECK(mismatches(a, host_column_softmax(h, 2, 8, 60, true), 1e-5, 1e-5) == 0);
  }
  SECTION("float16 softmax over 24 channels, eight rows a group, computed in float32") {
    const Shape shape{2, 24, 4, 16};
    std::vector<float> hh;
    const ndarray ah = random_f16(shape, hh);
    const auto x = lazy(ah);
    ndarray y = poisoned(shape, float16);
    eval_into(exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true), y);
    CHECK(mismatches<half>(y, host_column_softmax(hh, 2, 24, 64, false), 2e-3, 2e-3) == 0);
  }
  SECTION("float16 standardizing over 24 channels, four rows a group of 4 lanes of 8") {
    // Eight rows would not leave registers for their moments: the planner takes four.
    CHECK(column_standardize_mismatches({3, 24, 4, 24}, float16, 4e-3) == 0);
  }
  SECTION("float16 standardizing over 4 channels, bound to 64 registers for its moments") {
    CHECK(column_standardize_mismatches({5, 4, 6, 20}, float16, 4e-3) == 0);
  }
  SECTION("int32 rows less their channel maximum, four rows a group") {
    std::vector<std::int32_t> h;
    const ndarray a = column_integers({3, 7, 2, 20}, h, [](std::size_t k) {
      return std::int32_t((k * 2654435761u) % 2001) - 1000;
    });
    const auto x = lazy(a);
    ndarray y = poisoned(a.shape(), int32);
    eval_into(x - max(x, 1, true), y);
    CHECK(mismatches<std::int32_t>(y, host_column_less_extreme(h, 3, 7, 40, true), 0, 0) == 0);
  }
  SECTION("uint8 rows less their channel minimum, sixteen rows a group") {
    std::vector<std::uint8_t> h;
    const ndarray a = column_integers(
        {2, 9, 4, 16}, h, [](std::size_t k) { return std::uint8_t((k * 2654435761u) >> 7); });
    const auto x = lazy(a);
    ndarray y = poisoned(a.shape(), uint8);
    eval_into(x - min(x, 1, true), y);
    CHECK(mismatches<std::uint8_t>(y, host_column_less_extreme(h, 2, 9, 64, false), 0, 0) == 0);
  }
  SECTION("views whose groups align for pairs only - two rows a group, the poison kept") {
    // Rows of 34 floats, 32 of them in the view: a group of four would straddle 16 bytes.
    const Shape base{2, 21, 8, 34}, shape{2, 21, 8, 32};
    std::vector<float> hb;
    const ndarray wide = random_f32(base, hb);
    std::vector<float> h;
    for (std::int64_t r = 0; r < 2 * 21 * 8; ++r)
      for (std::int64_t c = 0; c < 32; ++c) h.push_back(hb[std::size_t(r * 34 + c)]);
    const auto x = lazy(wide(all, all, all, slice(0, 32)));
    ndarray out = poisoned(base, float32);
    ndarray y = out(all, all, all, slice(0, 32));
    eval_into(exp(x - max(x, 1, true)) / sum(exp(x - max(x, 1, true)), 1, true), y);
    CHECK(mismatches(copy(y), host_column_softmax(h, 2, 21, 8 * 32, false), 2e-7, 2e-5) == 0);
    const auto all_out = out.get<float>();
    std::size_t kept = 0;
    for (std::size_t r = 0; r < std::size_t(2 * 21 * 8); ++r)
      for (std::size_t c = 32; c < 34; ++c) kept += is_poison(all_out[r * 34 + c]);
    CHECK(kept == std::size_t(2 * 21 * 8 * 2));
  }
}

TEST_CASE("kiln::fuse runs softmax and layer norm written with NumPy's functions", "[ops][gpu]") {
  const Shape shape{512, 1024};
  std::vector<float> h, hg, hb;
  const ndarray a = random_f32(shape, h), g = random_f32({1024}, hg, 0.5, 2),
                b = random_f32({1024}, hb);
  const auto softmax = fuse([](auto x) {
    auto e = kiln::exp(x - kiln::max(x, -1, true));
    return e / kiln::sum(e, -1, true);
  });
  const ndarray s = softmax(a);
  CHECK(mismatches(s, host_softmax(h, 512, 1024, false), 1e-7, 1e-5) == 0);
  CHECK(mismatches(softmax(a), host_softmax(h, 512, 1024, false), 1e-7, 1e-5) == 0);  // a cache hit
  const auto layer_norm = fuse([](auto x, auto gamma, auto beta, double eps) {
    return (x - kiln::mean(x, -1, true)) / kiln::sqrt(kiln::var(x, -1, true) + eps) * gamma + beta;
  });
  const ndarray y = layer_norm(a, g, b, 1e-5);
  CHECK(y.dtype() == float32);
  CHECK(mismatches(y, host_layer_norm(h, 512, 1024, hg, hb, 1e-5), 1e-4, 1e-4) == 0);
  // In place: x is read by its reductions and written by the same kernel.
  ndarray c = copy(a);
  fuse([](auto& x) { x = (x - kiln::mean(x, -1, true)) / kiln::std(x, -1, true); })(c);
  std::vector<float> ones(1024, 1.0f), zeros(1024, 0.0f);
  CHECK(mismatches(c, host_layer_norm(h, 512, 1024, ones, zeros, 0.0), 1e-4, 1e-4) == 0);
}

TEST_CASE("rows off their vectors (odd lengths, views starting inside a vector) match the host",
          "[ops][gpu]") {
  // Rows of 77 and 5 (too short for windows: element loads); read in shifted 16-byte windows:
  // lane groups (301: 16 lanes a row, two rows of different shifts in a warp; 1001), a block
  // (1023), a wide block (16001), rows held partly in shared memory (32001) and streamed ones
  // (36001); inputs that start 0-3 elements into a vector, and outputs that sit otherwise
  // (inputs then read element by element), whose neighbours outside the view must stay
  // untouched.
  for (Shape shape : {Shape{3000, 77}, Shape{700, 5}, Shape{4000, 301}, Shape{2000, 1001},
                      Shape{513, 1023}, Shape{40, 16001}, Shape{600, 32001}, Shape{600, 36001}}) {
    const std::int64_t m = shape[0], n = shape[1];
    for (std::int64_t start : {0, 1, 3}) {
      for (bool out_view : {false, true}) {
        INFO(shape.str() << " input starting " << start << " in, output "
                         << (out_view ? "a view one element in" : "its own"));
        std::vector<float> hbase, hg, hb;
        const ndarray base = random_f32({m, n + 3}, hbase);
        const ndarray a = base(all, slice(start, start + n));
        std::vector<float> h(std::size_t(m * n));
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t k = 0; k < n; ++k)
            h[std::size_t(r * n + k)] = hbase[std::size_t(r * (n + 3) + start + k)];
        const ndarray g = random_f32({n}, hg, 0.5, 2), b = random_f32({n}, hb);
        const auto x = lazy(a);
        ndarray out_base = poisoned({m, n + 2}, float32);
        auto run = [&](const lazy_expr& e, const std::vector<double>& want, double tol) {
          ndarray y = out_view ? out_base(all, slice(1, n + 1)) : poisoned(shape, float32);
          eval_into(e, y);
          CHECK(mismatches(y.copy(), want, tol, tol) == 0);
          if (out_view) {  // the columns either side of the view keep their poison
            const auto all_out = out_base.get<float>();
            const auto poison = poisoned({1}, float32).get<float>()[0];
            std::size_t touched = 0;
            for (std::int64_t r = 0; r < m; ++r)
              for (std::int64_t k : {std::int64_t(0), n + 1}) {
                const float v = all_out[std::size_t(r * (n + 2) + k)];
                touched += std::memcmp(&v, &poison, sizeof v) != 0;
              }
            CHECK(touched == 0);
          }
        };
        run(exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true),
            host_softmax(h, m, n, false), 1e-5);
        run((x - max(x, -1, true)) - log(sum(exp(x - max(x, -1, true)), -1, true)),
            host_softmax(h, m, n, true), 1e-5);
        run((x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g + b,
            host_layer_norm(h, m, n, hg, hb, 1e-5), 1e-4);
      }
    }
  }
  {  // int8 rows of odd length (windows of 16): x - max(x), exact.
    const std::int64_t m = 300, n = 5001;
    std::vector<float> hf;
    const ndarray a = random_f32({m, n}, hf, -100, 100).astype(int8);
    const auto h8 = a.get<std::int8_t>();
    std::vector<double> want(h8.size());
    for (std::int64_t r = 0; r < m; ++r) {
      std::int8_t mx = h8[std::size_t(r * n)];
      for (std::int64_t k = 0; k < n; ++k) mx = std::max(mx, h8[std::size_t(r * n + k)]);
      for (std::int64_t k = 0; k < n; ++k)
        want[std::size_t(r * n + k)] = double(std::int8_t(h8[std::size_t(r * n + k)] - mx));
    }
    const auto x = lazy(a);
    ndarray y = poisoned({m, n}, int8);
    eval_into(x - max(x, -1, true), y);
    CHECK(mismatches<std::int8_t>(y, want, 0, 0) == 0);
  }
  // float16 rows of odd length (windows of 8), starting one element in.
  const std::int64_t m = 300, n = 1001;
  std::vector<float> hbase;
  const ndarray base = random_f16({m, n + 1}, hbase);
  std::vector<float> h(std::size_t(m * n));
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t k = 0; k < n; ++k)
      h[std::size_t(r * n + k)] = hbase[std::size_t(r * (n + 1) + 1 + k)];
  const auto x = lazy(base(all, slice(1, n + 1)));
  ndarray y = poisoned({m, n}, float16);
  eval_into(exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true), y);
  CHECK(mismatches<half>(y, host_softmax(h, m, n, false), 1e-3, 1e-2) == 0);
}

TEST_CASE("layer norm of float16 and float64 rows matches the host", "[ops][gpu]") {
  const std::int64_t rows = 300, n = 768;
  std::vector<float> h, hg, hb;
  const ndarray a = random_f32({rows, n}, h), g = random_f32({n}, hg, 0.5, 2),
                b = random_f32({n}, hb);
  const auto want = host_layer_norm(h, rows, n, hg, hb, 1e-5);
  {
    const auto x = lazy(a.astype(float64));
    const ndarray y = (x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5) * g + b;
    CHECK(y.dtype() == float64);
    CHECK(mismatches<double>(y, want, 1e-9, 1e-9) == 0);
  }
  {
    const ndarray ah = a.astype(float16);
    std::vector<float> hh;
    for (half v : ah.get<half>()) hh.push_back(float(v));
    const auto x = lazy(ah);
    const ndarray y = (x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g.astype(float16) +
                      b.astype(float16);
    CHECK(y.dtype() == float16);
    std::vector<float> gh, bh;
    for (half v : g.astype(float16).get<half>()) gh.push_back(float(v));
    for (half v : b.astype(float16).get<half>()) bh.push_back(float(v));
    CHECK(mismatches<half>(y, host_layer_norm(hh, rows, n, gh, bh, 1e-5), 1e-2, 1e-2) == 0);
  }
}

TEST_CASE("standardising over batch axes and batch statistics run in the fewest passes",
          "[ops][gpu]") {
  // Over axis 0 of (N, D): rows along a strided axis, so a reduction pass then one elementwise.
  const Shape shape{300, 257};
  std::vector<float> h;
  const ndarray a = random_f32(shape, h, 5, 9);
  const auto x = lazy(a);
  ndarray z = poisoned(shape, float32);
  eval_into((x - mean(x, 0, true)) / kiln::std(x, 0, true), z);
  std::vector<double> want(h.size());
  for (std::int64_t c = 0; c < 257; ++c) {
    double m = 0, q = 0;
    for (std::int64_t r = 0; r < 300; ++r) m += h[std::size_t(r * 257 + c)];
    m /= 300;
    for (std::int64_t r = 0; r < 300; ++r)
      q += (h[std::size_t(r * 257 + c)] - m) * (h[std::size_t(r * 257 + c)] - m);
    const double sd = std::sqrt(q / 300);
    for (std::int64_t r = 0; r < 300; ++r)
      want[std::size_t(r * 257 + c)] = (h[std::size_t(r * 257 + c)] - m) / sd;
  }
  CHECK(mismatches(z, want, 1e-4, 1e-4) == 0);

  // Batch-norm statistics of NCHW: both in one pass (one multi-output reduction kernel).
  const Shape nchw{8, 16, 10, 10};
  std::vector<float> hn;
  const ndarray an = random_f32(nchw, hn, 1, 5);
  const auto stats = fuse([](auto v) {
    return std::make_tuple(kiln::mean(v, {0, 2, 3}), kiln::var(v, {0, 2, 3}, false, {.ddof = 1}));
  });
  const auto [m, v] = stats(an);
  REQUIRE(m.shape() == Shape{16});
  const auto hm = m.get<float>(), hv = v.get<float>();
  for (std::int64_t c = 0; c < 16; ++c) {
    double s = 0, q = 0;
    for (std::int64_t n = 0; n < 8; ++n)
      for (std::int64_t k = 0; k < 100; ++k) s += hn[std::size_t((n * 16 + c) * 100 + k)];
    const double mu = s / 800;
    for (std::int64_t n = 0; n < 8; ++n)
      for (std::int64_t k = 0; k < 100; ++k) {
        const double d = hn[std::size_t((n * 16 + c) * 100 + k)] - mu;
        q += d * d;
      }
    CHECK(std::abs(hm[std::size_t(c)] - mu) <= 1e-5 * mu);
    CHECK(std::abs(hv[std::size_t(c)] - q / 799) <= 1e-4 * q / 799);
  }
  // Normalising NCHW over (0, 2, 3) with the statistics: rows of (N, H, W) do not merge.
  const auto xn = lazy(an);
  ndarray bn = poisoned(nchw, float32);
  eval_into((xn - mean(xn, {0, 2, 3}, true)) * 2, bn);
  const auto hbn = bn.get<float>();
  std::size_t bad = 0;
  for (std::int64_t c = 0; c < 16; ++c)
    for (std::int64_t n = 0; n < 8; ++n)
      for (std::int64_t k = 0; k < 100; ++k) {
        const std::size_t i = std::size_t((n * 16 + c) * 100 + k);
        bad += std::abs(hbn[i] - (hn[i] - hm[std::size_t(c)]) * 2) > 1e-4;
      }
  CHECK(bad == 0);
}

namespace {

// Standardising (or softmax) of a logical (N, C, H, W) host array over (0, 2, 3), in double:
// each channel's N * H * W elements a row.
std::vector<double> host_over_batch(const std::vector<float>& x, const Shape& s, bool softmax) {
  const std::int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  std::vector<double> out(x.size());
  auto at = [&](std::int64_t b, std::int64_t ch, std::int64_t k) {
    return std::size_t((b * c + ch) * hw + k);
  };
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double m = 0, q = 0, mx = -INFINITY, e = 0;
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t k = 0; k < hw; ++k) {
        m += x[at(b, ch, k)];
        mx = std::max(mx, double(x[at(b, ch, k)]));
      }
    m /= double(n * hw);
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t k = 0; k < hw; ++k) {
        const double v = x[at(b, ch, k)];
        q += (v - m) * (v - m);
        e += std::exp(v - mx);
      }
    q /= double(n * hw);
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t k = 0; k < hw; ++k) {
        const double v = x[at(b, ch, k)];
        out[at(b, ch, k)] = softmax ? std::exp(v - mx) / e : (v - m) / std::sqrt(q + 1e-5);
      }
  }
  return out;
}

}  // namespace

TEST_CASE("standardising and softmax over the batch axes of NCHW match the host", "[ops][gpu]") {
  // Over (0, 2, 3) of NCHW (each channel's N * H * W elements a row, rows that do not merge
  // into one dim: passes): planes whose rows hold whole float4 (56 x 56, 10 x 10) and none
  // (7 x 7, 9 x 11), float16 (computed in float32) and float64, and a view written into a view.
  auto standardize = [](const lazy_expr& x) {
    return (x - mean(x, {0, 2, 3}, true)) / sqrt(var(x, {0, 2, 3}, true) + 1e-5);
  };
  auto softmax = [](const lazy_expr& x) {
    const axes b{0, 2, 3};
    return exp(x - max(x, b, true)) / sum(exp(x - max(x, b, true)), b, true);
  };
  for (Shape shape :
       {Shape{32, 128, 56, 56}, Shape{8, 16, 10, 10}, Shape{64, 256, 7, 7}, Shape{3, 300, 9, 11}}) {
    INFO(shape.str());
    std::vector<float> h;
    const ndarray a = random_f32(shape, h);
    ndarray z = poisoned(shape, float32);
    eval_into(standardize(lazy(a)), z);
    CHECK(mismatches(z, host_over_batch(h, shape, false), 1e-4, 1e-4) == 0);
    ndarray y = poisoned(shape, float32);
    eval_into(softmax(lazy(a)), y);
    CHECK(mismatches(y, host_over_batch(h, shape, true), 1e-9, 1e-4) == 0);
  }
  // float16 in and out (computed in float32), float64.
  {
    const Shape shape{16, 64, 16, 16};
    std::vector<float> h;
    const ndarray a = random_f16(shape, h);
    ndarray z = poisoned(shape, float16);
    eval_into(standardize(lazy(a)), z);
    CHECK(mismatches<half>(z, host_over_batch(h, shape, false), 2e-3, 2e-3) == 0);
  }
  {
    const Shape shape{4, 24, 9, 11};
    std::vector<float> h;
    const ndarray a = random_f32(shape, h).astype(float64);
    ndarray z = poisoned(shape, float64);
    eval_into(standardize(lazy(a)), z);
    CHECK(mismatches<double>(z, host_over_batch(h, shape, false), 1e-12, 1e-12) == 0);
  }
  // A view of channels 1..16 of (8, 20, 12, 12), written into the same channels of a poisoned
  // (8, 20, 12, 12): runs 20 * 144 elements apart in and out; the other channels keep their
  // poison.
  {
    const Shape base{8, 20, 12, 12}, shape{8, 16, 12, 12};
    std::vector<float> hb;
    const ndarray a = random_f32(base, hb);
    const ndarray x = a(all, slice(1, 17));
    std::vector<float> h;
    for (std::int64_t b = 0; b < 8; ++b)
      for (std::int64_t c = 1; c < 17; ++c)
        for (std::int64_t k = 0; k < 144; ++k) h.push_back(hb[std::size_t((b * 20 + c) * 144 + k)]);
    ndarray zb = poisoned(base, float32);
    ndarray z = zb(all, slice(1, 17));
    eval_into(standardize(lazy(x)), z);
    CHECK(mismatches(z.copy(), host_over_batch(h, shape, false), 1e-4, 1e-4) == 0);
    const auto all_out = zb.get<float>();
    std::size_t kept = 0;
    for (std::int64_t b = 0; b < 8; ++b)
      for (std::int64_t c : {0, 17, 18, 19})
        for (std::int64_t k = 0; k < 144; ++k)
          kept += is_poison(all_out[std::size_t((b * 20 + c) * 144 + k)]);
    CHECK(kept == 8 * 4 * 144);
  }
}

TEST_CASE("reductions over different axes in one expression and reductions as results evaluate",
          "[ops][gpu]") {
  const Shape shape{40, 70};
  std::vector<float> h;
  const ndarray a = random_f32(shape, h);
  const auto x = lazy(a);
  const ndarray y = x - mean(x, -1, true) + max(x, 0, true);
  const auto hy = y.get<float>();
  std::size_t bad = 0;
  for (std::int64_t r = 0; r < 40; ++r) {
    double m = 0;
    for (std::int64_t c = 0; c < 70; ++c) m += h[std::size_t(r * 70 + c)];
    m /= 70;
    for (std::int64_t c = 0; c < 70; ++c) {
      double mx = -1e30;
      for (std::int64_t q = 0; q < 40; ++q) mx = std::max(mx, double(h[std::size_t(q * 70 + c)]));
      bad += std::abs(hy[std::size_t(r * 70 + c)] - (h[std::size_t(r * 70 + c)] - m + mx)) > 1e-4;
    }
  }
  CHECK(bad == 0);
  // A reduction as the result, and a reduction of a reduction's expression.
  const ndarray total = sum(x * 2);
  double s = 0;
  for (float v : h) s += v;
  CHECK(std::abs(total.get<float>()[0] - 2 * s) <= 1e-3 * (1 + std::abs(s)));
  const ndarray nested = sum(x - mean(x, -1, true), -1);
  for (float v : nested.get<float>()) CHECK(std::abs(v) < 1e-4);
  // An eager reduction of an expression holding a lazy one: the lazy one runs first.
  const ndarray eager = kiln::max(expr(x - max(x, -1, true)), -1);
  for (float v : eager.get<float>()) CHECK(v == 0.0f);
  // ddof is a value, not structure: two calls share one kernel and differ.
  const ndarray v0 = x / var(x, -1, true), v1 = x / var(x, -1, true, {.ddof = 1});
  const auto h0 = v0.get<float>(), h1 = v1.get<float>();
  for (std::size_t k = 0; k < h0.size(); ++k) CHECK(std::abs(h1[k] / h0[k] - 69.0 / 70.0) < 1e-4);
}
