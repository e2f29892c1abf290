#pragma once
// Helpers shared by tests: random host data (never zeros), poison values, temp folders.
#include <complex>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kiln/runtime/dtype.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln::test {

std::mt19937_64& rng();

/// The byte every GPU test fills its outputs with before a kernel writes them.
inline constexpr unsigned char kPoison = 0x5A;
/// A new array of `shape` and `t` whose every byte is kPoison (so an element a kernel failed to
/// write is caught by the comparison).
ndarray poisoned(const Shape& shape, dtype t);

/// An array over memory that is never touched: a borrowed buffer at a made-up, 2^40-aligned
/// address (each array its own, far apart), so argument binding, overlap checks and planners
/// run without a device.
ndarray untouched(const Shape& shape, dtype t = float32);

/// Random values of host type T, away from zero, in a range safe for arithmetic tests.
template <class T>
std::vector<T> random_vector(std::size_t n, double lo = -8, double hi = 8) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (std::size_t k = 0; k < n; ++k) {  // not range-for: std::vector<bool> has proxies
    double d = u(rng());
    if (d > -0.5 && d < 0.5) d += d < 0 ? -1 : 1;                      // never zero
    if (std::is_integral_v<T> && d > -1 && d < 1) d = d < 0 ? -1 : 1;  // nor truncated to 0
    if constexpr (std::is_same_v<T, bool>)
      v[k] = (rng()() & 1) != 0;
    else if constexpr (std::is_unsigned_v<T>)
      v[k] = T(std::abs(d) + 1);
    else if constexpr (requires { typename T::value_type; })  // complex
      v[k] = T(typename T::value_type(d), typename T::value_type(u(rng())));
    else
      v[k] = T(d);
  }
  return v;
}

/// A fresh, empty temporary folder removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Sets (or, with nullopt, unsets) an environment variable for a scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value);
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv();

 private:
  std::string name_, old_;
  bool had_;
};

}  // namespace kiln::test

/// Checks that `expr` throws `Type` and that its what() matches `matcher` (Catch2 v2 matchers
/// compare strings, not exception objects, so this checks the two separately).
#define KILN_CHECK_THROWS(expr, Type, matcher) \
  do {                                         \
    CHECK_THROWS_AS(expr, Type);               \
    CHECK_THROWS_WITH(expr, matcher);          \
  } while (0)
