#pragma once
// The kernel ABI, described once: every kind of kernel argument kiln passes, the C++ type a
// generated kernel declares for it, and its size, alignment and byte layout. Emitters spell
// parameter declarations with abi_type; the host packs arguments with abi_layout (see
// ops/src/kernel_args.hpp); a CPU test compiles static_asserts of one against the other with
// NVRTC for every kind, dtype and index width.
//
// Every argument is one of:
//   value      T                           a scalar in its parameter's dtype
//   pointer    T* / const T*               element 0 of an array
//   strided    kiln_strided<nd, I>         {char* kiln_p; I kiln_s[nd];}  byte strides
//   raw_array  kiln_carray<T, nd, c, I>    {T* kiln_data; I kiln_size; I kiln_shape[max(nd,1)];
//                                           I kiln_strides[max(nd,1)];}  byte strides
//   index      I                           a loop size or count
//   dims       kiln_dims<nd, I>            {I kiln_v[nd];}  a (collapsed) loop shape
//   loop_dims  kiln_loop_dims<nd, I>       {I kiln_v[nd], kiln_e[nd], kiln_d[nd], kiln_m[nd],
//                                           kiln_s[nd], kiln_t;}  a planned loop: extents, steps
//                                           of the flat index, divisors with multipliers and
//                                           shifts, and a tiled kernel's log2 tile cols
//                                           (a packed kernel's log2 box extent along A)
// where I is kiln_idx: int for 32-bit indexing, long long for 64-bit. So every argument is an
// optional 8-byte pointer followed by index-width integers (or a plain value), padded to its
// alignment.
//
//   AbiArg a{.kind = AbiKind::strided, .ndim = 3};
//   abi_type(a);          // "const kiln_strided<3, kiln_idx>"
//   abi_layout(a, 32);    // {.size = 24, .align = 8, .pointer = true, .indices = 3}
#include <algorithm>
#include <cstdint>
#include <string>

#include "kiln/runtime/dtype.hpp"

namespace kiln::codegen {

enum class AbiKind : std::uint8_t { value, pointer, strided, raw_array, index, dims, loop_dims };

struct AbiArg {
  AbiKind kind = AbiKind::pointer;
  dtype type = float64;    // value, pointer, raw_array: the element dtype
  int ndim = 0;            // strided, raw_array, dims, loop_dims
  bool contiguous = true;  // raw_array: C-contiguous (x[i] needs no unravel)
  bool writable = false;   // pointer: an output (T* rather than const T*)
};

struct AbiLayout {
  std::uint32_t size = 0, align = 0;
  bool pointer = false;          // starts with an 8-byte pointer
  std::uint32_t indices = 0;     // then this many index-width integers
  std::uint32_t value_size = 0;  // value: the dtype's bytes (no pointer, no indices)
};

/// The C++ type a kernel declares for `a` (uses the kiln_idx typedef for I).
std::string abi_type(const AbiArg& a);
/// Size, alignment and layout of `a` for index_bits 32 or 64 (inline: every launch packs by it).
constexpr AbiLayout abi_layout(const AbiArg& a, int index_bits) {
  const std::uint32_t idx = index_bits == 64 ? 8 : 4;
  AbiLayout l;
  switch (a.kind) {
    case AbiKind::value:
      l.value_size = std::uint32_t(a.type.itemsize());
      // Device types align to their size (complex<double>: 16), bool and 1-byte ints to 1.
      l.size = l.align = l.value_size;
      return l;
    case AbiKind::pointer:
      l.pointer = true;
      break;
    case AbiKind::strided:
      l.pointer = true, l.indices = std::uint32_t(a.ndim);
      break;
    case AbiKind::raw_array:
      l.pointer = true, l.indices = 1 + 2 * std::uint32_t(std::max(a.ndim, 1));
      break;
    case AbiKind::index:
      l.indices = 1;
      break;
    case AbiKind::dims:
      l.indices = std::uint32_t(a.ndim);
      break;
    case AbiKind::loop_dims:
      l.indices = 5 * std::uint32_t(a.ndim) + 1;
      break;
  }
  l.align = l.pointer ? 8 : idx;
  const std::uint32_t bytes = (l.pointer ? 8 : 0) + idx * l.indices;
  l.size = (bytes + l.align - 1) / l.align * l.align;
  return l;
}

}  // namespace kiln::codegen
