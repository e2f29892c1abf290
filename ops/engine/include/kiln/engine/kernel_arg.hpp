#pragma once
// One argument of a kernel call: an array (by reference, not copied), a host scalar of any
// kiln type, or the trailing options (reduce_options, launch_options). Built implicitly from what
// the caller passes.
//
//   kiln::kernel_arg args[] = {x, 2.5f, kiln::launch_options{.block_size = 64}};
#include <complex>
#include <concepts>
#include <type_traits>

#include "kiln/engine/launch_options.hpp"
#include "kiln/engine/reduce_options.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/scalar.hpp"

namespace kiln {

class kernel_result;  // kernel_result.hpp

template <class T>
concept kernel_scalar = std::is_arithmetic_v<std::remove_cvref_t<T>> ||
    std::same_as<std::remove_cvref_t<T>, half> || std::same_as<std::remove_cvref_t<T>, bf16> ||
    std::same_as<std::remove_cvref_t<T>, std::complex<float>> ||
    std::same_as<std::remove_cvref_t<T>, std::complex<double>> ||
    std::same_as<std::remove_cvref_t<T>, scalar>;

class kernel_arg {
 public:
  kernel_arg(const ndarray& a) noexcept : array_(&a) {}  // NOLINT
  template <std::same_as<kernel_result> R>        // a template: this header needs only the name
  kernel_arg(const R& r) : array_(&r.array()) {}  // NOLINT
  kernel_arg(const launch_options& o) noexcept : options_(&o) {}  // NOLINT
  kernel_arg(const reduce_options& o) noexcept : reduce_(&o) {}   // NOLINT
  template <kernel_scalar T>
  kernel_arg(T v) noexcept : value_(scalar(v)) {}  // NOLINT

  bool is_array() const noexcept { return array_ != nullptr; }
  bool is_options() const noexcept { return options_ != nullptr; }
  bool is_reduce_options() const noexcept { return reduce_ != nullptr; }
  const reduce_options& reduce() const noexcept { return *reduce_; }
  const ndarray& array() const noexcept { return *array_; }
  const scalar& value() const noexcept { return value_; }
  const launch_options& options() const noexcept { return *options_; }

 private:
  const ndarray* array_ = nullptr;
  const launch_options* options_ = nullptr;
  const reduce_options* reduce_ = nullptr;
  scalar value_{false};
};

}  // namespace kiln
