// Argument checks and shape rules of the library-backed ops (sort, random, linalg), all raised
// before any device work, so they run on a machine without a GPU.
#include <catch2/catch.hpp>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {
// A zero-size array with no buffer: enough for checks that never reach the device.
ndarray no_data(const Shape& shape, dtype t) {
  return ndarray(nullptr, shape, c_strides(shape, std::int64_t(t.itemsize())), 0, t);
}
}  // namespace

TEST_CASE("sort and argsort accept every real dtype and wrap the axis like NumPy", "[ops]") {
  for (dtype t : kAllDtypes) {
    INFO(t.name());
    if (t.is_complex())
      KILN_CHECK_THROWS(detail::check_sort_args("sort", t, 2, -1), TypeError,
                        Catch::Contains("complex") && Catch::Contains("real or imaginary"));
    else
      CHECK(detail::check_sort_args("sort", t, 3, -1) == 2);
  }
  CHECK(detail::check_sort_args("argsort", float32, 3, 0) == 0);
  CHECK(detail::check_sort_args("argsort", float32, 3, -3) == 0);
  CHECK_THROWS_AS(detail::check_sort_args("sort", float32, 3, 3), ValueError);
  CHECK_THROWS_AS(detail::check_sort_args("sort", float32, 3, -4), ValueError);
  KILN_CHECK_THROWS(detail::check_sort_args("sort", int32, 0, -1), ValueError,
                    Catch::Contains("0-d"));
}

TEST_CASE("sort rejects complex arrays and bad axes before touching the device", "[ops]") {
  CHECK_THROWS_AS(sort(no_data({0, 4}, complex64)), TypeError);
  CHECK_THROWS_AS(argsort(no_data({0, 4}, complex128), 0), TypeError);
  CHECK_THROWS_AS(sort(no_data({0, 4}, float32), 2), ValueError);
  CHECK_THROWS_AS(argsort(ndarray()), ValueError);
}

TEST_CASE("random generators check dtypes and ranges before touching the device", "[ops]") {
  auto rng = random::default_rng(7);
  CHECK(rng.seed() == 7);
  CHECK(rng.offset() == 0);
  KILN_CHECK_THROWS(rng.random({3}, int32), TypeError, Catch::Contains("float32 or float64"));
  CHECK_THROWS_AS(rng.standard_normal({3}, float16), TypeError);
  CHECK_THROWS_AS(rng.normal(0, -1, {3}), ValueError);
  CHECK_THROWS_AS(rng.uniform(0, INFINITY, {3}), ValueError);
  KILN_CHECK_THROWS(rng.integers(5, 5, {3}), ValueError, Catch::Contains("high <= low"));
  KILN_CHECK_THROWS(rng.integers(0, 300, {3}, uint8), ValueError, Catch::Contains("uint8"));
  CHECK_THROWS_AS(rng.integers(-1, 3, {3}, uint32), ValueError);
  CHECK_THROWS_AS(rng.integers(0, 3, {3}, float32), TypeError);
  CHECK_THROWS_AS(rng.integers(0, 3, {3}, bool_), TypeError);
  CHECK_THROWS_AS(rng.random({2, -1}), ValueError);
  CHECK(rng.offset() == 0);  // nothing was drawn
}

TEST_CASE("matmul shapes follow NumPy; 1-D promotion and broadcast batch axes", "[ops]") {
  using linalg::matmul_shape;
  CHECK(matmul_shape({3, 4}, {4, 5}) == Shape{3, 5});
  CHECK(matmul_shape({4}, {4, 5}) == Shape{5});
  CHECK(matmul_shape({3, 4}, {4}) == Shape{3});
  CHECK(matmul_shape({4}, {4}) == Shape{});
  CHECK(matmul_shape({2, 1, 3, 4}, {5, 4, 6}) == Shape{2, 5, 3, 6});
  CHECK(matmul_shape({7, 3, 4}, {4}) == Shape{7, 3});
  CHECK(matmul_shape({4}, {7, 4, 2}) == Shape{7, 2});
  CHECK(matmul_shape({0, 4}, {4, 2}) == Shape{0, 2});
  CHECK(matmul_shape({3, 0}, {0, 2}) == Shape{3, 2});
  KILN_CHECK_THROWS(matmul_shape({3, 4}, {5, 6}), ShapeError,
                    Catch::Contains("(3, 4)") && Catch::Contains("(5, 6)") &&
                        Catch::Contains("4 (last axis of a) != 5"));
  KILN_CHECK_THROWS(
      matmul_shape({2, 3, 4}, {3, 4, 5}), ShapeError,
      Catch::Contains("batch axes") && Catch::Contains("(2,)") && Catch::Contains("(3,)"));
  CHECK_THROWS_AS(matmul_shape({}, {3}), ShapeError);
}

TEST_CASE("matmul and dot check shapes and dtypes before touching the device", "[ops]") {
  CHECK_THROWS_AS(linalg::matmul(no_data({0, 3}, float32), no_data({4, 0}, float32)), ShapeError);
  KILN_CHECK_THROWS(linalg::matmul(no_data({0, 3}, int32), no_data({3, 0}, int32)), TypeError,
                    Catch::Contains("astype"));
  CHECK_THROWS_AS(linalg::matmul(no_data({0, 3}, complex64), no_data({3, 0}, float32)), TypeError);
  CHECK_THROWS_AS(linalg::dot(no_data({0, 3, 2}, float32), no_data({2, 0}, float32)), ShapeError);
  CHECK_THROWS_AS(linalg::dot(no_data({}, float32), no_data({0}, float32)), ShapeError);
}

TEST_CASE("svd and qr result shapes match NumPy's for tall, wide and square matrices", "[ops]") {
  auto s = linalg::svd_shape({5, 3}, true, true);
  CHECK((s.u == Shape{5, 5} && s.s == Shape{3} && s.vh == Shape{3, 3}));
  s = linalg::svd_shape({5, 3}, false, true);
  CHECK((s.u == Shape{5, 3} && s.s == Shape{3} && s.vh == Shape{3, 3}));
  s = linalg::svd_shape({3, 5}, false, true);
  CHECK((s.u == Shape{3, 3} && s.s == Shape{3} && s.vh == Shape{3, 5}));
  s = linalg::svd_shape({3, 5}, true, false);
  CHECK((s.u == Shape{} && s.s == Shape{3} && s.vh == Shape{}));
  CHECK_THROWS_AS(linalg::svd_shape({2, 3, 4}, true, true), ShapeError);
  auto q = linalg::qr_shape({6, 4});
  CHECK((q.q == Shape{6, 4} && q.r == Shape{4, 4}));
  q = linalg::qr_shape({4, 6});
  CHECK((q.q == Shape{4, 4} && q.r == Shape{4, 6}));
}

TEST_CASE("decompositions and solvers reject bad shapes and dtypes before device work", "[ops]") {
  KILN_CHECK_THROWS(linalg::svd(no_data({0, 2, 3}, float64)), ShapeError,
                    Catch::Contains("2-D") && Catch::Contains("stacks"));
  KILN_CHECK_THROWS(linalg::inv(no_data({0, 3}, float64)), ShapeError, Catch::Contains("square"));
  CHECK_THROWS_AS(linalg::det(no_data({2, 0}, float64)), ShapeError);
  CHECK_THROWS_AS(linalg::eigh(no_data({0}, float64)), ShapeError);
  KILN_CHECK_THROWS(linalg::inv(no_data({0, 0}, float16)), TypeError, Catch::Contains("float16"));
  CHECK_THROWS_AS(linalg::qr(no_data({0, 0}, complex128)), TypeError);
  CHECK_THROWS_AS(linalg::eigh(no_data({0, 0}, bfloat16)), TypeError);
  CHECK_THROWS_AS(linalg::eigh(no_data({0, 0}, float64), 'X'), ValueError);
  CHECK_THROWS_AS(linalg::solve(no_data({0, 0}, float64), no_data({2, 0}, float64)), ShapeError);
  CHECK_THROWS_AS(linalg::solve(no_data({0, 0}, float64), no_data({0, 1, 1}, float64)), ShapeError);
  CHECK_THROWS_AS(linalg::solve(no_data({0, 0}, float64), no_data({0}, float16)), TypeError);
}
