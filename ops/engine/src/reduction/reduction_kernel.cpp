#include "kiln/engine/reduction_kernel.hpp"

#include <fmt/format.h>

#include "kiln/codegen/reduction_emitter.hpp"
#include "kiln/codegen/type_resolution.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {

using codegen::OperandKind;
using codegen::ReductionSpec;
using codegen::ReductionStrategy;

ReductionKernel::ReductionKernel(std::string_view in_params, std::string_view out_params,
                                 std::string map_expr, std::string reduce_expr,
                                 std::string post_map_expr, std::string identity,
                                 std::string_view name, reduction_kernel_options options)
    : ReductionKernel(
          codegen::make_reduction_definition(in_params, out_params,
                                             {.map_expr = std::move(map_expr),
                                              .reduce_expr = std::move(reduce_expr),
                                              .post_map_expr = std::move(post_map_expr),
                                              .identity = std::move(identity),
                                              .reduce_type = std::move(options.reduce_type),
                                              .preamble = std::move(options.preamble)},
                                             name, options.options),
          options.return_tuple) {}

ReductionKernel::ReductionKernel(codegen::ReductionDefinition def, bool return_tuple)
    : generated_kernel(std::move(def)), return_tuple_(return_tuple) {}

std::vector<ReductionSpec> ReductionKernel::specs(const aot_target& t) const {
  const auto& def = *def_;
  const std::size_t n = def.params.size();
  if (t.dtypes.size() != std::size_t(def.nin) && t.dtypes.size() != n)
    throw TypeError(fmt::format("kernel '{}': specs takes {} or {} dtypes, got {}", def.name,
                                def.nin, n, t.dtypes.size()));
  if (t.max_ndim < 1 || t.max_ndim > kMaxNdim)
    throw ValueError(
        fmt::format("kernel '{}': max_ndim {} is outside 1..{}", def.name, t.max_ndim, kMaxNdim));
  for (int s : t.scalar_inputs)
    if (s < 0 || s >= def.nin)
      throw ValueError(fmt::format("kernel '{}': scalar input {} is not an input (0..{})", def.name,
                                   s, def.nin - 1));
  std::array<codegen::ArgInfo, codegen::kMaxParams> info{};
  for (std::size_t k = 0; k < t.dtypes.size(); ++k) info[k] = {t.dtypes[k], true};
  for (int s : t.scalar_inputs) info[std::size_t(s)].is_array = false;
  std::array<dtype, codegen::kMaxParams> types{};
  codegen::resolve_param_types(def, std::span(info.data(), n), std::span(types.data(), n));

  ReductionSpec base;
  base.nparams = std::uint8_t(n);
  std::size_t widest = 1;
  int array_inputs = 0;
  bool raw = false;
  for (std::size_t k = 0; k < n; ++k) {
    const bool scalar = int(k) < def.nin && !info[k].is_array;
    const auto kind = scalar              ? OperandKind::scalar
                      : def.params[k].raw ? OperandKind::raw_array
                                          : OperandKind::array;
    base.set_param(int(k), types[k], kind, t.raw_ndim, true);
    raw |= kind == OperandKind::raw_array;
    if (kind == OperandKind::array && int(k) < def.nin) {
      widest = std::max(widest, types[k].itemsize());
      ++array_inputs;
    }
  }
  std::vector<ReductionSpec> out;
  std::vector<int> bits{32};
  if (t.index64) bits.push_back(64);
  for (int b : bits) {
    auto with = [&](ReductionStrategy st, int split, int out_nd, int red_nd, int contiguous,
                    int vw) {
      ReductionSpec s = base;
      s.strategy = st;
      s.split = std::uint8_t(split);
      s.out_ndim = std::uint8_t(out_nd);
      s.red_ndim = std::uint8_t(red_nd);
      s.red_contiguous = std::uint8_t(contiguous);
      s.vector_width = std::uint8_t(vw);
      s.index_bits = std::uint8_t(b);
      out.push_back(s);
    };
    // Every (output dims, reduced dims) pair; rows contiguous along the last reduced dim with
    // every vector width, strided rows, and outer columns with every vector width.
    for (int od = 1; od <= t.max_ndim; ++od)
      for (int rd = 1; od + rd <= t.max_ndim + 1; ++rd) {
        for (int vw = 1; vw <= int(16 / widest); vw *= 2)
          for (int contiguous : {1, 0}) {
            if (!contiguous && vw > 1) continue;
            with(ReductionStrategy::inner_warp, 0, od, rd, contiguous, vw);
            with(ReductionStrategy::inner_block, 0, od, rd, contiguous, vw);
            with(ReductionStrategy::inner_block, 1, od, rd, contiguous, vw);
          }
        for (int vw = 1; vw <= int(16 / widest); vw *= 2)
          for (int split : {0, 1}) with(ReductionStrategy::outer, split, od, rd, 0, vw);
        if (rd == 1 && array_inputs == 1 && widest <= 8) {  // rows peeled to 16-byte vectors
          with(ReductionStrategy::inner_warp, 0, od, rd, 2, int(16 / widest));
          with(ReductionStrategy::inner_block, 0, od, rd, 2, int(16 / widest));
          with(ReductionStrategy::inner_block, 1, od, rd, 2, int(16 / widest));
        }
        if (array_inputs == 1 && widest <= 8 && !raw)  // the input streamed flat, period folded
          with(ReductionStrategy::folded, 1, od, rd, 0, int(16 / widest));
        if (array_inputs == 1 && widest <= 4) {  // runs in aligned 16-byte windows
          with(ReductionStrategy::inner_warp, 0, od, rd, 3, int(16 / widest));
          with(ReductionStrategy::inner_block, 0, od, rd, 3, int(16 / widest));
          with(ReductionStrategy::inner_block, 1, od, rd, 3, int(16 / widest));
        }
      }
  }
  return out;
}

std::string ReductionKernel::emit(const codegen::ReductionDefinition& def,
                                  const ReductionSpec& spec) {
  return codegen::emit_reduction(def, spec);
}

}  // namespace kiln
