#pragma once
// kiln::RowKernel: reductions of rows consumed by an elementwise expression of the same rows,
// as ONE kernel whose every row is read from memory once. Softmax, log-softmax, layer norm
// and standardising are this shape: max(x) over the row, then sum(exp(x - max)), then
// exp(x - max) / sum, all within the row. The lazy-expression planner (lazy_expr, fuse.hpp)
// builds one per expression structure when the row fits on chip; this class is the kernel
// kind it runs on (the shared call path, the loaded-kernel cache, ahead-of-time specs).
//
//   auto x = kiln::lazy(a);                                        // a: (16384, 4096) float32
//   auto e = kiln::exp(x - kiln::max(x, -1, true));
//   kiln::ndarray y = e / kiln::sum(e, -1, true);                  // runs a RowKernel
//   // ahead of time (fused_reduction.hpp):
//   const kiln::RowKernel* k = kiln::aot::row_kernel(e / kiln::sum(e, -1, true));
//   auto reqs = k->compile_requests({.dtypes = {kiln::float32, kiln::float32}}, 90);
//
// A row is the reduced axes of the output's shape; they must collapse to one dim along which
// every array has unit steps or none (a broadcast array). The arrays read in more than one
// phase are held on chip: in a block's registers (up to 512 threads x 8 vectors of 16 bytes),
// then its shared memory too. A longer row streams from L2 where L2 holds the rows of two
// blocks an SM, and otherwise (sm_90 on) is held by a cluster of up to 8 blocks, whose
// reductions merge through each other's shared memory. Calls take the expression's leaves,
// then its outputs (arrays of the full shape).
#include <span>
#include <string>
#include <vector>

#include "kiln/codegen/row_definition.hpp"
#include "kiln/codegen/row_spec.hpp"
#include "kiln/engine/ahead_of_time.hpp"
#include "kiln/engine/generated_kernel.hpp"
#include "kiln/engine/kernel_arg.hpp"
#include "kiln/engine/kernel_result.hpp"
#include "kiln/engine/reduction_kernel.hpp"

namespace kiln {

class RowKernel : public generated_kernel<RowKernel, codegen::RowDefinition, codegen::RowSpec> {
 public:
  static constexpr const char* kKind = "rows";
  /// `mask`: the reduced axes of the loop (the outputs' shape).
  RowKernel(codegen::RowDefinition def, std::uint64_t mask);

  /// k(leaves..., outputs...) (generated_kernel's operator()), then optionally launch_options
  /// (its block_size is ignored: a row kernel's block is its rows').
  kernel_result call(std::span<const kernel_arg> args) const;
  std::uint64_t mask() const noexcept { return mask_; }

  // ---- ahead of time (no GPU needed); also compile_requests, compile_request, source and
  // compile_for (generated_kernel.hpp) ----
  /// Every spec a call with arrays of target.dtypes can ask for: output dims 1..max_ndim,
  /// every vector width, 1, 2, 4 or 8 vectors per thread, a group of lanes, a block or a
  /// cluster of 2, 4 or 8 wide blocks per row (sm_90 on), 32/64-bit indices.
  std::vector<codegen::RowSpec> specs(const aot_target& target) const;
  static std::string emit(const codegen::RowDefinition& def, const codegen::RowSpec& spec);
  /// Whether a GPU of `arch` runs `spec`: a row split over a cluster needs sm_90
  /// (compile_requests leaves the others out; compile_request compiles any).
  static bool runs_on(const codegen::RowSpec& spec, int arch) {
    return spec.cluster <= 1 || arch >= 90;
  }

 private:
  std::uint64_t mask_ = 0;
};

}  // namespace kiln
