#pragma once
// Sizes and ages as people write them, for cache limits (KILN_CACHE_MAX_SIZE, kiln-cache
// prune --max-size / --older-than). One parser, so the variable and the command agree.
//
//   parse_size("2G");        // 2147483648 (K/M/G/T are powers of 1024; KB/MB/GB/TB of 1000)
//   parse_size("1e30");      // UINT64_MAX: larger than any disk, so "no limit"
//   parse_age("7d");         // 604800 seconds (s, m, h, d, w)
//   parse_size("nan");       // throws kiln::ValueError naming the text and an example
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::cache {

/// Bytes for "500M", "2G", "1.5GiB", "1048576", ... A value too large for 64 bits is clamped to
/// the largest; a negative, non-finite (nan, inf) or malformed one is a ValueError.
std::uint64_t parse_size(std::string_view text);

/// Seconds for "90s", "30m", "12h", "7d", "2w" (the unit is required). Clamped to the largest
/// int64 like parse_size; a negative, non-finite or malformed one is a ValueError.
std::int64_t parse_age(std::string_view text);

/// "3.4 KiB", "12 B", ... for messages.
std::string human_bytes(std::uint64_t bytes);

}  // namespace kiln::cache
