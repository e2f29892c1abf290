// ElementwiseKernel::call: the shared call steps (call/kernel_call.hpp), the elementwise
// layout plan (elementwise_plan.hpp), the loaded-kernel cache (call/kernel_cache.hpp), one
// launch.
#include <fmt/format.h>

#include "call/kernel_args.hpp"
#include "kiln/cache/loaded_kernels.hpp"
#include "call/kernel_call.hpp"
#include "elementwise_plan.hpp"
#include "graph/capture_record.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {

kernel_result ElementwiseKernel::call(std::span<const kernel_arg> all_args) const {
  detail::KernelCall c(*def_);
  const auto args = detail::take_options(c, all_args);
  const bool given = args.size() == std::size_t(c.nparams);
  detail::bind_arguments(c, args);
  detail::decide_loop_shape(c);
  detail::check_outputs(c, given, c.shape);
  detail::choose_device(c);

  kernel_result result;
  result.set_tuple(return_tuple_);
  detail::prepare_outputs(c, result, given, c.shape);

  if (c.size > 0) {
    std::vector<ndarray> copies;
    detail::copy_overlapping_inputs(c, copies);
    detail::ElementwisePlan plan;
    detail::plan_elementwise(c, reduce_dims_, plan);
    const auto& loaded = cache::loaded_kernel(
        cache::kernel_key(def_->hash, plan.spec, c.device), c.device,
        [&](int arch) { return compile_request(plan.spec, arch); });
    const auto g = plan.spec.layout == codegen::Layout::tiled
                       ? codegen::tiled_geometry(plan.shape[0], plan.shape[1])
                       : codegen::elementwise_geometry(plan.spec, c.size, c.options.block_size,
                                                      loaded.max_threads_per_block);
    if (g.block > loaded.max_threads_per_block)
      throw ValueError(fmt::format("kernel '{}': block_size {} is more than this kernel allows on "
                                   "device {} ({})",
                                   def_->name, g.block, c.device, loaded.max_threads_per_block));
    detail::KernelArgs kargs(plan.spec.index_bits);
    detail::pack_elementwise(c, plan, kargs);
    loaded.function.launch(dim3(g.grid, g.grid_y), dim3(unsigned(g.block_x), unsigned(g.block_y)),
                           kargs.argv(), 0, c.stream);
    if (detail::thread_capture()) [[unlikely]]
      detail::record_launch(c, kargs.argv(), kargs.count());  // graph/capture_record.hpp
  }
  if (no_return_) result.clear();
  return result;
}

}  // namespace kiln
