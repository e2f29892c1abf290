#include "kiln/engine/elementwise_builtins.hpp"

#include <array>
#include <memory>
#include <mutex>

#include <fmt/format.h>

namespace kiln::builtin {

const ElementwiseKernel& cast_kernel() {
  static const ElementwiseKernel k("T x", "U y", "y = kiln_cast<U>(x)", "kiln_astype");
  return k;
}

const ElementwiseKernel& copy_kernel() {
  static const ElementwiseKernel k("T x", "T y", "y = x", "kiln_copy");
  return k;
}

const ElementwiseKernel& fill_kernel(dtype t) {
  static std::array<std::unique_ptr<ElementwiseKernel>, kNumDtypes> kernels;
  static std::array<std::once_flag, kNumDtypes> once;
  const auto i = std::size_t(t.id());
  std::call_once(once[i], [&] {
    kernels[i] = std::make_unique<ElementwiseKernel>(fmt::format("{} value", t.name()),
                                                      fmt::format("{} y", t.name()), "y = value",
                                                      "kiln_fill");
  });
  return *kernels[i];
}

// Integer ranges are computed in int64 so big values stay exact; others in float64.
const ElementwiseKernel& arange_int_kernel() {
  static const ElementwiseKernel k("int64 start, int64 step", "T y",
                                   "y = kiln_cast<T>(start + (long long)i * step)",
                                   "kiln_arange_int");
  return k;
}
const ElementwiseKernel& arange_float_kernel() {
  static const ElementwiseKernel k("float64 start, float64 step", "T y",
                                   "y = kiln_cast<T>(start + (double)i * step)", "kiln_arange");
  return k;
}
const ElementwiseKernel& linspace_kernel() {
  static const ElementwiseKernel k(
      "float64 start, float64 step, float64 stop, int64 last, bool floor_it", "T y",
      "double v = (long long)i == last ? stop : start + (double)i * step;\n"
      "y = kiln_cast<T>(floor_it ? floor(v) : v)",
      "kiln_linspace");
  return k;
}

}  // namespace kiln::builtin
