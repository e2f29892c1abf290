#include "kiln/runtime/shape.hpp"

#include <fmt/format.h>

#include "kiln/runtime/error.hpp"

namespace kiln {

Shape Shape::filled(int ndim, std::int64_t value) {
  Shape s;
  s.resize(ndim, value);
  return s;
}

void Shape::throw_too_many_dims() {
  throw ShapeError(fmt::format("arrays have at most {} dimensions", kMaxNdim));
}

void Shape::insert(int pos, std::int64_t v) {
  push_back(0);
  std::copy_backward(d_.begin() + pos, d_.begin() + n_ - 1, d_.begin() + n_);
  d_[pos] = v;
}

void Shape::resize(int n, std::int64_t fill) {
  if (n > kMaxNdim) throw ShapeError(fmt::format("arrays have at most {} dimensions", kMaxNdim));
  for (int i = n_; i < n; ++i) d_[i] = fill;
  n_ = std::uint8_t(n);
}

std::string Shape::str() const {
  if (n_ == 1) return fmt::format("({},)", d_[0]);
  return fmt::format("({})", fmt::join(begin(), end(), ", "));
}

std::int64_t shape_size(const Shape& s) noexcept {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

Shape c_strides(const Shape& shape, std::int64_t itemsize) {
  Shape st = Shape::filled(shape.size(), 0);
  std::int64_t acc = itemsize;
  for (int i = shape.size() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= std::max<std::int64_t>(shape[i], 1);
  }
  return st;
}

namespace {
const Shape& deref(const Shape& s) { return s; }
const Shape& deref(const Shape* s) { return *s; }

template <class S>
Shape broadcast_all(std::span<S> shapes) {
  int nd = 0;
  for (const auto& s : shapes) nd = std::max(nd, deref(s).size());
  Shape out = Shape::filled(nd, 1);
  for (const auto& sp : shapes) {
    const Shape& s = deref(sp);
    for (int i = 0; i < s.size(); ++i) {
      std::int64_t d = s[i];
      std::int64_t& o = out[nd - s.size() + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const auto& t : shapes) all += (all.empty() ? "" : " ") + deref(t).str();
      throw ShapeError("operands could not be broadcast together with shapes " + all);
    }
  }
  return out;
}
}  // namespace

Shape broadcast_shapes(std::span<const Shape> shapes) { return broadcast_all(shapes); }
Shape broadcast_shapes(std::span<const Shape* const> shapes) { return broadcast_all(shapes); }

int normalize_axis(std::int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim)
    throw ValueError(fmt::format("axis {} is out of bounds for array of dimension {}", axis, ndim));
  return int(axis < 0 ? axis + ndim : axis);
}

}  // namespace kiln
