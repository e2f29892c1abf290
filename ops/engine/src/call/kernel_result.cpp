#include "kiln/engine/kernel_result.hpp"

#include <fmt/format.h>

#include "kiln/runtime/error.hpp"

namespace kiln {

const ndarray& kernel_result::operator[](std::size_t k) const {
  if (k >= count_)
    throw ValueError(fmt::format("kernel result index {} out of range: it holds {} array{}", k,
                                 count_, count_ == 1 ? "" : "s"));
  return begin()[k];
}

ndarray& kernel_result::operator[](std::size_t k) {
  return const_cast<ndarray&>(static_cast<const kernel_result&>(*this)[k]);
}

void kernel_result::check_single() const {
  if (count_ == 0) throw TypeError("the kernel returns nothing (it was built with no_return=true)");
  if (tuple_) throw TypeError("the kernel returns a tuple (return_tuple=true): take result[0]");
  if (count_ != 1)
    throw TypeError(fmt::format("the kernel returns {} arrays: take result[k]", count_));
}

const ndarray& kernel_result::array() const {
  check_single();
  return one_;
}

kernel_result::operator ndarray() && {
  check_single();
  return std::move(one_);
}

void kernel_result::push_back(ndarray a) {
  if (count_ == 0) {
    one_ = std::move(a);
  } else {
    if (count_ == 1) many_.push_back(std::move(one_));
    many_.push_back(std::move(a));
  }
  ++count_;
}

void kernel_result::clear() noexcept {
  one_ = ndarray();
  many_.clear();
  count_ = 0;
}

}  // namespace kiln
