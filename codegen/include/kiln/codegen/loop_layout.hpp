#pragma once
// Loop-layout arithmetic for elementwise kernels, all host-side and GPU-free: collapse the
// loop's dimensions across operands, classify the layout, pick index and vector widths.
//
//   Shape shape{4, 1, 8};
//   Shape st[] = {{32, 32, 4}, {0, 0, 4}};   // x contiguous; y broadcast along axis 0
//   collapse_dims(shape, st);                 // shape (4, 8): size-1 axis dropped,
//                                             // (4, 8) kept apart: y's strides differ
//
// Strides are in bytes and cover the loop shape (broadcast axes have stride 0).
#include <cstdint>
#include <span>

#include "kiln/runtime/shape.hpp"

namespace kiln::codegen {

/// Drops size-1 axes and merges axis d into d+1 when every operand has
/// stride[d] == stride[d+1] * shape[d+1]. A shape with a 0 extent is left alone.
/// `order_by` >= 0: before merging, the axes are sorted so that operand strides[order_by]
/// (an output) runs with descending |stride| (stable), as NumPy's iterator orders a loop: a
/// transposed output, and operands transposed with it, then walk memory in order.
void collapse_dims(Shape& shape, std::span<Shape> strides, int order_by = -1);

/// True when the operand walks the loop shape in C order with unit element steps.
bool is_contiguous_over(const Shape& shape, const Shape& strides, std::int64_t itemsize);
/// True when the operand is one element broadcast to the whole loop (every stride 0).
bool is_uniform(const Shape& strides);

/// Largest byte offset (from element 0) an operand reaches, by magnitude, plus one element.
std::int64_t byte_span(const Shape& shape, const Shape& strides, std::int64_t itemsize);
/// 32-bit indices are safe when the loop size and every byte span stay below 2^31.
/// (Loop counters in kernels are unsigned, so stepping past the end cannot overflow.)
int choose_index_bits(std::int64_t loop_size, std::int64_t widest_byte_span);

/// n / divisor on the device as (umulhi(n, multiplier) + n) >> shift, exact for every n below
/// 2^31 (index_bits 32) or 2^63 (64): the multiplier and shift of `divisor` >= 1, the
/// multiplier's unsigned bits in an int64 (its low 32 bits for 32-bit indices).
struct FastDivisor {
  std::int64_t divisor = 1, multiplier = 0, shift = 0;
};
FastDivisor fast_divisor(std::int64_t divisor, int index_bits);

/// Elements per vector for the contiguous path: 16 bytes / the widest array operand, reduced
/// until every array operand's address is aligned to width * its itemsize. 1 = no vectors.
struct VectorOperand {
  std::uintptr_t address;
  std::int64_t itemsize;
};
int choose_vector_width(std::span<const VectorOperand> operands);

}  // namespace kiln::codegen
