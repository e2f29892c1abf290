// ndarray members whose copy path needs a kernel: reshape and ravel fall back to copy().
#include "kiln/runtime/ndarray.hpp"

namespace kiln {

ndarray ndarray::reshape(const Shape& new_shape) const {
  if (auto v = reshape_view(new_shape)) return *v;
  return *copy().reshape_view(new_shape);
}

ndarray ndarray::ravel() const { return reshape({-1}); }

}  // namespace kiln
