#include "kiln/ops/elementwise_builtins.hpp"

#include <array>
#include <memory>
#include <mutex>

#include <fmt/format.h>

namespace kiln::ops {

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

}  // namespace kiln::ops
