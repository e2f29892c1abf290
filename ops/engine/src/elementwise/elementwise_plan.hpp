#pragma once
// The elementwise-specific step of a call: from the bound arrays to an ElementwiseSpec and the
// arguments its kernel takes. Layout classes, in the order they are tried:
//   contiguous  every operand C-contiguous over the loop (after collapsing): vectors of 16 bytes
//   interleaved a short axis S (2 to 8) beside a long one L, every operand along one of them
//               (an image between NHWC and NCHW, (n, 3).T): a thread takes S vectors of each,
//               an interleaved operand's as one contiguous run, transposed in registers
//   packed      two inputs contiguous along two different axes, neither the output's last
//               (permuted differently): boxes of the three axes, each staged input read into
//               shared memory in its own order
//   tiled       some operand's fastest axis is not the loop's last (a transposed or permuted
//               view): tiles of (its fastest axis, the last axis) over any batch axes, staged
//               through shared memory where an access would cross lines, a short side
//               running on across a second axis where its operands do, rows few enough
//               for one tile moving each staged tile as one run of memory; an input
//               contiguous along a third axis (where no box fits) is copied to C order first
//               (Plan::scattered)
//   strided     everything else (broadcasts, slices, negative steps, size-1 axes): items of
//               consecutive elements, by vectors where strides and alignment allow
//   gathered    a strided loop of 1- to 4-byte dtypes that takes no vectors, outputs contiguous:
//               outputs by vectors of the flat loop, inputs stepped from one unravel per vector
// The loop is first collapsed: size-1 axes dropped, axes ordered by the first output's strides
// (unless the code reads the flat index i), contiguous axes merged.
#include <array>
#include <cstdint>

#include "call/kernel_args.hpp"
#include "call/kernel_call.hpp"
#include "call/stack_vector.hpp"
#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/elementwise_spec.hpp"
#include "kiln/codegen/launch_config.hpp"

namespace kiln::detail {

struct ElementwisePlan {
  codegen::ElementwiseSpec spec;
  Shape shape;                               // planned loop shape (strided, tiled)
  Shape index_strides;                       // step of the flat index i along each axis
  StackVector<Shape, kMaxParams> strides;    // per loop operand, over `shape`
  std::array<std::int8_t, kMaxParams> slot;  // parameter -> its index in `strides`
  int noperands = 0;
  codegen::TileShape tile;  // tiled: the tile for this loop
  codegen::PackedBox box;   // packed: the box for this loop
  std::int64_t tiles = 0;   // tiled, packed: how many tiles (boxes)
  // Inputs (bit k: parameter k) the tiled loop would read a sector per element: the call
  // copies them to C order and plans again.
  std::uint64_t scattered = 0;
};

/// Plans the layout of call `c` of a kernel defined by `def` (dims merged and reordered when
/// `reduce_dims`).
void plan_elementwise(const KernelCall& c, const codegen::ElementwiseDefinition& def,
                      bool reduce_dims, ElementwisePlan& plan);
/// Packs the kernel arguments of `plan.spec` (codegen::elementwise_arg order).
void pack_elementwise(const KernelCall& c, const ElementwisePlan& plan, KernelArgs& args);

}  // namespace kiln::detail
