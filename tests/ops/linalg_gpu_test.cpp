// kiln::linalg on the GPU against host references on random data: products against a host
// triple loop, decompositions by reconstruction and orthogonality, solvers by residual, det
// against a host LU.
#include <catch2/catch.hpp>
#include <cmath>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using kiln::test::random_vector;

namespace {

using Mat = std::vector<double>;  // row-major

Mat host_matmul(const Mat& a, const Mat& b, std::int64_t m, std::int64_t k, std::int64_t n) {
  Mat c(std::size_t(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

Mat host_transpose(const Mat& a, std::int64_t r, std::int64_t c) {
  Mat t(a.size());
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) t[j * r + i] = a[i * c + j];
  return t;
}

double max_abs_diff(const Mat& a, const Mat& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

Mat identity(std::int64_t n) {
  Mat e(std::size_t(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) e[i * n + i] = 1;
  return e;
}

Mat get64(const ndarray& a) {
  return a.dtype() == float64 ? a.get<double>() : [&] {
    auto f = a.get<float>();
    return Mat(f.begin(), f.end());
  }();
}

void poison_pool(std::size_t bytes) {
  auto p = empty({std::int64_t(bytes)}, uint8);
  p.fill(0xA5);
}

// Host LU determinant with partial pivoting.
double host_det(Mat a, std::int64_t n) {
  double d = 1;
  for (std::int64_t c = 0; c < n; ++c) {
    std::int64_t p = c;
    for (std::int64_t r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[p * n + c])) p = r;
    if (a[p * n + c] == 0) return 0;
    if (p != c) {
      for (std::int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
      d = -d;
    }
    d *= a[c * n + c];
    for (std::int64_t r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / a[c * n + c];
      for (std::int64_t j = c; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
    }
  }
  return d;
}

}  // namespace

TEST_CASE("matmul of float64 and float32 matrices matches a host product", "[ops][gpu]") {
  const std::int64_t m = 37, k = 53, n = 29;
  auto ha = random_vector<double>(std::size_t(m * k), -2, 2);
  auto hb = random_vector<double>(std::size_t(k * n), -2, 2);
  const Mat ref = host_matmul(ha, hb, m, k, n);
  auto a = asarray(ha, Shape{m, k}), b = asarray(hb, Shape{k, n});
  poison_pool(std::size_t(m * n * 8));
  auto c = linalg::matmul(a, b);
  CHECK(c.shape() == Shape{m, n});
  CHECK(max_abs_diff(c.get<double>(), ref) < 1e-12);
  // float32, exact FP32 by default; TF32 only when asked (looser).
  auto c32 = linalg::matmul(a.astype(float32), b.astype(float32));
  CHECK(c32.dtype() == float32);
  CHECK(max_abs_diff(get64(c32), ref) < 1e-4);
  auto tf = linalg::matmul(a.astype(float32), b.astype(float32), {.allow_tf32 = true});
  CHECK(max_abs_diff(get64(tf), ref) < 5e-2);
  // Mixed float32 @ float64 promotes to float64.
  CHECK(linalg::matmul(a.astype(float32), b).dtype() == float64);
}

TEST_CASE("matmul reads transposed and sliced operands without changing the result", "[ops][gpu]") {
  const std::int64_t m = 20, k = 30, n = 10;
  auto ha = random_vector<double>(std::size_t(m * k));
  auto hb = random_vector<double>(std::size_t(k * n));
  const Mat ref = host_matmul(ha, hb, m, k, n);
  auto at = asarray(host_transpose(ha, m, k), Shape{k, m}).T();  // F-ordered (m, k)
  auto bt = asarray(host_transpose(hb, k, n), Shape{n, k}).T();
  CHECK(max_abs_diff(linalg::matmul(at, bt).get<double>(), ref) < 1e-11);
  // A strided view (every other column of a wider matrix).
  auto wide = asarray(random_vector<double>(std::size_t(m * 2 * k)), Shape{m, 2 * k});
  auto strided = wide(all, slice(0, std::nullopt, 2));
  const Mat hs = strided.copy().get<double>();
  CHECK(max_abs_diff(linalg::matmul(strided, asarray(hb, Shape{k, n})).get<double>(),
                     host_matmul(hs, hb, m, k, n)) < 1e-11);
}

TEST_CASE("matmul promotes 1-D operands and broadcasts batch axes like NumPy", "[ops][gpu]") {
  const std::int64_t m = 4, k = 5, n = 6;
  auto ha = random_vector<double>(std::size_t(2 * 1 * m * k));
  auto hb = random_vector<double>(std::size_t(3 * k * n));
  auto a = asarray(ha, Shape{2, 1, m, k}), b = asarray(hb, Shape{3, k, n});
  auto c = linalg::matmul(a, b);
  REQUIRE(c.shape() == Shape{2, 3, m, n});
  auto hc = c.get<double>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      Mat am(ha.begin() + i * m * k, ha.begin() + (i + 1) * m * k);
      Mat bm(hb.begin() + j * k * n, hb.begin() + (j + 1) * k * n);
      Mat cm(hc.begin() + (i * 3 + j) * m * n, hc.begin() + (i * 3 + j + 1) * m * n);
      CHECK(max_abs_diff(cm, host_matmul(am, bm, m, k, n)) < 1e-12);
    }
  auto v = random_vector<double>(std::size_t(k));
  auto mv = linalg::matmul(asarray(ha, Shape{2, 1, m, k}), asarray(v));
  CHECK(mv.shape() == Shape{2, 1, m});
  CHECK(max_abs_diff(mv.get<double>(), host_matmul(ha, v, 2 * m, k, 1)) < 1e-12);
  auto w = random_vector<double>(std::size_t(k));
  auto d = linalg::dot(asarray(v), asarray(w));
  CHECK(d.shape() == Shape{});
  double ref = 0;
  for (std::int64_t i = 0; i < k; ++i) ref += v[i] * w[i];
  CHECK(d.get<double>()[0] == Approx(ref));
  auto vm = linalg::matmul(asarray(v), asarray(hb, Shape{3, k, n}));
  CHECK(vm.shape() == Shape{3, n});
  CHECK(linalg::matmul(empty({0, 3}), empty({3, 4})).shape() == Shape{0, 4});
  auto z = linalg::matmul(empty({2, 0}), empty({0, 3})).get<double>();
  CHECK(z == Mat(6, 0.0));
}

TEST_CASE("svd reconstructs tall, wide and square matrices with orthonormal factors",
          "[ops][gpu]") {
  for (auto method :
       {linalg::svd_method::automatic, linalg::svd_method::gesvd, linalg::svd_method::gesvdp})
    for (auto [m, n] : {std::pair<std::int64_t, std::int64_t>{40, 25}, {25, 40}, {33, 33}})
      for (bool full : {true, false}) {
        INFO("method " << int(method) << " shape " << m << "x" << n << " full " << full);
        auto h = random_vector<double>(std::size_t(m * n));
        poison_pool(std::size_t(m * m * 8 * 4));
        auto [u, s, vh] = linalg::svd(asarray(h, Shape{m, n}), full, true, method);
        const std::int64_t k = std::min(m, n);
        auto shapes = linalg::svd_shape({m, n}, full, true);
        CHECK(u.shape() == shapes.u);
        CHECK(s.shape() == shapes.s);
        CHECK(vh.shape() == shapes.vh);
        auto hu = u.get<double>(), hs = s.get<double>(), hv = vh.get<double>();
        for (std::int64_t i = 1; i < k; ++i) CHECK(hs[i - 1] >= hs[i]);
        // u[:, :k] diag(s) vh[:k, :]
        const std::int64_t uc = u.shape()[1];
        Mat us(std::size_t(m * k));
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < k; ++j) us[i * k + j] = hu[i * uc + j] * hs[j];
        Mat vk(hv.begin(), hv.begin() + k * n);
        CHECK(max_abs_diff(host_matmul(us, vk, m, k, n), h) < 1e-10);
        const Mat ut = host_transpose(hu, m, uc);
        CHECK(max_abs_diff(host_matmul(ut, hu, uc, m, uc), identity(uc)) < 1e-10);
        const std::int64_t vr = vh.shape()[0];
        CHECK(max_abs_diff(host_matmul(hv, host_transpose(hv, vr, n), vr, n, vr), identity(vr)) <
              1e-10);
        auto only_s = linalg::svd(asarray(h, Shape{m, n}), full, false, method);
        CHECK(!only_s.u.defined());
        CHECK(max_abs_diff(only_s.s.get<double>(), hs) < 1e-10);
      }
  auto s32 = linalg::svd(asarray(random_vector<float>(64), Shape{8, 8})).s;
  CHECK(s32.dtype() == float32);
}

TEST_CASE("qr gives orthonormal q and upper-triangular r whose product is the input",
          "[ops][gpu]") {
  for (auto [m, n] : {std::pair<std::int64_t, std::int64_t>{30, 12}, {12, 30}, {16, 16}}) {
    INFO(m << "x" << n);
    auto h = random_vector<double>(std::size_t(m * n));
    poison_pool(std::size_t(m * n * 8 * 4));
    auto [q, r] = linalg::qr(asarray(h, Shape{m, n}));
    const std::int64_t k = std::min(m, n);
    CHECK(q.shape() == Shape{m, k});
    CHECK(r.shape() == Shape{k, n});
    auto hq = q.get<double>(), hr = r.get<double>();
    CHECK(max_abs_diff(host_matmul(hq, hr, m, k, n), h) < 1e-11);
    CHECK(max_abs_diff(host_matmul(host_transpose(hq, m, k), hq, k, m, k), identity(k)) < 1e-11);
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < std::min(i, n); ++j) CHECK(hr[i * n + j] == 0.0);
  }
  auto [q32, r32] = linalg::qr(asarray(random_vector<float>(12), Shape{4, 3}));
  CHECK(q32.dtype() == float32);
  auto [qi, ri] = linalg::qr(asarray<std::int32_t>({1, 2, 3, 4}, Shape{2, 2}));
  CHECK(qi.dtype() == float64);  // integers compute in float64, as NumPy
}

TEST_CASE("eigh of a symmetric matrix satisfies a v = v diag(w) with ascending w", "[ops][gpu]") {
  const std::int64_t n = 48;
  auto h = random_vector<double>(std::size_t(n * n));
  Mat sym(h.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) sym[i * n + j] = h[i * n + j] + h[j * n + i];
  for (char uplo : {'L', 'U'}) {
    // Garbage in the triangle that is not read must not matter.
    Mat half = sym;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        if ((uplo == 'L' && j > i) || (uplo == 'U' && j < i)) half[i * n + j] = 1e3;
    auto [w, v] = linalg::eigh(asarray(half, Shape{n, n}), uplo);
    auto hw = w.get<double>(), hv = v.get<double>();
    for (std::int64_t i = 1; i < n; ++i) CHECK(hw[i - 1] <= hw[i]);
    Mat vw(hv.size());
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) vw[i * n + j] = hv[i * n + j] * hw[j];
    CHECK(max_abs_diff(host_matmul(sym, hv, n, n, n), vw) < 1e-9);
    CHECK(max_abs_diff(host_matmul(host_transpose(hv, n, n), hv, n, n, n), identity(n)) < 1e-10);
  }
}

TEST_CASE("solve and inv leave small residuals; det matches a host LU", "[ops][gpu]") {
  const std::int64_t n = 64, k = 3;
  auto h = random_vector<double>(std::size_t(n * n));
  // Strictly diagonally dominant (entries within 8 of zero: a row's others sum to 8 (n - 1) at
  // most, its diagonal at least 16 n - 8), so the condition number stays below 3 whatever the
  // draw: a diagonal of + 10 left one draw's float32 inverse residual at 8e-3 and its float64
  // solve at 2e-10.
  for (std::int64_t i = 0; i < n; ++i) h[i * n + i] += 16.0 * double(n);
  auto a = asarray(h, Shape{n, n});
  auto hb = random_vector<double>(std::size_t(n * k));
  poison_pool(std::size_t(n * n * 8 * 4));
  auto x = linalg::solve(a, asarray(hb, Shape{n, k}));
  CHECK(x.shape() == Shape{n, k});
  CHECK(max_abs_diff(host_matmul(h, x.get<double>(), n, n, k), hb) < 1e-10);
  Mat hb1(hb.begin(), hb.begin() + n);
  auto x1 = linalg::solve(a, asarray(hb1));
  CHECK(x1.shape() == Shape{n});
  CHECK(max_abs_diff(host_matmul(h, x1.get<double>(), n, n, 1), hb1) < 1e-10);
  auto ai = linalg::inv(a);
  CHECK(max_abs_diff(host_matmul(h, ai.get<double>(), n, n, n), identity(n)) < 1e-10);
  CHECK(max_abs_diff(host_matmul(ai.get<double>(), h, n, n, n), identity(n)) < 1e-10);
  const double d = linalg::det(a);
  CHECK(d == Approx(host_det(h, n)).epsilon(1e-9));
  auto small = random_vector<double>(25);
  CHECK(linalg::det(asarray(small, Shape{5, 5})) == Approx(host_det(small, 5)).epsilon(1e-9));
  CHECK(linalg::det(asarray(small, Shape{5, 5}).T()) == Approx(host_det(small, 5)).epsilon(1e-9));
  auto a32 = asarray(h, Shape{n, n}).astype(float32);
  CHECK(max_abs_diff(host_matmul(h, get64(linalg::inv(a32)), n, n, n), identity(n)) < 1e-3);
}

TEST_CASE("a singular matrix raises LinAlgError in solve and inv and has det 0", "[ops][gpu]") {
  auto s = asarray<double>({1, 2, 3, 2, 4, 6, 1, 0, 1}, Shape{3, 3});
  CHECK_THROWS_AS(linalg::inv(s), linalg::LinAlgError);
  CHECK_THROWS_AS(linalg::solve(s, asarray<double>({1, 2, 3})), linalg::LinAlgError);
  CHECK(linalg::det(s) == 0.0);
}
