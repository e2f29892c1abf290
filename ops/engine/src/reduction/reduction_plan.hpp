#pragma once
// The reduction-specific step of a call: from the bound arrays and the reduced-axes mask to a
// ReductionSpec (output and reduced dims collapsed apart, inner or outer strategy, vector and
// index widths, split) and its launch geometry, and the arguments that spec's kernel takes.
#include <array>
#include <cstdint>

#include "call/kernel_args.hpp"
#include "call/kernel_call.hpp"
#include "call/stack_vector.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/codegen/reduction_spec.hpp"

namespace kiln::detail {

struct ReductionPlan {
  codegen::ReductionSpec spec;
  Shape dims;  // collapsed output dims, then reduced dims
  StackVector<Shape, kMaxParams>
      strides;  // per array operand: inputs over dims, outputs over output dims
  std::array<std::int8_t, kMaxParams> slot;  // parameter -> its index in `strides`
  std::int64_t m = 0, n = 0;                 // output size, reduced size
  codegen::ReductionGeometry geometry;
};

/// Plans call `c` (c.shape: the broadcast inputs; c.arrays: inputs and prepared outputs)
/// reducing the axes in `mask`, for `sm_count` multiprocessors.
void plan_reduction(const KernelCall& c, std::uint64_t mask, bool keepdims, int sm_count,
                    ReductionPlan& plan);
/// Packs the kernel arguments (codegen::reduction_arg order); ws/sem only for split specs.
void pack_reduction(const KernelCall& c, const ReductionPlan& plan, void* ws, void* sem,
                    KernelArgs& args);

}  // namespace kiln::detail
