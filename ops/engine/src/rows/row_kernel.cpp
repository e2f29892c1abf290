// RowKernel: the shared call (call/kernel_call.hpp) with the row kind's own parts: outputs of
// the loop's shape, the row plan (rows/row_plan.hpp), its geometry and packing; and the
// ahead-of-time specs.
#include "kiln/engine/row_kernel.hpp"

#include <fmt/format.h>

#include "call/kernel_call.hpp"
#include "kiln/codegen/row_emitter.hpp"
#include "kiln/codegen/type_resolution.hpp"
#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "rows/row_plan.hpp"

namespace kiln::detail {

struct RowKind {
  using Plan = RowPlan;
  static constexpr bool kOutputsShapeLoop = true;
  static constexpr const char* kShapeFrom = "the arguments broadcast to";

  const RowKernel& kernel;

  const codegen::KernelDefinition& definition() const { return kernel.definition(); }
  std::span<const kernel_arg> arguments(KernelCall&, std::span<const kernel_arg> args,
                                        std::vector<kernel_arg>&) const {
    return args;
  }
  Shape output_shape(const KernelCall& c) const { return c.shape; }
  void check(const KernelCall& c, const Shape&) const {
    const std::uint64_t mask = kernel.mask();
    if (c.shape.size() < 64 && (mask >> c.shape.size()) != 0)
      throw ValueError(
          fmt::format("row kernel '{}': its rows are axes the {}-d arguments do not have",
                      c.def.name, c.shape.size()));
  }
  bool has_work(const KernelCall& c, const Shape&) const { return c.size > 0; }

  void plan(const KernelCall& c, Plan& p) const {
    const auto n = std::size_t(c.nparams);
    const auto types = std::span<const dtype>(c.types.data(), n);
    const DeviceProperties& props = device_properties(c.device);
    if (!plan_rows(c.shape, kernel.mask(), std::span<const ndarray* const>(c.arrays.data(), n),
                   types, c.def.nin,
                   row_registers(kernel.definition(),
                                 std::span<const ndarray* const>(c.arrays.data(), n), types),
                   RowDevice::of(props), p))
      throw ValueError(
          fmt::format("row kernel '{}': the arrays' layout does not fit a row kernel (rows of {} "
                      "must be one dim with unit or no steps, short enough for a block's "
                      "registers and shared memory, a cluster's (sm_90) or, streamed, for L2, with "
                      "rows for two blocks per SM); evaluate "
                      "the expression instead, which plans around it",
                      c.def.name, c.shape.str()));
  }

  cache::CompileRequest compile_request(const codegen::RowSpec& spec, int arch) const {
    return kernel.compile_request(spec, arch);
  }

  Launch geometry(const KernelCall&, const Plan& p, const cache::LoadedKernel&) const {
    return {dim3(p.grid), dim3(unsigned(p.lanes), unsigned(p.rows_per_block)), p.shared_bytes};
  }

  Workspace workspace(const KernelCall&, const Plan&, const Launch&,
                      const cache::LoadedKernel&) const {
    return {};
  }

  void pack(const KernelCall& c, const Plan& p, const Workspace&, KernelArgs& args) const {
    const auto n = std::size_t(c.nparams);
    pack_rows(std::span<const ndarray* const>(c.arrays.data(), n),
              std::span<const std::array<std::byte, 16>>(c.values.data(), n),
              std::span<const dtype>(c.types.data(), n), p, args);
  }

  // An input overlapping an output (other than element for element) is read from a copy.
  static void copy_array(const ndarray& from, ndarray& to, const launch_options& o) {
    builtin::copy_kernel()(from, to, o);
  }
  void finish(kernel_result& r) const { r.set_tuple(kernel.nout() > 1); }
};

}  // namespace kiln::detail

namespace kiln {

RowKernel::RowKernel(codegen::RowDefinition def, std::uint64_t mask)
    : generated_kernel(std::move(def)), mask_(mask) {}

kernel_result RowKernel::call(std::span<const kernel_arg> args) const {
  return detail::run_call(detail::RowKind{*this}, args);
}

std::vector<codegen::RowSpec> RowKernel::specs(const aot_target& t) const {
  const auto& def = *def_;
  const std::size_t n = def.params.size();
  if (t.dtypes.size() != std::size_t(def.nin) && t.dtypes.size() != n)
    throw TypeError(fmt::format("row kernel '{}': specs takes {} or {} dtypes, got {}", def.name,
                                def.nin, n, t.dtypes.size()));
  if (t.max_ndim < 1 || t.max_ndim > kMaxNdim)
    throw ValueError(fmt::format("row kernel '{}': max_ndim {} is outside 1..{}", def.name,
                                 t.max_ndim, kMaxNdim));
  std::array<codegen::ArgInfo, codegen::kMaxParams> info{};
  for (std::size_t k = 0; k < t.dtypes.size(); ++k) info[k] = {t.dtypes[k], true};
  for (int s : t.scalar_inputs) {
    if (s < 0 || s >= def.nin)
      throw ValueError(fmt::format("row kernel '{}': scalar input {} is not an input (0..{})",
                                   def.name, s, def.nin - 1));
    info[std::size_t(s)].is_array = false;
  }
  std::array<dtype, codegen::kMaxParams> types{};
  codegen::resolve_param_types(def, std::span(info.data(), n), std::span(types.data(), n));
  codegen::RowSpec base;
  base.nparams = std::uint8_t(n);
  std::size_t widest = 1;
  bool complex = false;
  for (std::size_t k = 0; k < n; ++k) {
    const bool array = info[k].is_array || int(k) >= def.nin;
    base.set_param(int(k), types[k],
                   array ? codegen::OperandKind::array : codegen::OperandKind::scalar);
    if (array) widest = std::max(widest, types[k].itemsize());
    complex = complex || (array && types[k].is_complex());
  }
  // Shifted rows (any length or start) read windows of the widest vectors (row_plan.cpp).
  const bool shiftable = widest <= 4 && !complex;
  std::vector<codegen::RowSpec> out;
  for (int bits : t.index64 ? std::vector<int>{32, 64} : std::vector<int>{32})
    for (int od = 1; od <= t.max_ndim; ++od)
      for (int vw = 1; vw <= int(16 / widest); vw *= 2)
        for (int items : {1, 2, 4, 8, 0})
          for (int shape : {1, 0, 2, 3})  // a group of lanes, a block, a wide block, a wide
                                          // block holding the rest in shared memory
            for (int shifted : {0, 1})
              for (int cluster = 1; cluster <= detail::kMaxRowCluster; cluster *= 2) {
                if (items == 0 && shape != 2) continue;  // streamed rows: wide blocks only
                if (shape == 3 && items > detail::kHeldRowItems) continue;
                if (shifted && (!shiftable || vw != int(16 / widest))) continue;
                // Rows split over a cluster: wide blocks holding the row, up to kHeldRowItems
                // vectors a thread in registers (sm_90 on).
                if (cluster > 1 && (shape < 2 || items == 0 || items > detail::kHeldRowItems))
                  continue;
                codegen::RowSpec s = base;
                s.cluster = std::uint8_t(cluster);
                s.shifted = std::uint8_t(shifted);
                s.index_bits = std::uint8_t(bits);
                s.out_ndim = std::uint8_t(od);
                s.vector_width = std::uint8_t(vw);
                s.items = std::uint8_t(items);
                s.group = shape == 1 ? codegen::kRowLaneGroup : codegen::kRowBlock;
                s.wide = std::uint8_t(shape >= 2);
                s.shared = std::uint8_t(shape == 3);
                out.push_back(s);
              }
  // Columns (lane groups along strided rows): one row a group, an element per access, up to
  // kColumnItems elements a lane in powers of two; or vectors of adjacent rows a group (up to
  // 16 bytes; dtypes of at most 4 bytes, not complex), up to kAcrossItems a lane.
  std::vector<int> column_widths{1};
  if (!complex && widest <= 4)
    for (int vw = int(16 / widest); vw >= 2; vw /= 2) column_widths.push_back(vw);
  for (int bits : t.index64 ? std::vector<int>{32, 64} : std::vector<int>{32})
    for (int od = 1; od <= t.max_ndim; ++od)
      for (int vw : column_widths)
        for (int items = 1; items <= detail::kColumnItems; items *= 2) {
          if (vw > 1 && items > detail::kAcrossItems) continue;
          codegen::RowSpec s = base;
          s.index_bits = std::uint8_t(bits);
          s.out_ndim = std::uint8_t(od);
          s.vector_width = std::uint8_t(vw);
          s.items = std::uint8_t(items);
          s.group = codegen::kRowColumns;
          out.push_back(s);
        }
  return out;
}

std::string RowKernel::emit(const codegen::RowDefinition& def, const codegen::RowSpec& spec) {
  return codegen::emit_rows(def, spec);
}

}  // namespace kiln
