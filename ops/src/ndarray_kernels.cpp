// The ndarray members that need a kernel: copies, conversions, fill, and the copy fallback of
// reshape/ravel. They live in ops/ because runtime/ knows nothing of code generation.
#include <cstddef>

#include "kiln/ops/elementwise_builtins.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln {

ndarray ndarray::reshape(const Shape& new_shape) const {
  if (auto v = reshape_view(new_shape)) return *v;
  return *copy().reshape_view(new_shape);
}

ndarray ndarray::ravel() const { return reshape({-1}); }

ndarray ndarray::copy() const {
  ndarray out = empty(shape_, dtype_);
  if (size_ > 0) ops::copy_kernel()(*this, out);
  return out;
}

ndarray ndarray::astype(kiln::dtype t) const {
  ndarray out = empty(shape_, t);
  if (size_ > 0) ops::cast_kernel()(*this, out);
  return out;
}

void ndarray::fill(const scalar& value) {
  if (size_ == 0) {
    std::byte probe[16];
    value.store_as(dtype_, probe);  // still reject a value that does not fit
    return;
  }
  ops::fill_kernel(dtype_)(value, *this);
}

ndarray ndarray::to_device(int device) const {
  ndarray src = is_c_contiguous() ? *this : copy();
  ndarray out;
  {
    DeviceGuard on(device);
    out = empty(shape_, dtype_);
  }
  copy_contiguous(src, out);
  return out;
}

}  // namespace kiln
