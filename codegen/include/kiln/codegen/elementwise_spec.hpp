#pragma once
// ElementwiseSpec: what one elementwise kernel binary is specialised for, beyond its
// definition: each parameter's dtype and kind, the loop layout, the collapsed ndim, the
// index width and the vector width. A fixed-size POD so the launch hit path can hash its
// bytes (with the definition hash and the device) without building any string.
//
//   ElementwiseSpec s;
//   s.layout = Layout::contiguous;
//   s.vector_width = 4;                          // float4 loads for float32
//   s.set_param(0, kiln::float32, OperandKind::array);
//
//   s.layout = Layout::tiled; s.ndim = 2;          // z = x.T + y
//   s.params[0].staged = 1;                        // x: through shared memory
#include <array>
#include <cstdint>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/runtime/dtype.hpp"

namespace kiln::codegen {

/// How one parameter reaches the kernel.
enum class OperandKind : std::uint8_t {
  scalar,     // a host value passed by value (also a raw parameter given a scalar)
  array,      // element i of the loop (contiguous, or strided over the collapsed dims)
  uniform,    // an array broadcast from one element (all strides 0): loaded once per thread
  raw_array,  // the whole array, indexed by the user: x[i], x[{i0, i1}], x.size(), x.shape()
};

enum class Layout : std::uint8_t {
  contiguous,  // every `array` operand is C-contiguous over the loop: pointer + i
  strided,     // byte strides over `ndim` collapsed dims
  // Two collapsed dims (rows, cols) walked in 32x32 tiles by 32x8 threads, strided arguments
  // as in `strided`. Operands whose fastest axis is the rows (a transposed view: `staged`)
  // move through shared memory so every global access runs along a full line.
  tiled,
};

struct OperandSpec {
  std::uint8_t dtype = 0;            // dtype_id
  OperandKind kind = OperandKind::array;
  std::uint8_t raw_ndim = 0;         // raw_array: the array's own ndim
  std::uint8_t raw_contiguous = 0;   // raw_array: C-contiguous, so x[i] needs no unravel
  std::uint8_t staged = 0;           // array in a tiled layout: read/written along axis 0
};

struct ElementwiseSpec {
  Layout layout = Layout::contiguous;
  std::uint8_t ndim = 1;          // strided: collapsed dims (>= 1); tiled: 2; contiguous: 1
  std::uint8_t index_bits = 32;   // 32 or 64
  std::uint8_t vector_width = 1;  // contiguous: elements per vector load (16 bytes / widest)
  std::uint8_t unroll = 2;        // vectors per thread per loop iteration
  std::uint8_t nparams = 0;
  std::uint16_t reserved = 0;     // keeps the bytes defined for hashing
  std::array<OperandSpec, kMaxParams> params{};

  dtype param_dtype(int k) const { return dtype(static_cast<dtype_id>(params[std::size_t(k)].dtype)); }
  OperandKind kind(int k) const { return params[std::size_t(k)].kind; }
  bool staged(int k) const { return params[std::size_t(k)].staged != 0; }
  void set_param(int k, dtype t, OperandKind kind, int raw_ndim = 0, bool raw_contiguous = true) {
    params[std::size_t(k)] = {static_cast<std::uint8_t>(t.id()), kind,
                              static_cast<std::uint8_t>(raw_ndim), std::uint8_t(raw_contiguous)};
  }
  /// Bytes that identify the spec (the used prefix of `params`).
  std::size_t key_size() const {
    return offsetof(ElementwiseSpec, params) + sizeof(OperandSpec) * nparams;
  }
};
static_assert(sizeof(OperandSpec) == 5);
static_assert(offsetof(ElementwiseSpec, params) == 8);

}  // namespace kiln::codegen
