#include "kiln/runtime/dtype.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "kiln/runtime/error.hpp"
#include "support/test_support.hpp"

using namespace kiln;

TEST_CASE("dtype names, sizes, kinds and device types", "[runtime]") {
  CHECK(float32.name() == "float32");
  CHECK(float32.itemsize() == 4);
  CHECK(float32.kind() == 'f');
  CHECK(float16.device_type() == "__half");
  CHECK(bfloat16.device_type() == "__nv_bfloat16");
  CHECK(complex128.itemsize() == 16);
  CHECK(bool_.kind() == 'b');
  CHECK(uint16.kind() == 'u');
  CHECK(int64.device_type() == "long long");
  for (dtype t : kAllDtypes) CHECK(dtype::from_name(t.name()) == t);
}

TEST_CASE("dtype parses NumPy spellings and codes", "[runtime]") {
  CHECK(dtype::from_name("f4") == float32);
  CHECK(dtype::from_name("float") == float64);
  CHECK(dtype::from_name("int") == int64);
  CHECK(dtype::from_name("?") == bool_);
  CHECK(dtype::from_name("c8") == complex64);
  CHECK(dtype::from_name("half") == float16);
  CHECK(dtype::from_name("u1") == uint8);
  dtype t;
  CHECK_FALSE(dtype::try_from_name("float33", t));
}

TEST_CASE("an unknown dtype name raises TypeError naming it", "[runtime]") {
  KILN_CHECK_THROWS(dtype::from_name("float33"), TypeError, Catch::Matchers::Contains("'float33'"));
}

TEST_CASE("dtype_of maps host types", "[runtime]") {
  CHECK(dtype_of<float>() == float32);
  CHECK(dtype_of<double>() == float64);
  CHECK(dtype_of<std::int8_t>() == int8);
  CHECK(dtype_of<std::uint64_t>() == uint64);
  CHECK(dtype_of<half>() == float16);
  CHECK(dtype_of<bf16>() == bfloat16);
  CHECK(dtype_of<std::complex<float>>() == complex64);
  CHECK(dtype_of<bool>() == bool_);
}

// The golden table was produced by NumPy 2 itself (tests/runtime/golden/numpy_promotion.txt).
TEST_CASE("promotion, weak scalars and casting match NumPy 2 for every pair", "[runtime]") {
  std::ifstream in(KILN_TEST_SOURCE_DIR "/runtime/golden/numpy_promotion.txt");
  REQUIRE(in);
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string a, b, c, d, e;
    ls >> a >> b >> c;
    INFO(line);
    if (a == "cast") {
      ls >> d;
      CHECK(can_cast_safely(dtype::from_name(b), dtype::from_name(c)) == (d == "1"));
      ls >> e;
      // same_kind: line is "cast a b safe same_kind"
      (void)e;
    } else if (b == "weak") {
      ls >> d >> e;
      dtype t = dtype::from_name(a);
      CHECK(result_type(t, weak_scalar::integer).name() == c);
      CHECK(result_type(t, weak_scalar::floating).name() == d);
      CHECK(result_type(t, weak_scalar::complex).name() == e);
    } else {
      CHECK(result_type(dtype::from_name(a), dtype::from_name(b)).name() == c);
    }
    ++checked;
  }
  CHECK(checked == 14 * 14 * 2 + 14);
}

TEST_CASE("same_kind casting matches NumPy 2 for every pair", "[runtime]") {
  std::ifstream in(KILN_TEST_SOURCE_DIR "/runtime/golden/numpy_promotion.txt");
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cast ", 0) != 0) continue;
    std::istringstream ls(line);
    std::string tag, a, b, safe, same;
    ls >> tag >> a >> b >> safe >> same;
    INFO(line);
    CHECK(can_cast_same_kind(dtype::from_name(a), dtype::from_name(b)) == (same == "1"));
    ++checked;
  }
  CHECK(checked == 14 * 14);
}

TEST_CASE("bfloat16 promotes like ml_dtypes", "[runtime]") {
  CHECK(result_type(bfloat16, float16) == float32);
  CHECK(result_type(bfloat16, float32) == float32);
  CHECK(result_type(bfloat16, int8) == bfloat16);
  CHECK(result_type(bfloat16, uint8) == bfloat16);
  CHECK(result_type(bfloat16, int16) == float32);
  CHECK(result_type(bfloat16, int32) == float64);
  CHECK(result_type(bfloat16, complex64) == complex64);
  CHECK(result_type(bfloat16, weak_scalar::floating) == bfloat16);
}

TEST_CASE("half and bf16 convert with round-to-nearest-even", "[runtime]") {
  CHECK(float(half(1.5f)) == 1.5f);
  CHECK(half(1.0f).bits == 0x3c00);
  CHECK(half(-2.0f).bits == 0xc000);
  CHECK(half(65504.0f).bits == 0x7bff);
  CHECK(half(1e6f).bits == 0x7c00);                                        // overflow to inf
  CHECK(float(half::from_bits(0x0001)) == Approx(5.960464477539063e-08));  // smallest subnormal
  CHECK(half(1.0f + 1.0f / 2048).bits == 0x3c00);                          // tie rounds to even
  CHECK(half(1.0f + 3.0f / 2048).bits == 0x3c02);
  CHECK(bf16(1.0f).bits == 0x3f80);
  CHECK(float(bf16(3.140625f)) == 3.140625f);
  for (int b = 0; b < 0x7c00; b += 7) {  // every 7th finite half round-trips exactly
    half h = half::from_bits(std::uint16_t(b));
    CHECK(half(float(h)).bits == b);
  }
}
