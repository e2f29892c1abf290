#pragma once
// What a kernel call returns: the output arrays (those passed in, or the ones kiln
// allocated). How CuPy's return conventions map:
//   one output                 `ndarray z = k(x, y);`  (implicit conversion), or result.array()
//   several outputs (CuPy: tuple)   result[0], result[1], range-for, result.to_vector()
//   return_tuple=true          always indexed: result[0]; converting to ndarray is a TypeError
//   no_return=true             result.size() == 0; converting to ndarray is a TypeError
//
//   ndarray z = k(x, y);
//   auto r = divmod_kernel(a, b);          // two outputs
//   ndarray q = r[0], m = r[1];
//   for (const ndarray& out : r) { ... }
#include <cstddef>
#include <vector>

#include "kiln/runtime/ndarray.hpp"

namespace kiln {

class kernel_result {
 public:
  /// Holds no outputs (what no_return kernels give back).
  kernel_result() = default;

  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  const ndarray& operator[](std::size_t k) const;
  ndarray& operator[](std::size_t k);
  const ndarray* begin() const noexcept { return count_ == 1 ? &one_ : many_.data(); }
  const ndarray* end() const noexcept { return begin() + count_; }

  /// The single output. TypeError when there is not exactly one, or when the kernel was
  /// built with return_tuple=true (then take result[0]).
  const ndarray& array() const;
  operator ndarray() const& { return array(); }  // NOLINT: implicit on purpose
  operator ndarray() &&;                         // NOLINT
  /// Shorthand for array().get<T>().
  template <host_element T>
  std::vector<T> get() const {
    return array().get<T>();
  }
  std::vector<ndarray> to_vector() const { return {begin(), end()}; }

  // Building (used by kernels).
  void push_back(ndarray a);
  void set_tuple(bool tuple) noexcept { tuple_ = tuple; }
  void clear() noexcept;

 private:
  void check_single() const;
  ndarray one_;
  std::vector<ndarray> many_;  // used when there are two or more (no allocation for one)
  std::size_t count_ = 0;
  bool tuple_ = false;
};

}  // namespace kiln
