#pragma once
// Fixed-capacity dimension vectors for shapes and strides (no heap allocation, so views and
// the kernel-launch hot path stay allocation-free), and NumPy's broadcasting rule.
//
//   kiln::Shape s{2, 3, 4};
//   kiln::Shape b = kiln::broadcast_shapes({kiln::Shape{3, 1}, kiln::Shape{4}});  // (3, 4)
#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace kiln {

inline constexpr int kMaxNdim = 32;

class Shape {
 public:
  using value_type = std::int64_t;
  Shape() noexcept {}  // storage past size() stays uninitialised: shapes are built on hot paths
  Shape(const Shape& o) noexcept : n_(o.n_) { std::copy_n(o.d_.data(), n_, d_.data()); }
  Shape& operator=(const Shape& o) noexcept {
    n_ = o.n_;
    std::copy_n(o.d_.data(), n_, d_.data());
    return *this;
  }
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(std::span<const std::int64_t> dims) { assign(dims.begin(), dims.end()); }
  /// `ndim` copies of `value`.
  static Shape filled(int ndim, std::int64_t value);

  int size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  std::int64_t& operator[](int i) noexcept { return d_[i]; }
  std::int64_t operator[](int i) const noexcept { return d_[i]; }
  std::int64_t* begin() noexcept { return d_.data(); }
  std::int64_t* end() noexcept { return d_.data() + n_; }
  const std::int64_t* begin() const noexcept { return d_.data(); }
  const std::int64_t* end() const noexcept { return d_.data() + n_; }
  const std::int64_t* data() const noexcept { return d_.data(); }
  std::int64_t back() const noexcept { return d_[n_ - 1]; }
  void push_back(std::int64_t v) {  // throws ShapeError past kMaxNdim
    if (n_ == kMaxNdim) throw_too_many_dims();
    d_[n_++] = v;
  }
  void insert(int pos, std::int64_t v);
  void erase(int pos) noexcept {
    for (int i = pos + 1; i < n_; ++i) d_[i - 1] = d_[i];
    --n_;
  }
  void resize(int n, std::int64_t fill = 0);
  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    if (a.n_ != b.n_) return false;
    for (int i = 0; i < a.n_; ++i)  // a few dims: a loop beats a call to memcmp
      if (a.d_[i] != b.d_[i]) return false;
    return true;
  }
  /// NumPy's spelling: "(2, 3)", "(5,)", "()".
  std::string str() const;

 private:
  [[noreturn]] static void throw_too_many_dims();
  template <class It>
  void assign(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  std::uint8_t n_ = 0;
  std::array<std::int64_t, kMaxNdim> d_;  // only the first n_ are meaningful (and copied)
};

/// Number of elements: the product of the dimensions (1 for a 0-d shape).
std::int64_t shape_size(const Shape& s) noexcept;
/// C-order (row-major) strides in bytes for a contiguous array.
Shape c_strides(const Shape& shape, std::int64_t itemsize);
/// Broadcasts shapes NumPy's way; throws ShapeError "operands could not be broadcast together
/// with shapes (2,3) (4,)" when they do not fit.
Shape broadcast_shapes(std::span<const Shape> shapes);
/// The same over shapes held elsewhere (no copies: kernel calls use it on their hot path).
Shape broadcast_shapes(std::span<const Shape* const> shapes);
inline Shape broadcast_shapes(std::initializer_list<Shape> shapes) {
  return broadcast_shapes(std::span<const Shape>(shapes.begin(), shapes.size()));
}
/// Wraps a possibly negative axis into [0, ndim); throws ValueError naming axis and ndim.
int normalize_axis(std::int64_t axis, int ndim);

}  // namespace kiln
