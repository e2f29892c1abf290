#pragma once
// kiln::ReductionKernel: CuPy's ReductionKernel in C++. Each output element reduces the
// mapped input elements of its position along the reduced axes, in one generated kernel.
//
//   kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
//   kiln::ndarray n = l2norm(x);                                        // every axis: 0-d
//   kiln::ndarray rows = l2norm(x, kiln::reduce_options{.axis = 1});    // per row
//   l2norm(x, z, kiln::reduce_options{.axis = -1, .keepdims = true});  // into z
//
// Code (as CuPy's): map_expr maps input elements (names of the inputs) to the reduce type;
// reduce_expr combines `a` and `b`; post_map_expr (one or more statements) reads `a` and
// assigns the outputs; identity is the reduce type's neutral value ("" for none). Also
// visible: _i (output index), _J (position along the reduced axes, C order: argmax-style
// kernels), _j (= _i * reduced size + _J), _in_ind.size(), _out_ind.size(), _type_reduce.
// reduce_type (default: the first output's type) may be a struct or template of the preamble.
// Parameters and placeholders type exactly as ElementwiseKernel's.
//
// Calls: k(inputs...), k(inputs..., outputs...), then optionally reduce_options (axis,
// keepdims, or the outputs as .out, not both) and launch_options (block_size a multiple of
// 32). Inputs broadcast against each other; the reduced axes are those of the broadcast shape.
// Every output is returned (kernel_result: several outputs index as r[0], r[1]).
// An empty reduction gives post_map(identity); with no identity it throws ValueError
// "zero-size array to reduction operation NAME which has no identity". A non-empty reduction
// with no identity starts from its first element, so a max of negative values is negative.
//
// Generated code: the output and reduced axes are collapsed separately (any set of axes:
// a row is runs along the last reduced dim, walked with adds, no per-element division), then
// a group of lanes (short rows, several per block) or a block per output row, vector loads
// along contiguous runs; or, when the output's last dim is the contiguous one (reducing outer
// axes), threads across columns (vector loads across them) and down the reduced elements,
// combined in shared memory. Blocks split long rows or columns; a full reduction is many
// blocks whose partials the last block combines in the same launch.
#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/binary.hpp"
#include "kiln/cache/compile_request.hpp"
#include "kiln/codegen/reduction_definition.hpp"
#include "kiln/codegen/reduction_spec.hpp"
#include "kiln/engine/ahead_of_time.hpp"
#include "kiln/engine/generated_kernel.hpp"
#include "kiln/engine/kernel_arg.hpp"
#include "kiln/engine/kernel_result.hpp"
#include "kiln/engine/launch_options.hpp"
#include "kiln/engine/reduce_options.hpp"

namespace kiln {

struct reduction_kernel_options {
  /// C++ type of `a`/`b`: a dtype name, placeholder or preamble type; "" = first output's.
  std::string reduce_type;
  std::string preamble;  // file scope, before the kernel
  /// Calls return an indexable result even for one output.
  bool return_tuple = false;
  /// NVRTC options, e.g. {"--use_fast_math", "-DMY_FLAG=2"}.
  std::vector<std::string> options;
};
/// The name before 0.2 (too close to the per-call reduce_options).
using reduction_options [[deprecated("renamed reduction_kernel_options")]] =
    reduction_kernel_options;

class ReductionKernel : public generated_kernel<ReductionKernel, codegen::ReductionDefinition,
                                                codegen::ReductionSpec> {
 public:
  static constexpr const char* kKind = "reduction";
  /// Parses and checks everything that can be checked without a GPU; throws SignatureError.
  ReductionKernel(std::string_view in_params, std::string_view out_params, std::string map_expr,
                  std::string reduce_expr, std::string post_map_expr, std::string identity,
                  std::string_view name, reduction_kernel_options options = {});
  /// From a definition built programmatically (e.g. the fused-expression generator).
  explicit ReductionKernel(codegen::ReductionDefinition def, bool return_tuple = false);

  /// k(inputs...), k(inputs..., outputs...) (generated_kernel's operator()), each then
  /// optionally with reduce_options and launch_options, with arguments gathered at run time.
  kernel_result call(std::span<const kernel_arg> args) const;

  // ---- ahead of time (no GPU needed); also compile_requests, compile_request, source and
  // compile_for (generated_kernel.hpp) ----
  /// Every spec a call with arrays of target.dtypes can ask for: for every (output dims,
  /// reduced dims) pair with output + reduced dims <= max_ndim + 1, rows contiguous along the
  /// last reduced dim (lane group, block, split block; every vector width), strided rows
  /// (the same three), outer columns (plain and split; every vector width), one input of at
  /// most 8 bytes streamed flat with its period folded (16-byte vectors), windows and peeled
  /// rows where they apply; 32/64-bit indices.
  std::vector<codegen::ReductionSpec> specs(const aot_target& target) const;
  static std::string emit(const codegen::ReductionDefinition& def,
                          const codegen::ReductionSpec& spec);

 private:
  bool return_tuple_ = false;
};

}  // namespace kiln
