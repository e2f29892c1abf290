#include "kiln/runtime/ndarray.hpp"

#include <cstring>
#include <limits>
#include <numeric>

#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln {
namespace {

Shape f_strides(const Shape& shape, std::int64_t itemsize) {
  Shape st = Shape::filled(shape.size(), 0);
  std::int64_t acc = itemsize;
  for (int i = 0; i < shape.size(); ++i) {
    st[i] = acc;
    acc *= std::max<std::int64_t>(shape[i], 1);
  }
  return st;
}

std::int64_t checked_size(const Shape& shape, std::size_t itemsize) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) throw ValueError("negative dimensions are not allowed: shape " + shape.str());
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / std::int64_t(itemsize) / d)
      throw ValueError("array is too big: shape " + shape.str());
    n *= d;
  }
  return n;
}

// Resolves a single -1 in a requested shape against a known size.
Shape resolve_shape(Shape want, std::int64_t size, const Shape& have) {
  int unknown = -1;
  std::int64_t known = 1;
  for (int i = 0; i < want.size(); ++i) {
    if (want[i] == -1) {
      if (unknown >= 0) throw ShapeError("can only specify one unknown dimension");
      unknown = i;
    } else if (want[i] < 0) {
      throw ShapeError("negative dimensions are not allowed: shape " + want.str());
    } else {
      known *= want[i];
    }
  }
  if (unknown >= 0 && known != 0 && size % known == 0) want[unknown] = size / known;
  if ((unknown >= 0 && (known == 0 || size % known != 0)) || shape_size(want) != size)
    throw ShapeError(fmt::format("cannot reshape array of size {} (shape {}) into shape {}", size,
                                 have.str(), want.str()));
  return want;
}

}  // namespace

ndarray::ndarray(const Shape& shape, kiln::dtype t, order o)
    : shape_(shape), size_(checked_size(shape, t.itemsize())), dtype_(t) {
  int dev = current_device();
  buffer_ = std::make_shared<Buffer>(std::size_t(size_) * t.itemsize(), dev, current_stream());
  strides_ = o == order::C ? c_strides(shape, std::int64_t(t.itemsize()))
                           : f_strides(shape, std::int64_t(t.itemsize()));
}

ndarray::ndarray(std::shared_ptr<Buffer> buffer, const Shape& shape, const Shape& strides,
                 std::int64_t offset_bytes, kiln::dtype t)
    : buffer_(std::move(buffer)),
      shape_(shape),
      strides_(strides),
      offset_(offset_bytes),
      dtype_(t) {
  if (shape.size() != strides.size())
    throw ShapeError(
        fmt::format("shape {} and strides {} differ in length", shape.str(), strides.str()));
  update_size();
}

void ndarray::update_size() noexcept { size_ = shape_size(shape_); }

int ndarray::device() const noexcept { return buffer_ ? buffer_->device() : 0; }

void* ndarray::data() const noexcept {
  return buffer_ ? static_cast<char*>(buffer_->data()) + offset_ : nullptr;
}

bool ndarray::is_c_contiguous() const noexcept {
  if (size_ == 0) return true;
  std::int64_t expect = std::int64_t(itemsize());
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

std::pair<std::int64_t, std::int64_t> ndarray::byte_extent() const noexcept {
  std::int64_t lo = 0, hi = 0;
  for (int i = 0; i < ndim(); ++i) {
    std::int64_t span = (shape_[i] - 1) * strides_[i];
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi + std::int64_t(itemsize())};
}

bool ndarray::is_f_contiguous() const noexcept {
  if (size_ == 0) return true;
  std::int64_t expect = std::int64_t(itemsize());
  for (int i = 0; i < ndim(); ++i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

std::optional<ndarray> ndarray::reshape_view(const Shape& requested) const {
  Shape want = resolve_shape(requested, size_, shape_);
  if (size_ == 0 || is_c_contiguous())
    return ndarray(buffer_, want, c_strides(want, std::int64_t(itemsize())), offset_, dtype_);
  // NumPy's no-copy rule: walk old and new axes (size-1 old axes dropped), matching groups of
  // equal element count; each old group must be contiguous within itself.
  Shape old_dims, old_strides;
  for (int i = 0; i < ndim(); ++i)
    if (shape_[i] != 1) {
      old_dims.push_back(shape_[i]);
      old_strides.push_back(strides_[i]);
    }
  Shape new_strides = Shape::filled(want.size(), 0);
  int oi = 0, oj = 1, ni = 0, nj = 1;
  const int on = old_dims.size(), nn = want.size();
  while (ni < nn && oi < on) {
    std::int64_t np = want[ni], op = old_dims[oi];
    while (np != op) {
      if (np < op)
        np *= want[nj++];
      else
        op *= old_dims[oj++];
    }
    for (int k = oi; k < oj - 1; ++k)
      if (old_strides[k] != old_dims[k + 1] * old_strides[k + 1]) return std::nullopt;
    new_strides[nj - 1] = old_strides[oj - 1];
    for (int k = nj - 1; k > ni; --k) new_strides[k - 1] = new_strides[k] * want[k];
    ni = nj++;
    oi = oj++;
  }
  // Trailing size-1 axes of the new shape get any stride; use the item size.
  for (int k = ni; k < nn; ++k) new_strides[k] = std::int64_t(itemsize());
  return ndarray(buffer_, want, new_strides, offset_, dtype_);
}

ndarray ndarray::transpose() const {
  Shape axes;
  for (int i = ndim() - 1; i >= 0; --i) axes.push_back(i);
  return transpose(axes);
}

ndarray ndarray::transpose(const Shape& axes) const {
  if (axes.size() != ndim())
    throw ValueError(fmt::format("axes {} don't match array of dimension {}", axes.str(), ndim()));
  Shape s, st;
  bool seen[kMaxNdim] = {};
  for (auto a : axes) {
    int ax = normalize_axis(a, ndim());
    if (seen[ax]) throw ValueError(fmt::format("repeated axis in transpose: {}", axes.str()));
    seen[ax] = true;
    s.push_back(shape_[ax]);
    st.push_back(strides_[ax]);
  }
  return ndarray(buffer_, s, st, offset_, dtype_);
}

ndarray ndarray::swapaxes(std::int64_t a, std::int64_t b) const {
  Shape axes;
  for (int i = 0; i < ndim(); ++i) axes.push_back(i);
  std::swap(axes[normalize_axis(a, ndim())], axes[normalize_axis(b, ndim())]);
  return transpose(axes);
}

ndarray ndarray::squeeze() const {
  Shape s, st;
  for (int i = 0; i < ndim(); ++i)
    if (shape_[i] != 1) {
      s.push_back(shape_[i]);
      st.push_back(strides_[i]);
    }
  return ndarray(buffer_, s, st, offset_, dtype_);
}

ndarray ndarray::squeeze(std::int64_t axis) const {
  int ax = normalize_axis(axis, ndim());
  if (shape_[ax] != 1)
    throw ValueError(fmt::format(
        "cannot select an axis to squeeze out which has size not equal to one (axis {} of {})",
        axis, shape_.str()));
  Shape s = shape_, st = strides_;
  s.erase(ax);
  st.erase(ax);
  return ndarray(buffer_, s, st, offset_, dtype_);
}

ndarray ndarray::expand_dims(std::int64_t axis) const {
  int ax = normalize_axis(axis, ndim() + 1);
  Shape s = shape_, st = strides_;
  s.insert(ax, 1);
  st.insert(ax, 0);
  return ndarray(buffer_, s, st, offset_, dtype_);
}

ndarray ndarray::broadcast_to(const Shape& target) const {
  int extra = target.size() - ndim();
  bool ok = extra >= 0;
  Shape st = Shape::filled(ok ? target.size() : 0, 0);
  for (int i = 0; ok && i < ndim(); ++i) {
    std::int64_t d = shape_[i], t = target[extra + i];
    if (d == t)
      st[extra + i] = strides_[i];
    else if (d == 1 && t >= 0)
      st[extra + i] = 0;
    else
      ok = false;
  }
  if (!ok)
    throw ShapeError(fmt::format("cannot broadcast an array of shape {} to shape {}", shape_.str(),
                                 target.str()));
  return ndarray(buffer_, target, st, offset_, dtype_);
}

ndarray ndarray::operator()(std::span<const index> subs) const {
  int real = 0;
  bool has_ellipsis = false;
  for (const auto& s : subs) {
    if (std::holds_alternative<std::int64_t>(s) || std::holds_alternative<slice>(s)) ++real;
    if (std::holds_alternative<ellipsis_t>(s)) {
      if (has_ellipsis) throw IndexError("an index can only have a single ellipsis ('...')");
      has_ellipsis = true;
    }
  }
  if (real > ndim())
    throw IndexError(
        fmt::format("too many indices for array: array is {}-dimensional, but {} "
                    "were indexed",
                    ndim(), real));
  Shape s, st;
  std::int64_t off = offset_;
  int axis = 0;
  auto take_slice = [&](const slice& sl) {
    std::int64_t n = shape_[axis], stride = strides_[axis], step = sl.step;
    if (step == 0) throw ValueError("slice step cannot be zero");
    std::int64_t start, stop;
    if (step > 0) {
      start = sl.start ? *sl.start : 0;
      stop = sl.stop ? *sl.stop : n;
      if (start < 0) start = std::max<std::int64_t>(start + n, 0);
      if (stop < 0) stop = std::max<std::int64_t>(stop + n, 0);
      start = std::min(start, n);
      stop = std::min(stop, n);
    } else {
      start = sl.start ? *sl.start : n - 1;
      stop = sl.stop ? *sl.stop : -1 - n;  // "before the first element"
      if (start < 0) start = std::max<std::int64_t>(start + n, -1);
      if (stop < 0) stop = std::max<std::int64_t>(stop + n, -1);
      start = std::min(start, n - 1);
      stop = std::min(stop, n - 1);
    }
    std::int64_t len = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                : (start > stop ? (start - stop - step - 1) / -step : 0);
    if (len > 0) off += start * stride;
    s.push_back(len);
    st.push_back(stride * step);
    ++axis;
  };
  for (const auto& sub : subs) {
    if (auto* i = std::get_if<std::int64_t>(&sub)) {
      std::int64_t n = shape_[axis];
      if (*i < -n || *i >= n)
        throw IndexError(
            fmt::format("index {} is out of bounds for axis {} with size {}", *i, axis, n));
      off += (*i < 0 ? *i + n : *i) * strides_[axis];
      ++axis;
    } else if (auto* sl = std::get_if<slice>(&sub)) {
      take_slice(*sl);
    } else if (std::holds_alternative<newaxis_t>(sub)) {
      s.push_back(1);
      st.push_back(0);
    } else {  // ellipsis: as many full slices as the other subscripts leave
      for (int k = 0, rest = ndim() - real; k < rest; ++k) take_slice(slice{});
    }
  }
  while (axis < ndim()) take_slice(slice{});
  return ndarray(buffer_, s, st, off, dtype_);
}

ndarray ndarray::view(kiln::dtype t) const {
  if (t.itemsize() != itemsize())
    throw TypeError(fmt::format("view as {} needs an item size of {} bytes, but {} has {}",
                                t.name(), t.itemsize(), dtype_.name(), itemsize()));
  return ndarray(buffer_, shape_, strides_, offset_, t);
}

void ndarray::check_host_type(kiln::dtype t) const {
  if (t != dtype_)
    throw TypeError(
        fmt::format("get<T>() with T of dtype {} on an array of dtype {}: use the "
                    "host type of {} or convert first with astype({})",
                    t.name(), dtype_.name(), dtype_.name(), t.name()));
}

void ndarray::copy_to_host(void* dst) const {
  detail::refuse_during_capture("ndarray::get() / copy_to_host()",
                                "it copies device memory to the host and waits for the device");
  if (size_ == 0) return;
  DeviceGuard on(device());
  cudaStream_t stream = current_stream_handle();
  if (is_c_contiguous()) {
    KILN_CUDA(cudaMemcpyAsync(dst, data(), nbytes(), cudaMemcpyDeviceToHost, stream));
    KILN_CUDA(cudaStreamSynchronize(stream));
    return;
  }
  // Any other layout: fetch the byte range the view spans, then gather in C order on the host.
  auto [lo, hi] = byte_extent();
  std::vector<char> staging(std::size_t(hi - lo));
  KILN_CUDA(cudaMemcpyAsync(staging.data(), static_cast<char*>(data()) + lo, staging.size(),
                            cudaMemcpyDeviceToHost, stream));
  KILN_CUDA(cudaStreamSynchronize(stream));
  const std::size_t item = itemsize();
  Shape idx = Shape::filled(ndim(), 0);
  char* out = static_cast<char*>(dst);
  for (std::int64_t n = 0; n < size_; ++n) {
    std::int64_t off = -lo;
    for (int d = 0; d < ndim(); ++d) off += idx[d] * strides_[d];
    std::memcpy(out + n * item, staging.data() + off, item);
    for (int d = ndim() - 1; d >= 0 && ++idx[d] == shape_[d]; --d) idx[d] = 0;
  }
}

void ndarray::copy_from_host(const void* src) {
  detail::refuse_during_capture(
      "ndarray::copy_from_host() (asarray)",
      "a replay would read host memory that may be gone by then, and CUDA cannot capture a copy "
      "from pageable memory; create the array before the capture and capture kiln::copy into "
      "it");
  if (size_ == 0) return;
  if (!is_c_contiguous())
    throw ValueError(
        "copy_from_host needs a C-contiguous destination; copy into a "
        "contiguous array and assign through a kernel instead");
  DeviceGuard on(device());
  KILN_CUDA(
      cudaMemcpyAsync(data(), src, nbytes(), cudaMemcpyHostToDevice, current_stream_handle()));
}

ndarray empty(const Shape& shape, dtype t, order o) { return ndarray(shape, t, o); }

ndarray zeros(const Shape& shape, dtype t, order o) {
  ndarray a(shape, t, o);
  if (a.nbytes()) KILN_CUDA(cudaMemsetAsync(a.data(), 0, a.nbytes(), current_stream_handle()));
  return a;
}

// *_like keep the layout order of a Fortran-contiguous source, as NumPy's order='K' mostly does.
static order like_order(const ndarray& a) {
  return a.is_f_contiguous() && !a.is_c_contiguous() ? order::F : order::C;
}
ndarray empty_like(const ndarray& a) { return empty(a.shape(), a.dtype(), like_order(a)); }
ndarray empty_like(const ndarray& a, dtype t) { return empty(a.shape(), t, like_order(a)); }
ndarray zeros_like(const ndarray& a) { return zeros(a.shape(), a.dtype(), like_order(a)); }
ndarray zeros_like(const ndarray& a, dtype t) { return zeros(a.shape(), t, like_order(a)); }

ndarray asarray(const std::vector<bool>& data, std::optional<Shape> shape) {
  // One byte per element, as the device stores bool; the uint8 overload checks the shape.
  const std::vector<std::uint8_t> bytes(data.begin(), data.end());
  return asarray(bytes, shape).view(bool_);
}

void copy_contiguous(const ndarray& src, ndarray& dst) {
  if (src.shape() != dst.shape() || src.dtype() != dst.dtype())
    throw ShapeError(fmt::format("copy from {} {} into {} {}: shapes and dtypes must match",
                                 src.dtype().name(), src.shape().str(), dst.dtype().name(),
                                 dst.shape().str()));
  if (!src.is_c_contiguous() || !dst.is_c_contiguous())
    throw ValueError("copy_contiguous needs C-contiguous arrays; use copy() for other layouts");
  if (src.size() == 0) return;
  if (src.device() == dst.device()) {
    DeviceGuard on(dst.device());
    KILN_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.nbytes(), cudaMemcpyDeviceToDevice,
                              current_stream_handle()));
    return;
  }
  detail::refuse_during_capture("copy between devices (copy_contiguous, to_device)",
                                "it waits for the source device's work to finish");
  // Between GPUs: let the source's pending work finish, use peer access where the topology
  // allows (cudaMemcpyPeer stages through the host otherwise), and finish before returning so
  // neither buffer can be freed mid-copy.
  {
    DeviceGuard on(src.device());
    KILN_CUDA(cudaStreamSynchronize(current_stream_handle()));
  }
  DeviceGuard on(dst.device());
  int can = 0;
  KILN_CUDA(cudaDeviceCanAccessPeer(&can, dst.device(), src.device()));
  if (can) {
    cudaError_t e = cudaDeviceEnablePeerAccess(src.device(), 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
      cudaGetLastError();
    else
      KILN_CUDA(e);
  }
  cudaStream_t s = current_stream_handle();
  KILN_CUDA(
      cudaMemcpyPeerAsync(dst.data(), dst.device(), src.data(), src.device(), src.nbytes(), s));
  KILN_CUDA(cudaStreamSynchronize(s));
}

}  // namespace kiln
