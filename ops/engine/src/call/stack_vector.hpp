#pragma once
// A fixed-capacity vector on the stack that constructs only the elements it holds. The call
// path keeps per-operand Shapes (264 bytes each): an std::array of kMaxParams of them is
// constructed whole on every call and touches 64 cache lines, which a hit-path profile of
// reductions showed (their plan was 2.5x the elementwise plan's samples).
//
//   StackVector<Shape, kMaxParams> strides;
//   strides.push_back(loop_strides(a, shape));
//   codegen::collapse_dims(shape, strides.span());
#include <cstddef>
#include <new>
#include <span>
#include <type_traits>

namespace kiln::detail {

template <class T, std::size_t N>
class StackVector {
  static_assert(std::is_trivially_destructible_v<T>, "elements are never destroyed");

 public:
  StackVector() noexcept {}
  StackVector(const StackVector&) = delete;
  StackVector& operator=(const StackVector&) = delete;

  T& push_back(const T& v) { return *new (&storage_[size_++ * sizeof(T)]) T(v); }
  T& operator[](std::size_t i) noexcept { return data()[i]; }
  const T& operator[](std::size_t i) const noexcept { return data()[i]; }
  std::size_t size() const noexcept { return size_; }
  void clear() noexcept { size_ = 0; }
  std::span<T> span() noexcept { return {data(), size_}; }

 private:
  T* data() noexcept { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* data() const noexcept { return std::launder(reinterpret_cast<const T*>(storage_)); }
  alignas(T) std::byte storage_[N * sizeof(T)];
  std::size_t size_ = 0;
};

}  // namespace kiln::detail
