#include "kiln/cache/size_and_age.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kiln/runtime/error.hpp"

namespace kiln::cache {
namespace {

struct Unit {
  std::string_view name;
  double factor;
};

// The number and the unit of "1.5G" (from_chars: no locale, no leading spaces or '+'); false
// when there is no number. A number too large for a double ("1e999") reads as infinity with
// `overflow` set; a literal "inf" or "nan" reads as itself (refused by the caller).
bool split(std::string_view text, double& value, bool& overflow, std::string_view& unit) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  const auto [at, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (ec != std::errc() && ec != std::errc::result_out_of_range) return false;
  overflow = ec == std::errc::result_out_of_range;
  if (overflow) value = std::numeric_limits<double>::infinity();
  unit = std::string_view(at, std::size_t(end - at));
  return at != begin;
}

bool unit_is(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if ((a[k] | 0x20) != (b[k] | 0x20)) return false;
  return true;
}

template <class Int>
Int scaled(std::string_view text, std::initializer_list<Unit> units, const char* examples) {
  double v = 0;
  bool overflow = false;
  std::string_view unit;
  const bool read = split(text, v, overflow, unit);
  const Unit* found = nullptr;
  for (const Unit& u : units)
    if (unit_is(unit, u.name)) found = &u;
  // "nan" and "inf" are not a number of bytes or seconds anyone meant; a number too large
  // ("1e999") is clamped below with the others.
  if (!read || std::isnan(v) || (std::isinf(v) && !overflow) || v < 0 || !found)
    throw kiln::ValueError("'" + std::string(text) + "' is not " + examples);
  const double bytes = v * found->factor;
  // Clamp, never convert out of range (undefined, and in practice a huge negative number).
  constexpr double kMax = double(std::numeric_limits<Int>::max());
  return bytes >= kMax ? std::numeric_limits<Int>::max() : Int(bytes);
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  return scaled<std::uint64_t>(text,
                               {{"", 1},
                                {"b", 1},
                                {"k", 1024.0},
                                {"kb", 1e3},
                                {"kib", 1024.0},
                                {"m", 1048576.0},
                                {"mb", 1e6},
                                {"mib", 1048576.0},
                                {"g", 1073741824.0},
                                {"gb", 1e9},
                                {"gib", 1073741824.0},
                                {"t", 1099511627776.0},
                                {"tb", 1e12},
                                {"tib", 1099511627776.0}},
                               "a size (examples: 500M, 2G, 1048576)");
}

std::int64_t parse_age(std::string_view text) {
  return scaled<std::int64_t>(text, {{"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 604800}},
                              "an age (examples: 90s, 30m, 12h, 7d, 2w)");
}

std::string human_bytes(std::uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

}  // namespace kiln::cache
