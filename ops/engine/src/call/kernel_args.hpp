#pragma once
// Kernel arguments packed for cuLaunchKernel, laid out by the one ABI description
// (codegen/kernel_abi.hpp): each put_* begins an argument of abi_layout(arg)'s size and
// alignment and writes its pointer and index-width integers in the declared order.
//
//   KernelArgs args(spec.index_bits);
//   args.put_pointer(x.data());
//   args.put_strided(y.data(), strides);        // kiln_strided<nd, I>
//   args.put_index(n);                          // kiln_idx
//   function.launch(grid, block, args.argv(), 0, stream);
#include <cstddef>
#include <cstdint>
#include <span>

#include "kiln/codegen/kernel_abi.hpp"
#include "kiln/codegen/kernel_definition.hpp"

namespace kiln::detail {

class KernelArgs {
 public:
  static constexpr std::size_t kCapacity = 16384;
  static constexpr std::size_t kMaxArgs = codegen::kMaxParams + 8;

  explicit KernelArgs(int index_bits) noexcept : index_bits_(index_bits) {}

  /// A scalar already converted to its dtype (`bytes` holds at least its itemsize).
  void put_value(dtype t, const void* bytes);
  void put_pointer(const void* p);
  /// kiln_strided<ndim, I>: element 0 and `ndim` byte strides.
  void put_strided(const void* p, const std::int64_t* strides, int ndim);
  /// kiln_carray<T, nd, c, I>: data, size, shape and byte strides (a 0-d array as (1,), (0,)).
  void put_raw_array(const void* p, std::int64_t size, const std::int64_t* shape,
                     const std::int64_t* strides, int ndim);
  void put_index(std::int64_t v);
  /// kiln_dims<ndim, I>
  void put_dims(const std::int64_t* dims, int ndim);
  /// kiln_loop_dims<ndim, I>: extents, steps of the flat index, `divisors` with the
  /// multipliers and shifts that divide by them (codegen::fast_divisor), and `tile` (tiled
  /// kernels: log2 of the tile's cols).
  void put_loop_dims(const std::int64_t* extents, const std::int64_t* steps,
                     const std::int64_t* divisors, int ndim, std::int64_t tile);

  void** argv() noexcept { return args_; }
  std::size_t count() const noexcept { return count_; }

 private:
  // Starts the argument `a` and returns where its bytes go.
  std::byte* begin(const codegen::AbiArg& a, codegen::AbiLayout& l);
  void put_indices(std::byte*& p, std::int64_t v) noexcept;

  alignas(16) std::byte buffer_[kCapacity];
  void* args_[kMaxArgs];
  std::size_t used_ = 0, count_ = 0;
  int index_bits_;
};

}  // namespace kiln::detail
