#include "support/random_layouts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

#include "support/test_support.hpp"

namespace kiln::test {
namespace {

std::int64_t uniform_int(std::mt19937_64& g, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
}
bool chance(std::mt19937_64& g, double p) { return std::uniform_real_distribution<>(0, 1)(g) < p; }

}  // namespace

Shape random_shape(std::mt19937_64& g, int ndim, double elements) {
  Shape s;
  double left = std::max(1.0, elements);
  for (int d = 0; d < ndim; ++d) {
    std::int64_t e = std::max<std::int64_t>(1, std::int64_t(left));
    if (d + 1 < ndim) {
      const double typical = std::pow(left, 1.0 / double(ndim - d));
      e = uniform_int(g, 1, std::max<std::int64_t>(2, std::int64_t(2 * typical)));
    }
    if (chance(g, 0.15)) e = 1;
    s.push_back(e);
    left = std::max(1.0, left / double(e));
  }
  return s;
}

ndarray random_view(std::mt19937_64& g, const Shape& shape, dtype t, bool permute, bool slice) {
  const int nd = shape.size();
  // The view's axis d is the base's axis perm[d]; before slicing, axis d has extent pre[d].
  std::vector<std::int64_t> perm(static_cast<std::size_t>(nd));
  std::iota(perm.begin(), perm.end(), 0);
  if (permute) std::shuffle(perm.begin(), perm.end(), g);
  Shape pre = shape;
  std::vector<index> subscripts;
  for (int d = 0; d < nd; ++d) {
    const std::int64_t n = shape[d];
    if (!slice || n < 2 || !chance(g, 0.5)) {
      subscripts.emplace_back(all);
      continue;
    }
    const std::int64_t step = (chance(g, 0.5) ? 1 : 2) * (chance(g, 0.3) ? -1 : 1);
    const std::int64_t off = uniform_int(g, 0, 5);
    const std::int64_t len = (n - 1) * std::abs(step) + 1 + off + uniform_int(g, 0, 3);
    pre[d] = len;
    if (step > 0) {
      subscripts.emplace_back(kiln::slice(off, off + (n - 1) * step + 1, step));
    } else {
      const std::int64_t first = len - 1 - off, stop = first + (n - 1) * step - 1;
      subscripts.emplace_back(
          kiln::slice(first, stop < 0 ? std::nullopt : std::optional<std::int64_t>(stop), step));
    }
  }
  Shape base = pre;
  for (int d = 0; d < nd; ++d) base[int(perm[std::size_t(d)])] = pre[d];
  const ndarray b = untouched(base, t);
  const ndarray v = permute ? b.transpose(Shape(std::span<const std::int64_t>(perm))) : b;
  return v(std::span<const index>(subscripts));
}

Shape broadcast_shape(std::mt19937_64& g, const Shape& shape, double p) {
  Shape b = shape;
  for (int d = 0; d < b.size(); ++d)
    if (chance(g, p)) b[d] = 1;
  while (b.size() > 1 && b[0] == 1 && chance(g, 0.5)) b.erase(0);
  return b;
}

bool is_one_element(const ndarray& a) {
  for (int d = 0; d < a.ndim(); ++d)
    if (a.shape()[d] != 1 && a.strides()[d] != 0) return false;
  return true;
}

std::string describe(const ndarray& a) {
  return fmt::format("shape {} offset {} strides {} {}", a.shape().str(), a.offset(),
                     a.strides().str(), a.dtype().name());
}

}  // namespace kiln::test
