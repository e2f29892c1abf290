// ReductionKernel::call: the shared call (call/kernel_call.hpp) with the reduction kind's own
// parts: its per-call reduce_options, the reduced shape and identity rule, its plan and
// arguments (reduction_plan.hpp), its geometry and the split workspace (partials, and the
// counters the last block of each row or column tile resets: split_counters.hpp).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "call/kernel_call.hpp"
#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/engine/reduction_kernel.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "reduction/reduction_plan.hpp"
#include "reduction/split_counters.hpp"

namespace kiln::detail {

struct ReductionKind {
  using Plan = ReductionPlan;
  static constexpr bool kOutputsShapeLoop = false;  // outputs have the reduced shape
  static constexpr const char* kShapeFrom = "the reduction gives";

  const ReductionKernel& kernel;
  bool return_tuple;
  const reduce_options* ro = nullptr;  // the call's, if passed
  std::uint64_t mask = 0;              // reduced axes of the loop shape

  const codegen::KernelDefinition& definition() const { return kernel.definition(); }

  std::span<const kernel_arg> arguments(KernelCall& c, std::span<const kernel_arg> args,
                                        std::vector<kernel_arg>& merged) {
    const auto& def = c.def;
    if (!args.empty() && args.back().is_reduce_options()) {
      ro = &args.back().reduce();
      args = args.first(args.size() - 1);
    }
    for (const auto& a : args)
      if (a.is_reduce_options())
        throw TypeError(
            fmt::format("kernel '{}': reduce_options must follow the arguments (only a "
                        "launch_options may come after it)",
                        def.name));
    if (c.options.block_size % 32 != 0)
      throw ValueError(
          fmt::format("kernel '{}': block_size {} is not a multiple of 32 (reductions "
                      "combine whole warps)",
                      def.name, c.options.block_size));
    if (!ro || ro->out.empty()) return args;
    if (args.size() != std::size_t(def.nin))
      throw TypeError(
          fmt::format("kernel '{}': outputs are given both as arguments and as "
                      "reduce_options::out; pass them one way",
                      def.name));
    if (ro->out.size() != std::size_t(def.nout))
      throw TypeError(fmt::format("kernel '{}' has {} output{}; reduce_options::out holds {}",
                                  def.name, def.nout, def.nout == 1 ? "" : "s", ro->out.size()));
    merged.assign(args.begin(), args.end());
    for (const auto& o : ro->out) merged.emplace_back(o);
    return merged;
  }

  bool keepdims() const { return ro && ro->keepdims; }

  Shape output_shape(const KernelCall& c) {
    static const axes kEvery{};
    mask = (ro ? ro->axis : kEvery).mask(c.shape.size());
    return reduced_shape(c.shape, mask, keepdims());
  }

  void check(const KernelCall& c, const Shape& out) const {
    if (shape_size(out) > 0 && c.size == 0 && kernel.definition().identity.empty())
      throw ValueError(fmt::format(
          "zero-size array to reduction operation {} which has no identity", c.def.name));
  }

  bool has_work(const KernelCall&, const Shape& out) const { return shape_size(out) > 0; }

  void plan(const KernelCall& c, Plan& p) const {
    plan_reduction(c, mask, keepdims(), device_properties(c.device).multiprocessor_count, p);
  }

  cache::CompileRequest compile_request(const codegen::ReductionSpec& spec, int arch) const {
    return kernel.compile_request(spec, arch);
  }

  // The plan's geometry with a split's parts sized by the compiled kernel's resident blocks
  // (integer arithmetic: geometry() and workspace() both take it from here).
  codegen::ReductionGeometry balanced(const KernelCall& c, const Plan& p,
                                      const cache::LoadedKernel& k) const {
    codegen::ReductionGeometry g = p.geometry;
    if (p.spec.split && g.block >= 32 && g.block <= 1024)
      codegen::balance_parts(g, p.spec, p.m, k.blocks_per_sm[std::size_t(g.block / 32 - 1)],
                             device_properties(c.device).multiprocessor_count, k.partial_bytes);
    return g;
  }

  Launch geometry(const KernelCall& c, const Plan& p, const cache::LoadedKernel& k) const {
    const codegen::ReductionGeometry g = balanced(c, p, k);
    return {dim3(g.grid_x, g.grid_y), dim3(unsigned(g.block_x), unsigned(g.block_y))};
  }

  Workspace workspace(const KernelCall& c, const Plan& p, const Launch&,
                      const cache::LoadedKernel& k) const {
    if (!p.spec.split) return {};
    // Partials (their size is the loaded kernel's: the reduce type may be a user struct),
    // then the counters the last block of each row or column tile resets: the stream's own
    // (split_counters.hpp), or zeroed ones after the partials while it captures.
    const codegen::ReductionGeometry g = balanced(c, p, k);
    const std::size_t partial_bytes = (std::size_t(g.partials) * k.partial_bytes + 15) / 16 * 16;
    const std::size_t counter_bytes = std::size_t(g.counters) * sizeof(unsigned);
    Workspace ws;
    ws.counters = stream_split_counters(c.device, c.stream, g.counters);
    ws.buffer = std::make_shared<Buffer>(partial_bytes + (ws.counters ? 0 : counter_bytes),
                                         c.device, allocation_stream(c));
    ws.partials = ws.buffer->data();
    if (!ws.counters) {
      ws.counters = static_cast<char*>(ws.partials) + partial_bytes;
      KILN_CUDA(cudaMemsetAsync(ws.counters, 0, counter_bytes, c.stream));
    }
    return ws;
  }

  void pack(const KernelCall& c, const Plan& p, const Workspace& ws, KernelArgs& args) const {
    pack_reduction(c, p, ws.partials, ws.counters, args);
  }

  static void copy_array(const ndarray& from, ndarray& to, const launch_options& o) {
    builtin::copy_kernel()(from, to, o);
  }
  void finish(kernel_result& r) const { r.set_tuple(return_tuple); }
};

}  // namespace kiln::detail

namespace kiln {

kernel_result ReductionKernel::call(std::span<const kernel_arg> args) const {
  return detail::run_call(detail::ReductionKind{*this, return_tuple_}, args);
}

}  // namespace kiln
