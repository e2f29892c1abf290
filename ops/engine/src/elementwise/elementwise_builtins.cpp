#include "kiln/engine/elementwise_builtins.hpp"

#include <fmt/format.h>

#include <memory>

#include "kiln/cache/memory_cache.hpp"

namespace kiln::builtin {

// kiln's own kernels are never destroyed, like every process-wide kernel table
// (cache::process_table): they may run from static destructors and exit handlers.

const ElementwiseKernel& cast_kernel() {
  static const ElementwiseKernel& k =
      *new ElementwiseKernel("T x", "U y", "y = kiln_cast<U>(x)", "kiln_astype");
  return k;
}

const ElementwiseKernel& copy_kernel() {
  static const ElementwiseKernel& k = *new ElementwiseKernel("T x", "T y", "y = x", "kiln_copy");
  return k;
}

const ElementwiseKernel& fill_kernel(dtype t) {
  const auto id = std::uint64_t(t.id());
  auto& table = cache::process_table<std::unique_ptr<ElementwiseKernel>, struct fill_kernels>();
  return *table.get_or_create(hash128(&id, sizeof id), [&] {
    return std::make_unique<ElementwiseKernel>(
        fmt::format("{} value", t.name()), fmt::format("{} y", t.name()), "y = value", "kiln_fill");
  });
}

// Integer ranges are computed in int64 so big values stay exact; others in float64.
const ElementwiseKernel& arange_int_kernel() {
  static const ElementwiseKernel& k =
      *new ElementwiseKernel("int64 start, int64 step", "T y",
                             "y = kiln_cast<T>(start + (long long)i * step)", "kiln_arange_int");
  return k;
}
const ElementwiseKernel& arange_float_kernel() {
  static const ElementwiseKernel& k =
      *new ElementwiseKernel("float64 start, float64 step", "T y",
                             "y = kiln_cast<T>(start + (double)i * step)", "kiln_arange");
  return k;
}
const ElementwiseKernel& linspace_kernel() {
  static const ElementwiseKernel& k = *new ElementwiseKernel(
      "float64 start, float64 step, float64 stop, int64 last, bool floor_it", "T y",
      "double v = (long long)i == last ? stop : start + (double)i * step;\n"
      "y = kiln_cast<T>(floor_it ? floor(v) : v)",
      "kiln_linspace");
  return k;
}

}  // namespace kiln::builtin
