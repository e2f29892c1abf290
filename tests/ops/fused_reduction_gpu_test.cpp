// Fused reductions of expressions on a GPU against float64 host references on random data,
// and that they allocate no temporary for the expression (one kernel, no x * x array).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

bool close(double got, double want, double rel = 1e-5) {
  return std::abs(got - want) <= rel * (1 + std::abs(want));
}

// The pool's reserved bytes before and after `f` with nothing cached at the start: a temporary
// the size of x would have to be reserved (and stays cached) on top of f's result.
template <class F>
std::size_t reserved_growth(F&& f) {
  auto& pool = get_default_memory_pool();
  synchronize_device();
  pool.free_all_blocks();
  const std::size_t before = pool.total_bytes();
  f();
  synchronize_device();
  return pool.total_bytes() - before;
}

}  // namespace

TEST_CASE("sum(x * x) is one fused kernel with no temporary", "[ops][gpu]") {
  const std::size_t n = 3000017;
  auto h = test::random_vector<float>(n);
  ndarray x = asarray(h);
  double want = 0;
  for (float v : h) want += double(v) * v;
  ndarray r;
  const std::size_t used_before = (synchronize_device(), get_default_memory_pool().used_bytes());
  const std::size_t grown = reserved_growth([&] { r = sum(x * x); });
  const std::size_t used_after = get_default_memory_pool().used_bytes();
  CHECK(r.dtype() == float32);
  CHECK(r.ndim() == 0);
  CHECK(close(r.get<float>()[0], want, 1e-5));
  // Only the 0-d result (and the split reduction's small partials) beside x: no n floats.
  CHECK(used_after - used_before < n * sizeof(float) / 4);
  CHECK(grown < n * sizeof(float) / 2);
  // The same with a scalar leaf and a repeat (the cached kernel; scalar values are arguments).
  CHECK(close(sum(x * x * 2).get<float>()[0], 2 * want, 1e-5));
  CHECK(close(sum(x * x * 3).get<float>()[0], 3 * want, 1e-5));
  CHECK(&aot::fused_reduction(x * x * 2, "sum") == &aot::fused_reduction(x * x * 3, "sum"));
}

TEST_CASE("max(abs(x - y), axis=1) and argmax fuse over rows", "[ops][gpu]") {
  const std::int64_t rows = 517, cols = 1031;
  auto hx = test::random_vector<double>(std::size_t(rows * cols));
  auto hy = test::random_vector<double>(std::size_t(cols));
  ndarray x = asarray(hx, Shape{rows, cols}), y = asarray(hy);  // y broadcasts over rows
  ndarray m = max(abs(x - y), 1);
  ndarray a = argmax(abs(x - y), 1);
  ndarray mk = max(abs(x - y), 1, true);
  REQUIRE(m.shape() == Shape{rows});
  CHECK(m.dtype() == float64);
  CHECK(a.dtype() == int64);
  CHECK(mk.shape() == Shape{rows, 1});
  auto gm = m.get<double>();
  auto ga = a.get<std::int64_t>();
  int bad = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    double best = -1;
    std::int64_t at = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double v = std::abs(hx[std::size_t(i * cols + j)] - hy[std::size_t(j)]);
      if (v > best) best = v, at = j;
    }
    bad += gm[std::size_t(i)] != best || ga[std::size_t(i)] != at;
  }
  CHECK(bad == 0);
  CHECK(mk.get<double>() == gm);
}

TEST_CASE("mean over a transposed view, var and integer expressions fuse with NumPy's dtypes",
          "[ops][gpu]") {
  const std::int64_t r = 300, c = 257;
  auto hx = test::random_vector<float>(std::size_t(r * c));
  ndarray x = asarray(hx, Shape{r, c});
  ndarray xt = x.T();               // (c, r), not contiguous
  ndarray m = mean(xt * 2 + 1, 0);  // mean over xt's rows = over x's columns
  REQUIRE(m.shape() == Shape{r});
  CHECK(m.dtype() == float32);
  auto gm = m.get<float>();
  int bad = 0;
  for (std::int64_t i = 0; i < r; ++i) {
    double s = 0;
    for (std::int64_t j = 0; j < c; ++j) s += 2.0 * hx[std::size_t(i * c + j)] + 1;
    bad += !close(gm[std::size_t(i)], s / double(c), 1e-5);
  }
  CHECK(bad == 0);

  double s = 0, ss = 0;
  for (float v : hx) s += double(v) - 1;
  const double mu = s / double(hx.size());
  for (float v : hx) ss += (double(v) - 1 - mu) * (double(v) - 1 - mu);
  CHECK(close(var(xt - 1).get<float>()[0], ss / double(hx.size()), 1e-4));
  CHECK(close(kiln::std(x - 1, {}, false, {.ddof = 1}).get<float>()[0],
              std::sqrt(ss / double(hx.size() - 1)), 1e-4));

  auto hi = test::random_vector<std::int32_t>(100003);
  ndarray xi = asarray(hi);
  std::int64_t want = 0, pos = 0;
  for (auto v : hi) want += std::int64_t(v) * 3, pos += v > 0;
  ndarray si = sum(xi * 3);
  CHECK(si.dtype() == int64);
  CHECK(si.get<std::int64_t>()[0] == want);
  CHECK(count_nonzero(xi > 0).get<std::int64_t>()[0] == pos);
  CHECK(sum(xi > 0).dtype() == int64);
  CHECK(sum(xi > 0).get<std::int64_t>()[0] == pos);
  CHECK(any(xi > 7).get<bool>()[0] ==
        std::any_of(hi.begin(), hi.end(), [](auto v) { return v > 7; }));
  CHECK(all_of(xi != 0).get<bool>()[0]);  // random integers are never zero
  CHECK(mean(xi / 2).dtype() == float64);
}

TEST_CASE("linalg::norm(x - y) is one fused kernel with no temporary", "[ops][gpu]") {
  const std::size_t n = 4000037;
  auto hx = test::random_vector<float>(n), hy = test::random_vector<float>(n);
  ndarray x = asarray(hx), y = asarray(hy);
  double q = 0, l1 = 0, li = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const double d = double(hx[k]) - hy[k];
    q += d * d, l1 += std::abs(d), li = std::max(li, std::abs(d));
  }
  ndarray r;
  const std::size_t grown = reserved_growth([&] { r = linalg::norm(x - y); });
  CHECK(r.dtype() == float32);
  CHECK(close(r.get<float>()[0], std::sqrt(q), 1e-5));
  CHECK(grown < n * sizeof(float) / 2);
  CHECK(close(linalg::norm(x - y, 1.0).get<float>()[0], l1, 1e-5));
  CHECK(linalg::norm(x - y, INFINITY).get<float>()[0] == float(li));

  // Complex: |x - y|^2 accumulates in the real type.
  auto hc = test::random_vector<std::complex<float>>(10007),
       hd = test::random_vector<std::complex<float>>(10007);
  double qc = 0;
  for (std::size_t k = 0; k < hc.size(); ++k)
    qc += std::norm(std::complex<double>(hc[k]) - std::complex<double>(hd[k]));
  ndarray rc = linalg::norm(asarray(hc) - asarray(hd));
  CHECK(rc.dtype() == float32);
  CHECK(close(rc.get<float>()[0], std::sqrt(qc), 1e-5));

  // Frobenius over a 2-D expression, per-row norms.
  ndarray x2 = reshape(x(slice(0, 1000 * 2000)), Shape{1000, 2000});
  ndarray y2 = reshape(y(slice(0, 1000 * 2000)), Shape{1000, 2000});
  double f = 0;
  for (std::size_t k = 0; k < 1000 * 2000; ++k)
    f += (double(hx[k]) - hy[k]) * (double(hx[k]) - hy[k]);
  CHECK(close(linalg::norm(x2 - y2, "fro").get<float>()[0], std::sqrt(f), 1e-5));
  auto rows = linalg::norm(x2 - y2, 2.0, 1).get<float>();
  double r0 = 0;
  for (std::size_t k = 0; k < 2000; ++k) r0 += (double(hx[k]) - hy[k]) * (double(hx[k]) - hy[k]);
  CHECK(close(rows[0], std::sqrt(r0), 1e-5));
}

TEST_CASE("fused reductions write into out and accept dtype", "[ops][gpu]") {
  auto h = test::random_vector<std::int8_t>(4099);
  ndarray x = asarray(h);
  std::int8_t wrapped = 0;
  for (auto v : h) wrapped = std::int8_t(wrapped + std::int8_t(v * 2));
  CHECK(sum(x * 2, {}, false, {.dtype = int8}).get<std::int8_t>()[0] == wrapped);
  ndarray out = full(Shape{}, -7.0, float64);  // poisoned
  sum(x + x, {}, false, {.out = out});
  std::int64_t want = 0;
  for (auto v : h) want += std::int8_t(v + v);  // int8 + int8 wraps, as NumPy
  CHECK(out.get<double>()[0] == double(want));
}
