#include <catch2/catch.hpp>

#include <vector>

#include "kiln/codegen/loop_layout.hpp"
#include "kiln/codegen/operation_analysis.hpp"

using namespace kiln;
using namespace kiln::codegen;

TEST_CASE("collapse merges a C-contiguous 3-D loop into one axis", "[codegen]") {
  Shape shape{2, 3, 4};
  std::vector<Shape> st = {{48, 16, 4}, {96, 32, 8}};
  collapse_dims(shape, st);
  CHECK(shape == Shape{24});
  CHECK(st[0] == Shape{4});
  CHECK(st[1] == Shape{8});
}

TEST_CASE("collapse drops size-1 axes and keeps axes a broadcast separates", "[codegen]") {
  Shape shape{4, 1, 8};
  std::vector<Shape> st = {{32, 32, 4}, {0, 0, 4}};
  collapse_dims(shape, st);
  CHECK(shape == Shape{4, 8});
  CHECK(st[0] == Shape{32, 4});
  CHECK(st[1] == Shape{0, 4});
}

TEST_CASE("collapse keeps a transposed operand's axes and merges a reversed one", "[codegen]") {
  Shape shape{3, 4};
  std::vector<Shape> t = {{4, 12}};  // transpose of a (4, 3) float32 array
  collapse_dims(shape, t);
  CHECK(shape == Shape{3, 4});
  Shape shape2{3, 4};
  std::vector<Shape> r = {{-16, -4}};  // x[::-1, ::-1] of a (3, 4) float32 array
  collapse_dims(shape2, r);
  CHECK(shape2 == Shape{12});
  CHECK(r[0] == Shape{-4});
}

TEST_CASE("collapse of all size-1 axes gives a 0-d loop; zero extents are left alone", "[codegen]") {
  Shape shape{1, 1};
  std::vector<Shape> st = {{4, 4}};
  collapse_dims(shape, st);
  CHECK(shape.size() == 0);
  Shape empty{3, 0};
  std::vector<Shape> st2 = {{0, 4}};
  collapse_dims(empty, st2);
  CHECK(empty == Shape{3, 0});
}

TEST_CASE("contiguity and uniformity over a loop shape", "[codegen]") {
  CHECK(is_contiguous_over(Shape{2, 3}, Shape{12, 4}, 4));
  CHECK_FALSE(is_contiguous_over(Shape{2, 3}, Shape{4, 8}, 4));
  CHECK(is_contiguous_over(Shape{2, 1, 3}, Shape{12, 999, 4}, 4));  // size-1 stride is free
  CHECK(is_contiguous_over(Shape{}, Shape{}, 8));
  CHECK(is_uniform(Shape{0, 0}));
  CHECK_FALSE(is_uniform(Shape{0, 4}));
}

TEST_CASE("32-bit indices exactly while sizes and byte spans fit int32", "[codegen]") {
  CHECK(byte_span(Shape{10}, Shape{4}, 4) == 40);
  CHECK(byte_span(Shape{10}, Shape{-4}, 4) == 40);
  CHECK(byte_span(Shape{2, 3}, Shape{0, 8}, 8) == 24);
  CHECK(choose_index_bits(2147483647, 0) == 32);
  CHECK(choose_index_bits(2147483648LL, 0) == 64);
  CHECK(choose_index_bits(100, 2147483647) == 32);
  CHECK(choose_index_bits(100, 2147483648LL) == 64);
}

TEST_CASE("vector width is 16 bytes of the widest operand, reduced by misalignment", "[codegen]") {
  const std::uintptr_t a = 0x10000;  // 256-byte aligned like pool allocations
  CHECK(choose_vector_width(std::vector<VectorOperand>{{a, 4}, {a, 4}}) == 4);
  CHECK(choose_vector_width(std::vector<VectorOperand>{{a, 1}}) == 16);
  CHECK(choose_vector_width(std::vector<VectorOperand>{{a, 4}, {a, 8}}) == 2);
  CHECK(choose_vector_width(std::vector<VectorOperand>{{a, 16}}) == 1);
  CHECK(choose_vector_width(std::vector<VectorOperand>{{a + 4, 4}, {a, 4}}) == 1);
  CHECK(choose_vector_width(std::vector<VectorOperand>{{a + 8, 4}, {a, 4}}) == 2);
  CHECK(choose_vector_width(std::vector<VectorOperand>{}) == 1);
}

