// The loop shape of a call (its non-raw arrays broadcast, or size=) and its outputs.
#include <fmt/format.h>

#include "kernel_call.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"

namespace kiln::detail {

void decide_loop_shape(KernelCall& c, bool with_outputs) {
  std::array<const Shape*, kMaxParams> shapes;
  std::size_t n = 0;
  for (int k = 0; k < (with_outputs ? c.nparams : c.def.nin); ++k)
    if (c.arrays[k] && !c.is_raw(k)) shapes[n++] = &c.arrays[k]->shape();
  if (n > 0 && c.options.size >= 0)
    throw ValueError(fmt::format("kernel '{}': size= is only allowed when every array argument "
                                 "is raw (the loop shape here comes from the arguments)",
                                 c.def.name));
  if (n > 0) {
    c.shape = broadcast_shapes(std::span<const Shape* const>(shapes.data(), n));
  } else {
    if (c.options.size < 0)
      throw ValueError(fmt::format("kernel '{}': loop size is undecided: no non-raw array "
                                   "argument fixes it; pass launch_options{{.size = n}}",
                                   c.def.name));
    c.shape = Shape{c.options.size};
  }
  c.size = shape_size(c.shape);
}

void check_outputs(const KernelCall& c, bool given, const Shape& shape, const char* shape_from) {
  for (int k = c.def.nin; k < c.nparams; ++k) {
    const auto& name = c.param_name(k);
    if (!given) {
      if (c.is_raw(k) && c.options.size < 0)
        throw ValueError(fmt::format("kernel '{}': the size of raw output '{}' is undecided; pass "
                                     "the output array",
                                     c.def.name, name));
      continue;
    }
    if (c.is_raw(k)) continue;
    const ndarray& a = *c.arrays[k];
    if (!(a.shape() == shape))
      throw ShapeError(fmt::format("kernel '{}': output '{}' has shape {} but {} {}",
                                   c.def.name, name, a.shape().str(), shape_from, shape.str()));
    for (int d = 0; d < a.ndim(); ++d)
      if (a.strides()[d] == 0 && a.shape()[d] > 1)
        throw ValueError(fmt::format("kernel '{}': output '{}' has a zero stride (a broadcast "
                                     "view); its elements overlap",
                                     c.def.name, name));
  }
}

void prepare_outputs(KernelCall& c, kernel_result& result, bool given, const Shape& shape) {
  for (int k = c.def.nin; k < c.nparams; ++k) {
    if (given) {
      result.push_back(*c.arrays[k]);
      continue;
    }
    const dtype t = c.types[k];
    auto buffer = std::make_shared<Buffer>(std::size_t(shape_size(shape)) * t.itemsize(), c.device,
                                           allocation_stream(c));
    result.push_back(ndarray(std::move(buffer), shape, c_strides(shape, std::int64_t(t.itemsize())), 0, t));
  }
  for (int k = c.def.nin; k < c.nparams; ++k) c.arrays[k] = &result[std::size_t(k - c.def.nin)];
}

Shape loop_strides(const ndarray& a, const Shape& loop) {
  Shape s = Shape::filled(loop.size(), 0);
  const int off = loop.size() - a.ndim();
  for (int d = 0; d < a.ndim(); ++d)
    if (a.shape()[d] != 1) s[off + d] = a.strides()[d];
  return s;
}

}  // namespace kiln::detail
