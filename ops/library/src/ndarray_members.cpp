// The kernel-backed members of kiln::ndarray (declared in runtime/ndarray.hpp, which has no
// kernels): each forwards to the library's free function of the same name.
#include "kiln/library/copying.hpp"
#include "kiln/library/reductions.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln {

ndarray ndarray::reshape(const Shape& new_shape) const { return kiln::reshape(*this, new_shape); }
ndarray ndarray::ravel() const { return kiln::ravel(*this); }
ndarray ndarray::to_device(int device) const { return kiln::to_device(*this, device); }
ndarray ndarray::copy() const { return kiln::copy(*this); }
ndarray ndarray::astype(kiln::dtype t) const { return kiln::astype(*this, t); }
void ndarray::fill(const scalar& value) { kiln::fill(*this, value); }

ndarray ndarray::sum(axes axis, bool keepdims) const { return kiln::sum(*this, axis, keepdims); }
ndarray ndarray::prod(axes axis, bool keepdims) const { return kiln::prod(*this, axis, keepdims); }
ndarray ndarray::min(axes axis, bool keepdims) const { return kiln::min(*this, axis, keepdims); }
ndarray ndarray::max(axes axis, bool keepdims) const { return kiln::max(*this, axis, keepdims); }
ndarray ndarray::mean(axes axis, bool keepdims) const { return kiln::mean(*this, axis, keepdims); }
ndarray ndarray::var(axes axis, bool keepdims, int ddof) const {
  return kiln::var(*this, axis, keepdims, {.ddof = ddof});
}
ndarray ndarray::std(axes axis, bool keepdims, int ddof) const {
  return kiln::std(*this, axis, keepdims, {.ddof = ddof});
}
ndarray ndarray::argmin(axes axis, bool keepdims) const {
  return kiln::argmin(*this, axis, keepdims);
}
ndarray ndarray::argmax(axes axis, bool keepdims) const {
  return kiln::argmax(*this, axis, keepdims);
}
ndarray ndarray::all(axes axis, bool keepdims) const { return kiln::all_of(*this, axis, keepdims); }
ndarray ndarray::any(axes axis, bool keepdims) const { return kiln::any(*this, axis, keepdims); }

}  // namespace kiln
