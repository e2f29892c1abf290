#pragma once
// The elementwise-specific step of a call: from the bound arrays to an ElementwiseSpec
// (operand kinds, contiguous, strided over collapsed dims, or tiled when a 2-D loop has a
// transposed operand; index and vector widths), and
// the arguments that spec's kernel takes.
#include <array>
#include <cstdint>

#include "call/kernel_args.hpp"
#include "call/kernel_call.hpp"
#include "call/stack_vector.hpp"
#include "kiln/codegen/elementwise_spec.hpp"

namespace kiln::detail {

struct ElementwisePlan {
  codegen::ElementwiseSpec spec;
  Shape shape;                                      // collapsed (strided) loop shape
  StackVector<Shape, kMaxParams> strides;           // per loop operand, over `shape`
  std::array<std::int8_t, kMaxParams> slot;         // parameter -> its index in `strides`
  int noperands = 0;
};

/// Plans the layout of call `c` (dims merged when `reduce_dims`).
void plan_elementwise(const KernelCall& c, bool reduce_dims, ElementwisePlan& plan);
/// Packs the kernel arguments of `plan.spec` (codegen::elementwise_arg order).
void pack_elementwise(const KernelCall& c, const ElementwisePlan& plan, KernelArgs& args);

}  // namespace kiln::detail
