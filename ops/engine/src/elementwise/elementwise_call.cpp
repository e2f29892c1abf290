// ElementwiseKernel::call: the shared call (call/kernel_call.hpp) with the elementwise kind's
// own parts: its layout plan and arguments (elementwise_plan.hpp) and its geometry.
#include <fmt/format.h>

#include "call/kernel_call.hpp"
#include "elementwise/elementwise_plan.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::detail {

using codegen::Layout;

struct ElementwiseKind {
  using Plan = ElementwisePlan;
  static constexpr bool kOutputsShapeLoop = true;
  static constexpr const char* kShapeFrom = "the arguments broadcast to";

  const ElementwiseKernel& kernel;
  bool reduce_dims, no_return, return_tuple;

  const codegen::KernelDefinition& definition() const { return kernel.definition(); }
  std::span<const kernel_arg> arguments(KernelCall& c, std::span<const kernel_arg> args,
                                        std::vector<kernel_arg>&) const {
    for (const auto& a : args)
      if (a.is_reduce_options())
        throw TypeError(
            fmt::format("kernel '{}': reduce_options are for reduction kernels", c.def.name));
    return args;
  }
  Shape output_shape(const KernelCall& c) const { return c.shape; }
  void check(const KernelCall&, const Shape&) const {}
  bool has_work(const KernelCall& c, const Shape&) const { return c.size > 0; }
  void plan(const KernelCall& c, Plan& p) const {
    plan_elementwise(c, kernel.definition(), reduce_dims, p);
  }
  cache::CompileRequest compile_request(const codegen::ElementwiseSpec& spec, int arch) const {
    return kernel.compile_request(spec, arch);
  }
  Launch geometry(const KernelCall& c, const Plan& p, const cache::LoadedKernel& k) const {
    if (p.spec.layout == Layout::packed) {
      const auto g = codegen::tiled_geometry(p.tiles);
      return {dim3(g.grid), dim3(unsigned(g.block_x)),
              unsigned(codegen::packed_shared_bytes(p.spec, p.box))};
    }
    const auto g = p.spec.layout == Layout::tiled
                       ? codegen::tiled_geometry(p.tiles)
                       : codegen::elementwise_geometry(p.spec, c.size, c.options.block_size,
                                                       k.max_threads_per_block);
    return {dim3(g.grid, g.grid_y), dim3(unsigned(g.block_x), unsigned(g.block_y))};
  }
  Workspace workspace(const KernelCall&, const Plan&, const Launch&,
                      const cache::LoadedKernel&) const {
    return {};
  }
  void pack(const KernelCall& c, const Plan& p, const Workspace&, KernelArgs& args) const {
    pack_elementwise(c, p, args);
  }
  static void copy_array(const ndarray& from, ndarray& to, const launch_options& o) {
    builtin::copy_kernel()(from, to, o);
  }
  void finish(kernel_result& r) const {
    r.set_tuple(return_tuple);
    if (no_return) r.clear();
  }
};

}  // namespace kiln::detail

namespace kiln {

kernel_result ElementwiseKernel::call(std::span<const kernel_arg> args) const {
  return detail::run_call(detail::ElementwiseKind{*this, reduce_dims_, no_return_, return_tuple_},
                          args);
}

}  // namespace kiln
