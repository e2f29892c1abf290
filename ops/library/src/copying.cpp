#include "kiln/library/copying.hpp"

#include <cstddef>

#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/device.hpp"

namespace kiln {

ndarray reshape(const ndarray& a, const Shape& shape) {
  if (auto v = a.reshape_view(shape)) return *v;
  return *copy(a).reshape_view(shape);
}

ndarray ravel(const ndarray& a) { return reshape(a, {-1}); }

ndarray copy(const ndarray& a) {
  ndarray out = empty(a.shape(), a.dtype());
  if (a.size() > 0) builtin::copy_kernel()(a, out);
  return out;
}

ndarray astype(const ndarray& a, dtype t) {
  ndarray out = empty(a.shape(), t);
  if (a.size() > 0) builtin::cast_kernel()(a, out);
  return out;
}

void fill(ndarray& a, const scalar& value) {
  if (a.size() == 0) {
    std::byte probe[16];
    value.store_as(a.dtype(), probe);  // still reject a value that does not fit
    return;
  }
  builtin::fill_kernel(a.dtype())(value, a);
}

ndarray to_device(const ndarray& a, int device) {
  if (device != a.device())
    detail::refuse_during_capture("to_device() to another device",
                                  "a copy between devices waits for the source device's work");
  ndarray src = a.is_c_contiguous() ? a : copy(a);
  ndarray out;
  {
    DeviceGuard on(device);
    out = empty(a.shape(), a.dtype());
  }
  copy_contiguous(src, out);
  return out;
}

}  // namespace kiln
