#pragma once
// kiln::ndarray: an n-dimensional array on one GPU. A handle: copies share the buffer (as in
// CuPy). Views (reshape, transpose, slicing, squeeze, expand_dims, broadcast_to) never copy.
//
//   auto x = kiln::asarray<float>({1, 2, 3, 4, 5, 6}, {2, 3});   // host -> current device
//   auto v = x(kiln::all, kiln::slice(0, 3, 2)).T();             // shape (2, 2), a view
//   std::vector<float> h = v.get<float>();                        // {1, 4, 3, 6}
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/runtime/axes.hpp"
#include "kiln/runtime/dtype.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"
#include "kiln/runtime/scalar.hpp"
#include "kiln/runtime/shape.hpp"

namespace kiln {

/// Python's slice(start, stop, step); an empty optional is Python's None.
struct slice {
  std::optional<std::int64_t> start, stop;
  std::int64_t step = 1;
  slice() = default;
  slice(std::optional<std::int64_t> start_, std::optional<std::int64_t> stop_,
        std::int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};
struct newaxis_t {};
struct ellipsis_t {};
inline constexpr newaxis_t newaxis{};
inline constexpr ellipsis_t ellipsis{};
inline const slice all{};  // ':'
/// One subscript: an integer (drops the axis), a slice, newaxis or ellipsis.
using index = std::variant<std::int64_t, slice, newaxis_t, ellipsis_t>;

enum class order { C, F };

class ndarray {
 public:
  /// An empty handle (no buffer); most members require a real array.
  ndarray() = default;
  /// Allocates an uninitialized C-contiguous (or F) array on the current device.
  ndarray(const Shape& shape, dtype t, order o = order::C);
  /// A view of `buffer` (advanced use, and how views are made).
  ndarray(std::shared_ptr<Buffer> buffer, const Shape& shape, const Shape& strides,
          std::int64_t offset_bytes, dtype t);

  const Shape& shape() const noexcept { return shape_; }
  /// Strides in bytes (may be negative or zero).
  const Shape& strides() const noexcept { return strides_; }
  int ndim() const noexcept { return shape_.size(); }
  std::int64_t size() const noexcept { return size_; }
  std::size_t itemsize() const noexcept { return dtype_.itemsize(); }
  std::size_t nbytes() const noexcept { return std::size_t(size_) * itemsize(); }
  kiln::dtype dtype() const noexcept { return dtype_; }
  int device() const noexcept;
  /// Pointer to element (0, ..., 0) in device memory.
  void* data() const noexcept;
  std::int64_t offset() const noexcept { return offset_; }
  const std::shared_ptr<Buffer>& buffer() const noexcept { return buffer_; }
  bool defined() const noexcept { return buffer_ != nullptr || size_ == 0; }
  bool is_c_contiguous() const noexcept;
  /// Byte offsets [first, last) of the memory the elements occupy, relative to data()
  /// (first <= 0 with negative strides). For overlap checks and layout-agnostic copies.
  std::pair<std::int64_t, std::int64_t> byte_extent() const noexcept;
  bool is_f_contiguous() const noexcept;

  // ---- views (no copy) ----
  /// NumPy's reshape: a view when strides allow, else a C-order copy. One dimension may be -1.
  /// (May copy, so it is kernel-backed: see "kernel-backed members" below.)
  ndarray reshape(const Shape& new_shape) const;
  /// The reshaped view, or nullopt when the strides do not allow one (NumPy's rule).
  std::optional<ndarray> reshape_view(const Shape& new_shape) const;
  ndarray transpose() const;                   // reverses axes
  ndarray transpose(const Shape& axes) const;  // permutation; ValueError if not one
  ndarray T() const { return transpose(); }
  ndarray squeeze() const;
  ndarray squeeze(std::int64_t axis) const;  // ValueError if that axis is not of length 1
  ndarray expand_dims(std::int64_t axis) const;
  ndarray broadcast_to(const Shape& shape) const;
  ndarray swapaxes(std::int64_t a, std::int64_t b) const;
  /// A view when C-contiguous, else a C-order copy (kernel-backed).
  ndarray ravel() const;
  /// Basic indexing: x(1, kiln::slice(0, 4, 2), kiln::newaxis, kiln::ellipsis).
  ndarray operator()(std::span<const index> subscripts) const;
  template <class... I>
  ndarray operator()(I&&... subscripts) const {
    const index idx[] = {index(std::forward<I>(subscripts))...};
    return (*this)(std::span<const index>(idx, sizeof...(I)));
  }
  /// The same data as another dtype of equal itemsize (no conversion).
  ndarray view(kiln::dtype t) const;

  // ---- transfers ----
  /// Device -> host, in C order, for any layout. T must match dtype() (TypeError otherwise).
  template <host_element T>
  std::vector<T> get() const {
    check_host_type(dtype_of<T>());
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed: go through bytes
      std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size_));
      copy_to_host(bytes.data());
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> out(static_cast<std::size_t>(size_));
      copy_to_host(out.data());
      return out;
    }
  }
  /// Copies into raw host memory of nbytes() bytes, C order. Synchronizes the current stream.
  void copy_to_host(void* dst) const;
  /// Copies a C-contiguous host range of nbytes() bytes into this array (which must be
  /// contiguous).
  void copy_from_host(const void* src);
  /// A contiguous copy of this array on another device (peer copy when possible, else staged;
  /// kernel-backed for non-contiguous arrays).
  ndarray to_device(int device) const;

  // ---- kernel-backed members ----
  // Declared here, defined by the library floor (ops/library/src/ndarray_members.cpp) as
  // forwards to its free functions of the same names (<kiln/library/copying.hpp>,
  // <kiln/library/reductions.hpp>): runtime/ has no kernels and links on its own, and a
  // program calling these links kiln::kiln. This is the one place runtime/ names work done
  // above it.
  /// A C-contiguous copy (any layout, any source).
  ndarray copy() const;
  /// A converted copy, with NumPy's casting of values (float->int truncates, complex->real
  /// drops the imaginary part, x->bool is x != 0).
  ndarray astype(kiln::dtype t) const;
  /// Sets every element (any layout) to `value` converted with NumPy's assignment rules.
  void fill(const scalar& value);

  // ---- reductions (NumPy's result dtypes; kiln::sum etc. with more options) ----
  // axis: every axis by default, an int (negative from the end) or several ({0, 2}).
  ndarray sum(axes axis = {}, bool keepdims = false) const;
  ndarray prod(axes axis = {}, bool keepdims = false) const;
  ndarray min(axes axis = {}, bool keepdims = false) const;
  ndarray max(axes axis = {}, bool keepdims = false) const;
  ndarray mean(axes axis = {}, bool keepdims = false) const;
  /// Variance with N - ddof in the denominator.
  ndarray var(axes axis = {}, bool keepdims = false, int ddof = 0) const;
  ndarray std(axes axis = {}, bool keepdims = false, int ddof = 0) const;
  ndarray argmin(axes axis = {}, bool keepdims = false) const;
  ndarray argmax(axes axis = {}, bool keepdims = false) const;
  ndarray all(axes axis = {}, bool keepdims = false) const;
  ndarray any(axes axis = {}, bool keepdims = false) const;

 private:
  void check_host_type(kiln::dtype t) const;
  void update_size() noexcept;

  std::shared_ptr<Buffer> buffer_;
  Shape shape_, strides_;
  std::int64_t offset_ = 0;
  std::int64_t size_ = 1;
  kiln::dtype dtype_ = float64;
};

// ---- creation without kernels ----
ndarray empty(const Shape& shape, dtype t = float64, order o = order::C);
ndarray zeros(const Shape& shape, dtype t = float64, order o = order::C);
ndarray empty_like(const ndarray& a);
ndarray empty_like(const ndarray& a, dtype t);
ndarray zeros_like(const ndarray& a);
ndarray zeros_like(const ndarray& a, dtype t);

/// Host -> current device. Shape defaults to 1-D; its size must match the data (ShapeError).
template <host_element T>
ndarray asarray(std::span<const T> data, std::optional<Shape> shape = std::nullopt) {
  Shape s = shape ? *shape : Shape{std::int64_t(data.size())};
  if (shape_size(s) != std::int64_t(data.size()))
    throw ShapeError(
        fmt::format("asarray: {} elements cannot take shape {}", data.size(), s.str()));
  ndarray a(s, dtype_of<T>());
  a.copy_from_host(data.data());
  return a;
}
template <host_element T>
ndarray asarray(const std::vector<T>& data, std::optional<Shape> shape = std::nullopt) {
  return asarray(std::span<const T>(data.data(), data.size()), shape);
}
template <host_element T>
ndarray asarray(std::initializer_list<T> data, std::optional<Shape> shape = std::nullopt) {
  return asarray(std::span<const T>(data.begin(), data.size()), shape);
}
/// std::vector<bool> is packed, so bool arrays come from this overload.
ndarray asarray(const std::vector<bool>& data, std::optional<Shape> shape = std::nullopt);

/// Copies src into dst (same shape and dtype, both C-contiguous); devices may differ (peer
/// access when the topology allows, staged through the host otherwise).
void copy_contiguous(const ndarray& src, ndarray& dst);

}  // namespace kiln
