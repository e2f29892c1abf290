#include "kiln/codegen/loop_layout.hpp"

#include <catch2/catch.hpp>
#include <vector>

#include "kiln/codegen/elementwise_spec.hpp"
#include "kiln/codegen/launch_config.hpp"
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

TEST_CASE("collapse of all size-1 axes gives a 0-d loop; zero extents are left alone",
          "[codegen]") {
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

TEST_CASE("collapse orders the axes by an output's strides, so operands transposed with it merge",
          "[codegen]") {
  // z.T = x.T * 5 on (4, 3) float32 arrays: the loop (3, 4) walks both with strides (4, 12).
  Shape shape{3, 4};
  std::vector<Shape> st = {{4, 12}, {4, 12}};
  collapse_dims(shape, st, 1);
  CHECK(shape == Shape{12});
  CHECK(st[0] == Shape{4});
  // A permuted output (axes (2, 0, 1) of a (2, 3, 4) array) reorders a 3-D loop, stably; the
  // input, contiguous over the loop, becomes the transposed one.
  Shape s3{4, 2, 3};
  std::vector<Shape> st3 = {{24, 12, 4}, {4, 48, 16}};
  collapse_dims(s3, st3, 1);
  CHECK(s3 == Shape{6, 4});
  CHECK(st3[1] == Shape{16, 4});
  CHECK(st3[0] == Shape{4, 24});
  // Without an order the axes stay as they are.
  Shape keep{3, 4};
  std::vector<Shape> kst = {{4, 12}, {4, 12}};
  collapse_dims(keep, kst);
  CHECK(keep == Shape{3, 4});
}

namespace {
// The device's n / d: (umulhi(n, m) + n) >> s in the index width.
std::uint64_t device_div(std::uint64_t n, const FastDivisor& f, int bits) {
  using u128 = unsigned __int128;
  if (bits == 32) {
    const auto m = std::uint32_t(f.multiplier);
    const auto hi = std::uint32_t((std::uint64_t(std::uint32_t(n)) * m) >> 32);
    return std::uint32_t(hi + std::uint32_t(n)) >> f.shift;
  }
  const auto hi = std::uint64_t((u128(n) * u128(std::uint64_t(f.multiplier))) >> 64);
  return (hi + n) >> f.shift;
}
}  // namespace

TEST_CASE("fast divisors divide exactly across the whole index range", "[codegen]") {
  std::uint64_t state = 12345;
  auto next = [&] {  // splitmix64
    state += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (int bits : {32, 64}) {
    const std::uint64_t limit = bits == 32 ? (std::uint64_t(1) << 31) : (std::uint64_t(1) << 63);
    std::vector<std::uint64_t> divisors{1,    2,     3,     5,       7,
                                        31,   32,    33,    1000,    2048,
                                        8191, 65535, 65536, 1 << 20, (std::uint64_t(1) << 31) - 1};
    if (bits == 64)
      divisors.insert(divisors.end(),
                      {std::uint64_t(1) << 31, 3000000007ull, (std::uint64_t(1) << 62) + 1});
    for (int k = 0; k < 200; ++k)
      divisors.push_back(1 + next() % (bits == 32 ? limit - 1 : (std::uint64_t(1) << 40)));
    for (std::uint64_t d : divisors) {
      const FastDivisor f = fast_divisor(std::int64_t(d), bits);
      CHECK(f.divisor == std::int64_t(d));
      std::vector<std::uint64_t> ns{0, 1, d - 1, d, d + 1, limit - 1, limit - d, 2 * d - 1};
      for (int k = 0; k < 200; ++k) ns.push_back(next() % limit);
      for (std::uint64_t n : ns) {
        if (n >= limit) continue;
        INFO("bits " << bits << " n " << n << " d " << d);
        REQUIRE(device_div(n, f, bits) == n / d);
      }
    }
  }
}

TEST_CASE("transposed tiles take the shape that pads short axes least; row tiles stay square",
          "[codegen]") {
  ElementwiseSpec s;
  s.nparams = 3;
  for (int k = 0; k < 3; ++k) s.set_param(k, float32, OperandKind::array);
  s.layout = Layout::tiled;
  // Nothing staged (row tiles): 32 x 32 whatever the padding.
  auto square = tile_shape(s, 35, 97);
  CHECK((square.rows == 32 && square.cols == 32 && square.log2_cols == 5));
  s.params[0].staged = 1;
  // 35 x 97 in 32 x 32 tiles keeps 41% of the threads busy; 8 x 128 keeps 66%.
  auto narrow = tile_shape(s, 35, 97);
  CHECK((narrow.rows == 8 && narrow.cols == 128 && narrow.log2_cols == 7));
  CHECK(narrow.tiles(1, 35, 97) == 5);
  // Long axes pad little in any shape: the square-ish tile stays.
  auto big = tile_shape(s, 8192, 8192);
  CHECK((big.rows == 32 && big.cols == 32));
  // A short axis narrows the tile as before (8 rows of 128 columns for 6 rows).
  auto short_rows = tile_shape(s, 6, 8192);
  CHECK((short_rows.rows == 8 && short_rows.cols == 128));
  // float64 keeps the square-ish tile, narrowed to a short axis (16 rows for 10).
  for (int k = 0; k < 3; ++k) s.set_param(k, float64, OperandKind::array);
  s.params[0].staged = 1;
  auto wide = tile_shape(s, 10, 6709248);
  CHECK((wide.rows == 16 && wide.cols == 64));
  // float16 keeps sides of a 32-byte sector: 41 x 5683 takes 16 x 128 (84% busy, 64% square).
  for (int k = 0; k < 3; ++k) s.set_param(k, float16, OperandKind::array);
  s.params[0].staged = 1;
  auto half = tile_shape(s, 41, 5683);
  CHECK((half.rows == 16 && half.cols == 128));
  // ... and by 16-byte units on both sides, 16 elements a thread: 64 x 64 tiles of 4096.
  s.log2_unit_cols = s.log2_unit_rows = 3;
  auto units = tile_shape(s, 8192, 8192);
  CHECK((units.rows == 64 && units.cols == 64));
}
