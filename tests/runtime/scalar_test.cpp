#include "kiln/runtime/scalar.hpp"

#include <catch2/catch.hpp>
#include <cstring>

#include "kiln/runtime/error.hpp"
#include "support/test_support.hpp"

using namespace kiln;

template <class T>
T stored(const scalar& s, dtype t) {
  T v{};
  s.store_as(t, &v);
  return v;
}

TEST_CASE("scalars convert with NumPy assignment rules", "[runtime]") {
  CHECK(stored<float>(scalar(300), float32) == 300.0f);
  CHECK(stored<std::int8_t>(scalar(-128), int8) == -128);
  CHECK(stored<std::int32_t>(scalar(2.9), int32) == 2);  // truncates toward zero
  CHECK(stored<std::int32_t>(scalar(-2.9), int32) == -2);
  CHECK(stored<bool>(scalar(0.5), bool_) == true);
  CHECK(stored<double>(scalar(std::complex<double>(3, 4)), float64) == 3.0);  // drops imag
  CHECK(stored<std::uint64_t>(scalar(std::uint64_t(1) << 63), uint64) == std::uint64_t(1) << 63);
  CHECK(stored<half>(scalar(1.5f), float16).bits == half(1.5f).bits);
  CHECK(stored<std::complex<float>>(scalar(2), complex64) == std::complex<float>(2, 0));
}

TEST_CASE("an integer out of range is a ValueError naming value and dtype", "[runtime]") {
  KILN_CHECK_THROWS(stored<std::uint8_t>(scalar(300), uint8), ValueError,
                    Catch::Matchers::Contains("300") && Catch::Matchers::Contains("uint8"));
  CHECK_THROWS_AS(stored<std::uint32_t>(scalar(-1), uint32), ValueError);
  CHECK_THROWS_AS(stored<std::int8_t>(scalar(128), int8), ValueError);
  CHECK_THROWS_AS(stored<std::int64_t>(scalar(std::uint64_t(1) << 63), int64), ValueError);
}

TEST_CASE("scalars know their natural dtype and weak kind", "[runtime]") {
  CHECK(scalar(1).natural_dtype() == int32);
  CHECK(scalar(1L).natural_dtype() == int64);
  CHECK(scalar(1.0).natural_dtype() == float64);
  CHECK(scalar(1.0f).natural_dtype() == float32);
  CHECK(scalar(true).weak_kind() == weak_scalar::integer);
  CHECK(scalar(std::complex<float>(1, 1)).weak_kind() == weak_scalar::complex);
  CHECK(scalar(std::complex<double>(1, 2)).str() == "(1+2j)");
}
