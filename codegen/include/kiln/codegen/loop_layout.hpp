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
void collapse_dims(Shape& shape, std::span<Shape> strides);

/// True when the operand walks the loop shape in C order with unit element steps.
bool is_contiguous_over(const Shape& shape, const Shape& strides, std::int64_t itemsize);
/// True when the operand is one element broadcast to the whole loop (every stride 0).
bool is_uniform(const Shape& strides);

/// Largest byte offset (from element 0) an operand reaches, by magnitude, plus one element.
std::int64_t byte_span(const Shape& shape, const Shape& strides, std::int64_t itemsize);
/// 32-bit indices are safe when the loop size and every byte span stay below 2^31.
/// (Loop counters in kernels are unsigned, so stepping past the end cannot overflow.)
int choose_index_bits(std::int64_t loop_size, std::int64_t widest_byte_span);

/// Elements per vector for the contiguous path: 16 bytes / the widest array operand, reduced
/// until every array operand's address is aligned to width * its itemsize. 1 = no vectors.
struct VectorOperand {
  std::uintptr_t address;
  std::int64_t itemsize;
};
int choose_vector_width(std::span<const VectorOperand> operands);

}  // namespace kiln::codegen
