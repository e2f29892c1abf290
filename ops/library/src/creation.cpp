#include "kiln/library/creation.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/library/copying.hpp"

namespace kiln {
namespace {

bool is_integral(const scalar& s) {
  return s.value_kind() != scalar::kind::floating && s.value_kind() != scalar::kind::complex;
}

}  // namespace

ndarray full(const Shape& shape, const scalar& value, std::optional<dtype> t) {
  ndarray a = empty(shape, t.value_or(value.natural_dtype()));
  a.fill(value);
  return a;
}

ndarray ones(const Shape& shape, dtype t) { return full(shape, 1, t); }

ndarray full_like(const ndarray& a, const scalar& value, std::optional<dtype> t) {
  ndarray out = empty_like(a, t.value_or(a.dtype()));
  out.fill(value);
  return out;
}

ndarray ones_like(const ndarray& a, std::optional<dtype> t) { return full_like(a, 1, t); }

ndarray arange(const scalar& stop) { return arange(0, stop, 1); }

ndarray arange(const scalar& start, const scalar& stop, const scalar& step,
               std::optional<dtype> t) {
  bool ints = is_integral(start) && is_integral(stop) && is_integral(step);
  double first = start.as_double(), last = stop.as_double(), delta = step.as_double();
  if (delta == 0) throw ValueError("arange: step must not be zero");
  if (!std::isfinite(first) || !std::isfinite(last) || !std::isfinite(delta))
    throw ValueError("arange: start, stop and step must be finite");
  std::int64_t n = std::max<std::int64_t>(0, std::int64_t(std::ceil((last - first) / delta)));
  ndarray out = empty({n}, t.value_or(ints ? int64 : float64));
  if (n == 0) return out;
  if (ints) {
    std::int64_t s0 = 0, ds = 0;
    start.store_as(int64, &s0);
    step.store_as(int64, &ds);
    builtin::arange_int_kernel()(s0, ds, out);
  } else {
    builtin::arange_float_kernel()(first, delta, out);
  }
  return out;
}

ndarray linspace(double start, double stop, std::int64_t num, bool endpoint,
                 std::optional<dtype> t) {
  if (num < 0)
    throw ValueError(fmt::format("linspace: number of samples, {}, must be non-negative", num));
  ndarray out = empty({num}, t.value_or(float64));
  if (num == 0) return out;
  std::int64_t div = endpoint ? num - 1 : num;
  double step = div > 0 ? (stop - start) / double(div) : 0.0;
  std::int64_t last = endpoint && num > 1 ? num - 1 : -1;
  builtin::linspace_kernel()(start, step, stop, last, out.dtype().is_integer(), out);
  return out;
}

}  // namespace kiln
