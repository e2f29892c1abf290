// Sizes and ages as people write them (KILN_CACHE_MAX_SIZE, prune --max-size/--older-than):
// huge values clamp instead of wrapping into tiny or negative ones, and nan/inf are refused.
#include "kiln/cache/size_and_age.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "kiln/runtime/error.hpp"

using kiln::cache::parse_age;
using kiln::cache::parse_size;

TEST_CASE("sizes read with binary and decimal units", "[cache]") {
  CHECK(parse_size("1048576") == 1048576);
  CHECK(parse_size("20k") == 20 * 1024);
  CHECK(parse_size("500M") == 500ull << 20);
  CHECK(parse_size("2G") == 2ull << 30);
  CHECK(parse_size("2GB") == 2000000000ull);
  CHECK(parse_size("1.5GiB") == 3ull << 29);
  CHECK(parse_size("3t") == 3ull << 40);
  CHECK(parse_size("0") == 0);
}

TEST_CASE("sizes past 64 bits clamp to the largest instead of wrapping", "[cache]") {
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  CHECK(parse_size("1e30") == kMax);
  CHECK(parse_size("1e999") == kMax);
  CHECK(parse_size("20000000000T") == kMax);
  CHECK(parse_size("18446744073709551615") == kMax);
}

TEST_CASE("ages read in seconds, minutes, hours, days and weeks", "[cache]") {
  CHECK(parse_age("90s") == 90);
  CHECK(parse_age("30m") == 1800);
  CHECK(parse_age("12h") == 43200);
  CHECK(parse_age("7d") == 604800);
  CHECK(parse_age("2w") == 1209600);
  CHECK(parse_age("1.5h") == 5400);
}

TEST_CASE("ages past 64 bits clamp to the largest instead of wrapping negative", "[cache]") {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  CHECK(parse_age("1e30s") == kMax);
  CHECK(parse_age("1e17w") == kMax);
  CHECK(parse_age("1e999d") == kMax);
}

TEST_CASE("nan, inf, negative and malformed sizes and ages are ValueErrors", "[cache]") {
  for (const char* bad : {"nan", "inf", "-inf", "infinity", "-1", "-0.5G", "lots", "", "G", "2 G",
                          "2Q", "+5", " 5", "0x10", "1e", "nanG"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_size(bad), kiln::ValueError);
  }
  CHECK_THROWS_WITH(parse_size("nan"),
                    Catch::Contains("'nan' is not a size") && Catch::Contains("2G"));
  for (const char* bad : {"nans", "infd", "inf", "-1d", "3", "7", "7x", "d", "", "1e3"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_age(bad), kiln::ValueError);
  }
  CHECK_THROWS_WITH(parse_age("3"), Catch::Contains("'3' is not an age") && Catch::Contains("7d"));
}
