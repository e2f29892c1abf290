#include "kiln/engine/elementwise_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "kiln/codegen/elementwise_emitter.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/codegen/type_resolution.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/shape.hpp"

namespace kiln {
namespace {

using codegen::Layout;
using codegen::OperandKind;

std::string allowed_widths(int max_width) {
  std::string s;
  for (int w = 1; w <= max_width; w *= 2) s += (s.empty() ? "" : ", ") + std::to_string(w);
  return s;
}

void check_range(const std::string& kernel, const char* field, int v, int lo, int hi) {
  if (v < lo || v > hi)
    throw ValueError(
        fmt::format("kernel '{}': layout {} {} is outside {}..{}", kernel, field, v, lo, hi));
}

// Calls can ask for any subset of the operands a layout stages or reads some way (the planner
// decides each from its strides); with up to this many candidates the ahead-of-time lists hold
// every subset, with more (2^n specs of each kind) none, each alone and all of them.
constexpr int kEverySubsetUpTo = 3;

// The subsets of `candidates` (bit k: parameter k) a layout prepares, 0 first; tiled: only those
// whose staged tiles fit in shared memory.
std::vector<std::uint64_t> operand_patterns(const codegen::ElementwiseSpec& probe,
                                            std::uint64_t candidates, bool tiled) {
  auto fits = [&](std::uint64_t mask) {
    if (!tiled) return true;
    auto spec = probe;
    for (int k = 0; k < spec.nparams; ++k)
      spec.params[std::size_t(k)].staged = std::uint8_t((mask >> k) & 1);
    return codegen::tiled_shared_bytes(spec) <= codegen::kMaxTiledSharedBytes;
  };
  std::vector<std::uint64_t> out;
  if (std::popcount(candidates) <= kEverySubsetUpTo) {
    // Every subset of the candidates' bits, in increasing order (0 first).
    for (std::uint64_t sub = 0;; sub = (sub - candidates) & candidates) {
      out.push_back(sub);
      if (sub == candidates) break;
    }
  } else {
    out.push_back(0);
    for (int k = 0; k < 64; ++k)
      if (candidates >> k & 1) out.push_back(std::uint64_t(1) << k);
    out.push_back(candidates);
  }
  std::erase_if(out, [&](std::uint64_t mask) { return !fits(mask); });
  return out;
}

// Whether the tiled spec `s` (staging `staged`, both sides one axis) could take runs: each
// staged parameter's dtype and units allow them (codegen::tiled_run_operand).
bool runs_allowed(const codegen::ElementwiseSpec& s, std::uint64_t staged) {
  for (int k = 0; k < s.nparams; ++k)
    if (((staged >> k) & 1) && !codegen::tiled_run_operand(s, k)) return false;
  return true;
}

}  // namespace

ElementwiseKernel::ElementwiseKernel(std::string_view in_params, std::string_view out_params,
                                     std::string operation, std::string_view name,
                                     elementwise_kernel_options options)
    : generated_kernel(codegen::make_elementwise_definition(
          in_params, out_params,
          {std::move(operation), std::move(options.preamble), std::move(options.loop_prep),
           std::move(options.after_loop)},
          name, options.options)),
      reduce_dims_(options.reduce_dims),
      no_return_(options.no_return),
      return_tuple_(options.return_tuple) {}

codegen::ElementwiseSpec ElementwiseKernel::make_spec(std::span<const dtype> arg_dtypes,
                                                      const elementwise_layout& layout) const {
  return make_spec(arg_dtypes, layout, {});
}

ElementwiseKernel::input_kinds ElementwiseKernel::kinds_of(const aot_target& t) const {
  const auto& def = *def_;
  input_kinds kinds;
  auto check = [&](int k, const char* what) {
    if (k < 0 || k >= nin())
      throw ValueError(fmt::format("kernel '{}': {} input {} is not an input (0..{})", name(), what,
                                   k, nin() - 1));
  };
  for (int s : t.scalar_inputs) {
    check(s, "scalar");
    kinds.scalars |= std::uint64_t(1) << s;
  }
  for (int u : t.uniform_inputs) {
    check(u, "uniform");
    if (def.params[std::size_t(u)].raw)
      throw ValueError(fmt::format(
          "kernel '{}': uniform input {} is raw parameter '{}' (a raw array is passed whole, "
          "whatever its shape)",
          name(), u, def.params[std::size_t(u)].name));
    if ((kinds.scalars >> u) & 1)
      throw ValueError(fmt::format(
          "kernel '{}': input {} is in both scalar_inputs and uniform_inputs (a call passes it "
          "one way)",
          name(), u));
    kinds.uniforms |= std::uint64_t(1) << u;
  }
  return kinds;
}

// The call's kinds are set before any width or mask is checked: a scalar or a one-element
// input is no array operand, so it neither narrows the vectors (a float64 scale of float32
// arrays) nor can be staged or read in groups.
codegen::ElementwiseSpec ElementwiseKernel::make_spec(std::span<const dtype> arg_dtypes,
                                                      const elementwise_layout& layout,
                                                      input_kinds kinds) const {
  const auto& def = *def_;
  const std::size_t n = def.params.size();
  if (arg_dtypes.size() != std::size_t(def.nin) && arg_dtypes.size() != n)
    throw TypeError(fmt::format("kernel '{}': make_spec takes {} or {} dtypes, got {}", def.name,
                                def.nin, n, arg_dtypes.size()));
  if (layout.layout != Layout::contiguous && layout.layout != Layout::strided &&
      layout.layout != Layout::tiled && layout.layout != Layout::gathered &&
      layout.layout != Layout::packed && layout.layout != Layout::interleaved)
    throw ValueError(fmt::format(
        "kernel '{}': layout must be contiguous, strided, tiled, gathered, packed or interleaved",
        def.name));
  const bool packed = layout.layout == Layout::packed;
  const bool tiled = layout.layout == Layout::tiled;
  const bool interleaved = layout.layout == Layout::interleaved;
  if (interleaved ? layout.interleave < 2 || layout.interleave > codegen::kMaxInterleave
                  : layout.interleave != 0)
    throw ValueError(fmt::format(
        "kernel '{}': layout interleave {} is not possible here: for interleaved kernels the "
        "short axis' extent, 2..{}; 0 for every other layout",
        def.name, layout.interleave, codegen::kMaxInterleave));
  if (interleaved && layout.ndim < 2)
    throw ValueError(fmt::format(
        "kernel '{}': layout ndim {} is not possible here: interleaved kernels take 2 or more "
        "(batch axes, then S and L)",
        def.name, layout.ndim));
  const bool strided = layout.layout != Layout::contiguous;
  if (tiled && layout.ndim < 2)
    throw ValueError(fmt::format(
        "kernel '{}': layout ndim {} is not possible here: tiled kernels take 2 or more", def.name,
        layout.ndim));
  if (layout.two_axis_sides != 0) {
    if (!tiled || layout.staged == 0 || layout.two_axis_sides < 0 || layout.two_axis_sides > 3)
      throw ValueError(fmt::format(
          "kernel '{}': layout two_axis_sides {} is not possible here: 0, or for tiled kernels "
          "with something staged 1 (cols), 2 (rows) or 3 (both)",
          def.name, layout.two_axis_sides));
    const int need = 2 + std::popcount(unsigned(layout.two_axis_sides));
    if (layout.ndim < need)
      throw ValueError(fmt::format(
          "kernel '{}': layout ndim {} is not possible here: two_axis_sides {} takes {} or more "
          "(each side over two axes takes one more)",
          def.name, layout.ndim, layout.two_axis_sides, need));
  }
  if (packed && layout.ndim < 3)
    throw ValueError(fmt::format(
        "kernel '{}': layout ndim {} is not possible here: packed kernels take 3 or more (batch "
        "axes, then the box's A, B and C)",
        def.name, layout.ndim));
  check_range(def.name, "ndim", layout.ndim, strided ? 1 : 0, kMaxNdim);
  if (!tiled && !packed && layout.layout != Layout::gathered && layout.staged != 0)
    throw ValueError(fmt::format(
        "kernel '{}': layout staged is for tiled and packed kernels and gathered ones in groups",
        def.name));
  if (layout.row_constant != 0 && (layout.layout != Layout::gathered || layout.ndim < 2))
    throw ValueError(fmt::format(
        "kernel '{}': layout row_constant is for gathered kernels of 2 dims or more", def.name));
  if ((layout.row_constant & layout.staged) != 0)
    throw ValueError(fmt::format(
        "kernel '{}': layout row_constant and staged name the same input (an input constant "
        "along the rows has no groups to load)",
        def.name));
  if (layout.as_output != 0 && layout.layout != Layout::gathered)
    throw ValueError(
        fmt::format("kernel '{}': layout as_output is for gathered kernels", def.name));
  if ((layout.as_output & (layout.staged | layout.row_constant)) != 0)
    throw ValueError(fmt::format(
        "kernel '{}': layout as_output names an input that staged or row_constant names too (an "
        "input is read one way)",
        def.name));
  check_range(def.name, "raw_ndim", layout.raw_ndim, 0, kMaxNdim);
  if (layout.index_bits != 32 && layout.index_bits != 64)
    throw ValueError(fmt::format("kernel '{}': layout index_bits {} must be 32 or 64", def.name,
                                 layout.index_bits));

  std::array<codegen::ArgInfo, codegen::kMaxParams> info{};
  for (std::size_t k = 0; k < arg_dtypes.size(); ++k)
    info[k] = {arg_dtypes[k], !((kinds.scalars >> k) & 1)};
  std::array<dtype, codegen::kMaxParams> types{};
  codegen::resolve_param_types(def, std::span(info.data(), n), std::span(types.data(), n));

  codegen::ElementwiseSpec spec;
  spec.layout = layout.layout;
  spec.ndim = std::uint8_t(strided ? layout.ndim : 1);
  spec.index_bits = std::uint8_t(layout.index_bits);
  spec.nparams = std::uint8_t(n);
  for (std::size_t k = 0; k < n; ++k) {
    // As a call binds them (set_scalar_or_raw): a scalar first, also for a raw parameter.
    const auto kind = (kinds.scalars >> k) & 1    ? OperandKind::scalar
                      : def.params[k].raw         ? OperandKind::raw_array
                      : (kinds.uniforms >> k) & 1 ? OperandKind::uniform
                                                  : OperandKind::array;
    spec.set_param(int(k), types[k], kind, kind == OperandKind::raw_array ? layout.raw_ndim : 0,
                   true);
  }
  // Tiled and packed kernels stage loop arrays (packed: inputs only).
  if ((tiled || packed) && n < 64 && (layout.staged >> n) != 0)
    throw ValueError(fmt::format("kernel '{}': layout staged names a parameter past the last ({})",
                                 def.name, n - 1));
  for (std::size_t k = 0; k < n && (tiled || packed); ++k)
    if ((layout.staged >> k) & 1) {
      if (spec.kind(int(k)) != OperandKind::array)
        throw ValueError(fmt::format(
            "kernel '{}': layout staged names {} parameter '{}' (only loop arrays are staged)",
            def.name,
            spec.kind(int(k)) == OperandKind::raw_array ? "raw"
            : spec.kind(int(k)) == OperandKind::scalar  ? "scalar"
                                                        : "one-element (uniform)",
            def.params[k].name));
      if (packed && k >= std::size_t(def.nin))
        throw ValueError(fmt::format(
            "kernel '{}': layout staged names output '{}' (a packed kernel stages inputs only)",
            def.name, def.params[k].name));
      spec.params[k].staged = 1;
    }
  if (tiled && codegen::tiled_shared_bytes(spec) > codegen::kMaxTiledSharedBytes)
    throw ValueError(
        fmt::format("kernel '{}': the staged parameters need {} bytes of shared memory, over {}",
                    def.name, codegen::tiled_shared_bytes(spec), codegen::kMaxTiledSharedBytes));
  if (packed) {
    if (layout.vector_width != 1 || layout.unit_cols != 1 || layout.unit_rows != 1)
      throw ValueError(fmt::format(
          "kernel '{}': layout vector_width, unit_cols and unit_rows are 1 for packed kernels "
          "(one element per access)",
          def.name));
  }
  const int max_width = int(16 / spec.widest_array_item());
  const int w = layout.vector_width;
  if (layout.layout == Layout::gathered && (spec.widest_array_item() > 4 || w != max_width))
    throw ValueError(fmt::format(
        "kernel '{}': layout vector_width {} is not possible here: gathered kernels take 16 "
        "bytes of the widest array dtype ({}), which is at most 4 bytes wide",
        def.name, w, max_width));
  if (tiled || packed ? w != 1 : (w < 1 || w > max_width || (w & (w - 1)) != 0))
    throw ValueError(fmt::format(
        "kernel '{}': layout vector_width {} is not possible here: {} (a vector load is at most 16 "
        "bytes)",
        def.name, w,
        tiled || packed ? std::string("tiled and packed kernels take 1")
                        : fmt::format("allowed {} for these dtypes", allowed_widths(max_width))));
  if (interleaved && layout.interleave * w > codegen::kMaxInterleavedGroup)
    throw ValueError(fmt::format(
        "kernel '{}': layout vector_width {} is not possible here: an interleaved kernel's "
        "interleave x vector_width is at most {} (here {})",
        def.name, w, codegen::kMaxInterleavedGroup, layout.interleave * w));
  spec.vector_width = std::uint8_t(w);
  spec.unroll = codegen::default_unroll(spec.layout, w);
  const bool any_staged = layout.staged != 0;
  const int max_unit = tiled ? codegen::max_tiled_unit(spec) : 1;
  auto check_unit = [&](const char* field, int u, bool allowed) {
    if (u == 1) return 0;
    if (u < 1 || u > max_unit || (u & (u - 1)) != 0 || !allowed)
      throw ValueError(fmt::format(
          "kernel '{}': layout {} {} is not possible here: 1, or for tiled kernels whose arrays "
          "are at most 4 bytes wide a power of two up to 2 (4-byte dtypes) or 8 (here up to "
          "{}){}",
          def.name, field, u, max_unit, allowed ? "" : " (rows: with a staged parameter)"));
    return std::countr_zero(unsigned(u));
  };
  if (layout.layout == Layout::gathered && layout.unit_cols != 1) {
    // Gathered: unit_cols is the group its inputs step by (a power of two the last axis holds).
    const int g = layout.unit_cols;
    if (g < 1 || g > w || (g & (g - 1)) != 0)
      throw ValueError(fmt::format(
          "kernel '{}': layout unit_cols {} is not possible here: gathered kernels take a power "
          "of two up to their vector_width ({}), the group of elements the last axis holds whole",
          def.name, g, w));
    spec.log2_unit_cols = std::uint8_t(std::countr_zero(unsigned(g)));
  } else {
    spec.log2_unit_cols = std::uint8_t(check_unit("unit_cols", layout.unit_cols, true));
  }
  // Gathered: each input named by a mask is read that way (the checks above keep the masks
  // apart); staged inputs read whole groups, which only rows of whole groups hold.
  auto read_inputs = [&](std::uint64_t mask, std::string_view field, std::uint8_t how,
                         std::string_view why) {
    for (std::size_t k = 0; k < 64 && mask != 0; ++k) {
      if (!((mask >> k) & 1)) continue;
      if (k >= std::size_t(def.nin) || spec.kind(int(k)) != OperandKind::array)
        throw ValueError(
            fmt::format("kernel '{}': layout {} names parameter {}, which is not an array input{}",
                        def.name, field, k, why));
      spec.params[k].staged = how;
    }
  };
  if (layout.layout == Layout::gathered && layout.staged != 0) {
    if (spec.log2_unit_cols == 0)
      throw ValueError(
          fmt::format("kernel '{}': layout staged is for gathered kernels with groups of 2 or more "
                      "(unit_cols)",
                      def.name));
    read_inputs(layout.staged, "staged", codegen::OperandSpec::gathered_by_group,
                " (a gathered kernel reads whole groups of inputs only)");
  }
  read_inputs(layout.row_constant, "row_constant", codegen::OperandSpec::gathered_row_constant, "");
  read_inputs(layout.as_output, "as_output", codegen::OperandSpec::gathered_as_output, "");
  spec.log2_unit_rows = std::uint8_t(check_unit("unit_rows", layout.unit_rows, any_staged));
  if (layout.long_rows) {
    if (layout.layout != Layout::gathered || layout.ndim < 2)
      throw ValueError(fmt::format(
          "kernel '{}': layout long_rows is for gathered kernels of 2 dims or more", def.name));
    spec.log2_unit_rows = 1;
  }
  spec.two_axis_sides = std::uint8_t(layout.two_axis_sides);
  if (layout.runs) {
    if (!tiled || layout.staged == 0 || layout.two_axis_sides != 0)
      throw ValueError(
          fmt::format("kernel '{}': layout runs is for tiled kernels with something staged and "
                      "two_axis_sides 0",
                      def.name));
    for (std::size_t k = 0; k < n; ++k)
      if (spec.staged(int(k))) {
        if (!codegen::tiled_run_operand(spec, int(k)))
          throw ValueError(fmt::format(
              "kernel '{}': layout runs is not possible for staged parameter '{}': runs take "
              "dtypes of at most 8 bytes with unit_rows 1",
              def.name, def.params[k].name));
        spec.params[k].staged = codegen::OperandSpec::tiled_run;
      }
  }
  if (interleaved) spec.unroll = std::uint8_t(layout.interleave);
  spec.unroll = codegen::planned_unroll(spec, def.nin);
  return spec;
}

std::vector<codegen::ElementwiseSpec> ElementwiseKernel::specs(const aot_target& t) const {
  const input_kinds kinds = kinds_of(t);
  auto spec_of = [&](const elementwise_layout& layout) {
    return make_spec(t.dtypes, layout, kinds);
  };
  if (t.only) return {spec_of(*t.only)};
  check_range(name(), "max_ndim", t.max_ndim, 1, kMaxNdim);
  std::vector<codegen::ElementwiseSpec> out;
  std::vector<int> index_bits{32};
  if (t.index64) index_bits.push_back(64);
  // Vector widths depend on which parameters are arrays: probe with width 1 first.
  const auto probe = spec_of({.raw_ndim = t.raw_ndim});
  const int max_width = int(16 / probe.widest_array_item());
  // The array inputs, and what a tile may stage: the inputs and the outputs, except the first
  // output where the loop follows its order (a kernel that reads no index: the planner orders
  // the axes by it, so it never runs across the tile's rows).
  std::uint64_t inputs = 0, stageable = 0;
  bool first_output = true;
  for (int k = 0; k < probe.nparams; ++k) {
    if (probe.kind(k) != OperandKind::array) continue;
    const std::uint64_t bit = std::uint64_t(1) << k;
    if (k < nin()) {
      inputs |= bit;
    } else if (std::exchange(first_output, false) && !def_->uses_index) {
      continue;
    }
    stageable |= bit;
  }
  const auto input_patterns = operand_patterns(probe, inputs, false);
  const auto staged_patterns = operand_patterns(probe, stageable, true);
  for (int bits : index_bits) {
    for (int w = 1; w <= max_width; w *= 2) {
      auto spec = probe;
      spec.index_bits = std::uint8_t(bits);
      spec.vector_width = std::uint8_t(w);
      spec.unroll = codegen::planned_unroll(spec, nin());
      out.push_back(spec);
    }
    for (int nd = 1; nd <= t.max_ndim; ++nd)
      for (int w = 1; w <= max_width; w *= 2)
        if (codegen::strided_width_planned(w, int(probe.widest_array_item())))
          out.push_back(spec_of({.layout = Layout::strided,
                                 .ndim = nd,
                                 .index_bits = bits,
                                 .vector_width = w,
                                 .raw_ndim = t.raw_ndim}));
    // Gathered loops (contiguous outputs) for dtypes of at most 4 bytes, 16-byte vectors;
    // from 2 dims, also in groups of every power of two up to a vector, each input pattern
    // reading whole groups and, apart from those, each pattern constant along the rows; and
    // each pattern laid out as the output (all of them would be a contiguous loop) with the
    // others read any of those ways; where every input is constant along the rows or laid out
    // as the output, groups shorter than a vector for rows of a vector or more too (the
    // planner's gathered_long_rows). Up to 3 inputs that is every way a call can read each.
    if (probe.widest_array_item() <= 4)
      for (int nd = 1; nd <= t.max_ndim; ++nd)
        for (int g = 1; g <= (nd > 1 ? max_width : 1); g *= 2)
          for (bool long_rows : {false, true})
            for (std::uint64_t flat : input_patterns)
              for (std::uint64_t vectors : input_patterns)
                for (std::uint64_t constant : input_patterns)
                  if ((flat == 0 || flat != inputs) && (vectors == 0 || g > 1) &&
                      (constant == 0 || nd > 1) && !(vectors & constant) &&
                      !(flat & (vectors | constant)) &&
                      (!long_rows ||
                       (nd > 1 && g < max_width && vectors == 0 && (flat | constant) == inputs)))
                    out.push_back(spec_of({.layout = Layout::gathered,
                                           .ndim = nd,
                                           .index_bits = bits,
                                           .vector_width = max_width,
                                           .raw_ndim = t.raw_ndim,
                                           .staged = vectors,
                                           .row_constant = constant,
                                           .as_output = flat,
                                           .unit_cols = g,
                                           .long_rows = long_rows}));
    // Units (pairs for 4-byte dtypes, up to 8 elements for 1- and 2-byte ones) along the
    // cols, and along the rows when something is staged: every pair codegen::tiled_units gives.
    const int max_unit = codegen::max_tiled_unit(probe);
    for (int nd = 2; nd <= t.max_ndim; ++nd)
      for (std::uint64_t staged : staged_patterns)
        for (int uc = 1; uc <= max_unit; uc *= 2)
          for (int ur = 1; ur <= (staged ? max_unit : 1); ur *= 2) {
            const auto units = codegen::tiled_units(uc, ur);
            if (units.cols != uc || units.rows != ur) continue;
            elementwise_layout tiled{.layout = Layout::tiled,
                                     .ndim = nd,
                                     .index_bits = bits,
                                     .raw_ndim = t.raw_ndim,
                                     .staged = staged,
                                     .unit_cols = uc,
                                     .unit_rows = ur};
            const auto one_axis_sides = spec_of(tiled);
            out.push_back(one_axis_sides);
            // With something staged, each side may also span two axes (two_axis_sides) ...
            for (int sides = 1; sides <= (staged ? 3 : 0); ++sides)
              if (nd >= 2 + std::popcount(unsigned(sides))) {
                tiled.two_axis_sides = sides;
                out.push_back(spec_of(tiled));
              }
            // ... or move as runs, where the staged dtypes allow them (one axis a side).
            if (staged != 0 && runs_allowed(one_axis_sides, staged)) {
              tiled.two_axis_sides = 0;
              tiled.runs = true;
              out.push_back(spec_of(tiled));
            }
          }
    // Interleaved loops: every short extent with every width it allows (each operand's way
    // is read from its strides, so no pattern multiplies them).
    for (int nd = 2; nd <= t.max_ndim; ++nd)
      for (int S = 2; S <= codegen::kMaxInterleave; ++S)
        for (int w = 1; w <= max_width && S * w <= codegen::kMaxInterleavedGroup; w *= 2)
          out.push_back(spec_of({.layout = Layout::interleaved,
                                 .ndim = nd,
                                 .index_bits = bits,
                                 .vector_width = w,
                                 .raw_ndim = t.raw_ndim,
                                 .interleave = S}));
    // Packed boxes (inputs permuted two different ways): each input pattern of two or more
    // staged.
    for (std::uint64_t staged : input_patterns)
      if (std::popcount(staged) >= 2)
        for (int nd = 3; nd <= t.max_ndim; ++nd)
          out.push_back(spec_of({.layout = Layout::packed,
                                 .ndim = nd,
                                 .index_bits = bits,
                                 .raw_ndim = t.raw_ndim,
                                 .staged = staged}));
  }
  return out;
}

std::string ElementwiseKernel::emit(const codegen::ElementwiseDefinition& def,
                                    const codegen::ElementwiseSpec& spec) {
  return codegen::emit_elementwise(def, spec);
}

}  // namespace kiln
