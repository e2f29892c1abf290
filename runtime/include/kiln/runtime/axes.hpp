#pragma once
// Which axes a reduction runs over, NumPy's `axis=`: all of them (None), one (negative counts
// from the end), or several. Fixed capacity: no allocation.
//
//   kiln::axes all;                 // None: every axis
//   kiln::axes one = -1;            // the last axis
//   kiln::axes two{0, 2};           // axes 0 and 2
//   std::uint64_t mask = two.mask(3);   // 0b101; checks bounds and duplicates
#include <array>
#include <cstdint>
#include <initializer_list>

#include "kiln/runtime/shape.hpp"

namespace kiln {

class axes {
 public:
  /// Every axis (NumPy's axis=None).
  axes() noexcept = default;
  axes(std::int64_t axis) noexcept : n_(1), all_(false), single_(true) {
    v_[0] = axis;
  }                                                      // NOLINT: implicit
  axes(int axis) noexcept : axes(std::int64_t(axis)) {}  // NOLINT
  /// Several axes; an empty list means no axis (nothing is reduced), as NumPy's axis=().
  axes(std::initializer_list<std::int64_t> list);
  /// The axes whose bits are set in `mask` (the inverse of mask()).
  static axes from_mask(std::uint64_t mask) noexcept;

  bool is_all() const noexcept { return all_; }
  /// One axis given as an integer (`axis=0`), not as a list (`axis={0}`): NumPy's reductions
  /// tell them apart on 0-d arrays (an int 0 or -1 reduces it as axis=None).
  bool is_single_int() const noexcept { return single_; }
  int size() const noexcept { return n_; }
  std::int64_t operator[](int k) const noexcept { return v_[std::size_t(k)]; }

  /// Bit d set for each reduced axis of an ndim-dimensional array. Throws ValueError "axis 3
  /// is out of bounds for array of dimension 3" or "duplicate value in 'axis'".
  std::uint64_t mask(int ndim) const;

 private:
  std::array<std::int64_t, kMaxNdim> v_{};
  int n_ = 0;
  bool all_ = true;
  bool single_ = false;
};

/// The shape a reduction over `mask` gives: reduced axes dropped, or kept as 1 (keepdims).
Shape reduced_shape(const Shape& shape, std::uint64_t mask, bool keepdims);

}  // namespace kiln
