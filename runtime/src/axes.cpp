#include "kiln/runtime/axes.hpp"

#include <fmt/format.h>

#include "kiln/runtime/error.hpp"

namespace kiln {

axes::axes(std::initializer_list<std::int64_t> list) : all_(false) {
  if (list.size() > std::size_t(kMaxNdim))
    throw ValueError(fmt::format("too many axes ({}; at most {})", list.size(), kMaxNdim));
  for (auto a : list) v_[std::size_t(n_++)] = a;
}

axes axes::from_mask(std::uint64_t mask) noexcept {
  axes a;
  a.all_ = false;
  for (int d = 0; d < kMaxNdim; ++d)
    if (mask >> d & 1) a.v_[std::size_t(a.n_++)] = d;
  return a;
}

std::uint64_t axes::mask(int ndim) const {
  if (all_) return ndim >= 64 ? ~0ull : (1ull << ndim) - 1;
  std::uint64_t m = 0;
  for (int k = 0; k < n_; ++k) {
    const int d = normalize_axis(v_[std::size_t(k)], ndim);
    if (m >> d & 1) throw ValueError("duplicate value in 'axis'");
    m |= 1ull << d;
  }
  return m;
}

Shape reduced_shape(const Shape& shape, std::uint64_t mask, bool keepdims) {
  Shape out;
  for (int d = 0; d < shape.size(); ++d) {
    if (!(mask >> d & 1))
      out.push_back(shape[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

}  // namespace kiln
