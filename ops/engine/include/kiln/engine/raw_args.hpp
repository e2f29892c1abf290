#pragma once
// Arguments of a RawKernel launch, as the kernel receives them: an ndarray passes its device
// pointer (data(), i.e. buffer + offset); any other trivially copyable C++ value (int64_t,
// float, kiln::half, a raw pointer, a struct) passes its bytes, with its own size and
// alignment. kiln checks them against the parameter layout the driver reports, so each
// argument must have the exact C++ type of the kernel's parameter (size_t, not int).
//
//   kiln::raw_arg args[] = {x, std::int64_t(n), 2.5f, kiln::launch_options{.shared_mem = 1024}};
//   kiln::type_name<std::int64_t>();   // "int64_t": how messages spell a C++ type
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "kiln/engine/kernel_result.hpp"
#include "kiln/engine/launch_options.hpp"
#include "kiln/runtime/half.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/scalar.hpp"

namespace kiln {
namespace detail {
template <class T>
constexpr std::string_view pretty_type_name() {
  // "... [with T = Foo; ...]" (GCC) or "... [T = Foo]" (Clang).
  constexpr std::string_view f = __PRETTY_FUNCTION__;
  constexpr auto start = f.find("T = ") + 4;
  constexpr auto end = f.find_first_of(";]", start);
  return f.substr(start, end - start);
}
}  // namespace detail

/// How kiln's messages spell a C++ type: fixed-width names for integers, else the compiler's.
template <class T>
constexpr std::string_view type_name() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>)
    return "bool";
  else if constexpr (std::is_same_v<U, char>)
    return "char";
  else if constexpr (std::is_same_v<U, std::int8_t>)
    return "int8_t";
  else if constexpr (std::is_same_v<U, std::uint8_t>)
    return "uint8_t";
  else if constexpr (std::is_same_v<U, std::int16_t>)
    return "int16_t";
  else if constexpr (std::is_same_v<U, std::uint16_t>)
    return "uint16_t";
  else if constexpr (std::is_same_v<U, std::int32_t>)
    return "int32_t (int)";
  else if constexpr (std::is_same_v<U, std::uint32_t>)
    return "uint32_t (unsigned int)";
  else if constexpr (std::is_same_v<U, std::int64_t>)
    return "int64_t";
  else if constexpr (std::is_same_v<U, std::uint64_t>)
    return "uint64_t (size_t)";
  else if constexpr (std::is_same_v<U, float>)
    return "float";
  else if constexpr (std::is_same_v<U, double>)
    return "double";
  else if constexpr (std::is_same_v<U, half>)
    return "kiln::half";
  else if constexpr (std::is_same_v<U, bf16>)
    return "kiln::bf16";
  else
    return detail::pretty_type_name<U>();
}

class raw_arg {
 public:
  /// The array's device pointer (element 0 of the view).
  raw_arg(const ndarray& a) noexcept  // NOLINT
      : pointer_(a.data()),
        size_(sizeof(void*)),
        align_(alignof(void*)),
        type_("ndarray (a device pointer)"),
        is_array_(true) {}
  raw_arg(const kernel_result& r) noexcept : raw_arg(r.array()) {}  // NOLINT
  /// The trailing per-launch options (shared_mem, stream).
  raw_arg(const launch_options& o) noexcept : options_(&o) {}  // NOLINT
  /// Any other trivially copyable value, by its bytes.
  template <class T>
  requires(std::is_trivially_copyable_v<T> && !std::is_same_v<T, scalar> &&
           !std::is_same_v<T, launch_options> && !std::is_base_of_v<ndarray, T>) raw_arg(const T& v)
  noexcept  // NOLINT
      : value_(&v), size_(sizeof(T)), align_(alignof(T)), type_(type_name<T>()) {
    if constexpr (host_element<T>) {
      dtype_ = dtype_of<T>();
      has_dtype_ = true;
    }
  }

  /// Where the argument's bytes are (what cuLaunchKernel's kernelParams entry points to).
  const void* address() const noexcept { return is_array_ ? &pointer_ : value_; }
  std::uint32_t size() const noexcept { return size_; }
  std::uint32_t alignment() const noexcept { return align_; }
  std::string_view type() const noexcept { return type_; }
  bool is_options() const noexcept { return options_ != nullptr; }
  const launch_options& options() const noexcept { return *options_; }
  /// An ndarray's pointer (graph::update can rebind it).
  bool is_array() const noexcept { return is_array_; }
  /// A value of a kiln scalar type (float, int32_t, size_t, ...; graph::update_scalar can
  /// replace it): its dtype.
  bool has_dtype() const noexcept { return has_dtype_; }
  kiln::dtype dtype() const noexcept { return dtype_; }

 private:
  const void* value_ = nullptr;
  void* pointer_ = nullptr;
  const launch_options* options_ = nullptr;
  std::uint32_t size_ = 0, align_ = 1;
  std::string_view type_;
  bool is_array_ = false;
  bool has_dtype_ = false;
  kiln::dtype dtype_{};
};

}  // namespace kiln
