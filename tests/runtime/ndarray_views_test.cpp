// View arithmetic (shape, strides in bytes, offset) for every view, on metadata only: these
// arrays have no buffer, so the tests run without a GPU.
#include <catch2/catch.hpp>

#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "support/test_support.hpp"

using namespace kiln;

static ndarray meta(const Shape& s, dtype t = float32) {
  return ndarray(nullptr, s, c_strides(s, std::int64_t(t.itemsize())), 0, t);
}

TEST_CASE("shapes print like NumPy and broadcast", "[runtime]") {
  CHECK(Shape{2, 3}.str() == "(2, 3)");
  CHECK(Shape{5}.str() == "(5,)");
  CHECK(Shape{}.str() == "()");
  CHECK(broadcast_shapes({Shape{3, 1}, Shape{4}}) == Shape{3, 4});
  CHECK(broadcast_shapes({Shape{}, Shape{2, 1, 5}, Shape{7, 1}}) == Shape{2, 7, 5});
  CHECK(broadcast_shapes({Shape{0}, Shape{1}}) == Shape{0});
  KILN_CHECK_THROWS(broadcast_shapes({Shape{2, 3}, Shape{4}}), ShapeError,
                    Catch::Matchers::Contains("operands could not be broadcast together with "
                                              "shapes (2, 3) (4,)"));
  CHECK_THROWS_AS(Shape::filled(kMaxNdim + 1, 1), ShapeError);
}

TEST_CASE("C strides are in bytes and contiguity ignores size-1 axes", "[runtime]") {
  auto a = meta({2, 3, 4});
  CHECK(a.strides() == Shape{48, 16, 4});
  CHECK(a.size() == 24);
  CHECK(a.nbytes() == 96);
  CHECK(a.is_c_contiguous());
  CHECK_FALSE(a.is_f_contiguous());
  CHECK(meta({1, 5, 1}).is_f_contiguous());
  CHECK(meta({}).size() == 1);
  CHECK(meta({}).ndim() == 0);
  CHECK(a.byte_extent() == std::pair<std::int64_t, std::int64_t>{0, 96});
  CHECK(a(slice(std::nullopt, std::nullopt, -1)).byte_extent() ==
        std::pair<std::int64_t, std::int64_t>{-48, 48});
  CHECK(meta({3, 0}).size() == 0);
  CHECK(meta({3, 0}).is_c_contiguous());
}

TEST_CASE("transpose permutes shape and strides", "[runtime]") {
  auto a = meta({2, 3, 4});
  auto t = a.T();
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK(t.strides() == Shape{4, 16, 48});
  CHECK(t.is_f_contiguous());
  auto p = a.transpose({1, -1, 0});
  CHECK(p.shape() == Shape{3, 4, 2});
  CHECK(p.strides() == Shape{16, 4, 48});
  CHECK_THROWS_AS(a.transpose({0, 0, 1}), ValueError);
  CHECK_THROWS_AS(a.transpose({0, 1}), ValueError);
  CHECK(a.swapaxes(0, 2).shape() == Shape{4, 3, 2});
}

TEST_CASE("slicing follows Python's rules, negative steps included", "[runtime]") {
  auto a = meta({10});
  auto s = a(slice(2, 8, 2));
  CHECK(s.shape() == Shape{3});
  CHECK(s.strides() == Shape{8});
  CHECK(s.offset() == 8);
  auto r = a(slice(std::nullopt, std::nullopt, -1));
  CHECK(r.shape() == Shape{10});
  CHECK(r.strides() == Shape{-4});
  CHECK(r.offset() == 36);
  auto r2 = a(slice(-2, 1, -3));  // 8, 5, 2
  CHECK(r2.shape() == Shape{3});
  CHECK(r2.offset() == 32);
  CHECK(r2.strides() == Shape{-12});
  CHECK(a(slice(5, 2)).size() == 0);
  CHECK(a(slice(-100, 100)).size() == 10);
  CHECK(a(slice(100, std::nullopt, -1)).shape() == Shape{10});
  CHECK_THROWS_AS(a(slice(0, 5, 0)), ValueError);
}

TEST_CASE("integer, newaxis and ellipsis subscripts", "[runtime]") {
  auto a = meta({4, 5, 6});
  auto row = a(std::int64_t(1));
  CHECK(row.shape() == Shape{5, 6});
  CHECK(row.offset() == 120);
  auto e = a(ellipsis, std::int64_t(-1));
  CHECK(e.shape() == Shape{4, 5});
  CHECK(e.offset() == 20);
  auto n = a(newaxis, all, std::int64_t(2));
  CHECK(n.shape() == Shape{1, 4, 6});
  auto z = a(std::int64_t(1), std::int64_t(2), std::int64_t(3));
  CHECK(z.ndim() == 0);
  CHECK(z.offset() == (1 * 30 + 2 * 6 + 3) * 4);
  KILN_CHECK_THROWS(a(std::int64_t(4)), IndexError,
                    Catch::Matchers::Contains("index 4 is out of bounds for axis 0 with size 4"));
  CHECK_THROWS_AS(a(0, 0, 0, 0), IndexError);
  CHECK_THROWS_AS(a(ellipsis, ellipsis), IndexError);
}

TEST_CASE("reshape_view gives views when strides allow, nullopt otherwise", "[runtime]") {
  auto a = meta({2, 3, 4});
  auto r = a.reshape_view({6, -1});
  REQUIRE(r);
  CHECK(r->shape() == Shape{6, 4});
  CHECK(r->strides() == Shape{16, 4});
  // Transposed (F-order) data cannot be viewed in C order as a flat vector.
  CHECK_FALSE(a.T().reshape_view({24}));
  // A slice along the first axis keeps the inner block contiguous: (2,12) view works.
  auto s = meta({4, 3, 4})(slice(0, 4, 2));
  auto v = s.reshape_view({2, 12});
  REQUIRE(v);
  CHECK(v->strides() == Shape{96, 4});
  CHECK_FALSE(s.reshape_view({24}));
  // Splitting an axis of a strided view works.
  auto col = meta({6, 4})(all, std::int64_t(1));  // shape (6,), stride 16
  auto split = col.reshape_view({2, 3});
  REQUIRE(split);
  CHECK(split->strides() == Shape{48, 16});
  KILN_CHECK_THROWS(a.reshape_view({5, -1}), ShapeError,
                    Catch::Matchers::Contains("cannot reshape array of size 24"));
  CHECK_THROWS_AS(a.reshape_view({-1, -1}), ShapeError);
  CHECK(meta({0, 3}).reshape_view({3, 0, 2})->shape() == Shape{3, 0, 2});
  CHECK_THROWS_AS(meta({0, 3}).reshape_view({3, 0, -1}), ShapeError);  // NumPy: -1 is ambiguous
}

TEST_CASE("squeeze, expand_dims and broadcast_to", "[runtime]") {
  auto a = meta({1, 3, 1});
  CHECK(a.squeeze().shape() == Shape{3});
  CHECK(a.squeeze(-1).shape() == Shape{1, 3});
  CHECK_THROWS_AS(a.squeeze(1), ValueError);
  auto e = meta({3}).expand_dims(0);
  CHECK(e.shape() == Shape{1, 3});
  CHECK(meta({3}).expand_dims(-1).shape() == Shape{3, 1});
  CHECK_THROWS_AS(meta({3}).expand_dims(3), ValueError);
  auto b = meta({3, 1}).broadcast_to({2, 3, 4});
  CHECK(b.shape() == Shape{2, 3, 4});
  CHECK(b.strides() == Shape{0, 4, 0});
  KILN_CHECK_THROWS(meta({3}).broadcast_to({4}), ShapeError,
                    Catch::Matchers::Contains("(3,)") && Catch::Matchers::Contains("(4,)"));
  CHECK_THROWS_AS(meta({2, 3}).broadcast_to({3}), ShapeError);
}

TEST_CASE("view reinterprets equal-sized dtypes only", "[runtime]") {
  auto a = meta({4}, float32);
  CHECK(a.view(int32).dtype() == int32);
  CHECK_THROWS_AS(a.view(float64), TypeError);
}

TEST_CASE("axis normalization names axis and ndim", "[runtime]") {
  CHECK(normalize_axis(-1, 3) == 2);
  KILN_CHECK_THROWS(normalize_axis(3, 3), ValueError,
                    Catch::Matchers::Contains("axis 3 is out of bounds for array of dimension 3"));
}
