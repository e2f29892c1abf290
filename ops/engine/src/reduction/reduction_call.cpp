// ReductionKernel::call: the shared call steps (call/kernel_call.hpp), the reduction plan
// (reduction_plan.hpp), the loaded-kernel cache (call/kernel_cache.hpp), one launch (after
// zeroing the split counters when blocks share rows).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "call/kernel_args.hpp"
#include "kiln/cache/loaded_kernels.hpp"
#include "call/kernel_call.hpp"
#include "graph/capture_record.hpp"
#include "kiln/engine/reduction_kernel.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"
#include "reduction_plan.hpp"

namespace kiln {

kernel_result ReductionKernel::call(std::span<const kernel_arg> all_args) const {
  const auto& def = *def_;
  detail::KernelCall c(def);
  auto args = detail::take_options(c, all_args, /*reduction=*/true);
  static const reduce_options kNoOptions{};
  const reduce_options& ro = c.reduce ? *c.reduce : kNoOptions;
  std::vector<kernel_arg> merged;  // only when outputs come as reduce_options::out
  if (!ro.out.empty()) {
    if (args.size() != std::size_t(def.nin))
      throw TypeError(fmt::format("kernel '{}': outputs are given both as arguments and as "
                                  "reduce_options::out; pass them one way",
                                  def.name));
    if (ro.out.size() != std::size_t(def.nout))
      throw TypeError(fmt::format("kernel '{}' has {} output{}; reduce_options::out holds {}", def.name,
                                  def.nout, def.nout == 1 ? "" : "s", ro.out.size()));
    merged.assign(args.begin(), args.end());
    for (const auto& o : ro.out) merged.emplace_back(o);
    args = merged;
  }
  const bool given = args.size() == std::size_t(c.nparams);
  if (c.options.block_size % 32 != 0)
    throw ValueError(fmt::format("kernel '{}': block_size {} is not a multiple of 32 (reductions "
                                 "combine whole warps)",
                                 def.name, c.options.block_size));
  detail::bind_arguments(c, args);
  detail::decide_loop_shape(c, /*with_outputs=*/false);
  const std::uint64_t mask = ro.axis.mask(c.shape.size());
  const Shape out_shape = reduced_shape(c.shape, mask, ro.keepdims);
  detail::check_outputs(c, given, out_shape, "the reduction gives");
  const std::int64_t m = shape_size(out_shape);
  if (m > 0 && c.size == 0 && def.identity.empty())
    throw ValueError(fmt::format("zero-size array to reduction operation {} which has no identity",
                                 def.name));
  detail::choose_device(c);

  kernel_result result;
  result.set_tuple(return_tuple_);
  detail::prepare_outputs(c, result, given, out_shape);
  if (m == 0) return result;

  std::vector<ndarray> copies;
  detail::copy_overlapping_inputs(c, copies);
  detail::ReductionPlan plan;
  detail::plan_reduction(c, mask, ro.keepdims, device_properties(c.device).multiprocessor_count, plan);
  const auto& loaded = cache::loaded_kernel(cache::kernel_key(def.hash, plan.spec, c.device), c.device,
                                             [&](int arch) { return compile_request(plan.spec, arch); });
  const auto& g = plan.geometry;
  if (g.block > loaded.max_threads_per_block)
    throw ValueError(fmt::format("kernel '{}': block_size {} is more than this kernel allows on "
                                 "device {} ({})",
                                 def.name, g.block, c.device, loaded.max_threads_per_block));
  std::shared_ptr<Buffer> workspace;
  void *ws = nullptr, *sem = nullptr;
  if (plan.spec.split) {
    // Partials, then the counters the last block of each row or column tile resets.
    const std::size_t partial_bytes = (std::size_t(g.partials) * loaded.partial_bytes + 15) / 16 * 16;
    const std::size_t sem_bytes = std::size_t(g.counters) * sizeof(unsigned);
    workspace = std::make_shared<Buffer>(partial_bytes + sem_bytes, c.device, detail::allocation_stream(c));
    ws = workspace->data();
    sem = static_cast<char*>(ws) + partial_bytes;
    KILN_CUDA(cudaMemsetAsync(sem, 0, sem_bytes, c.stream));
  }
  detail::KernelArgs kargs(plan.spec.index_bits);
  detail::pack_reduction(c, plan, ws, sem, kargs);
  loaded.function.launch(dim3(g.grid_x, g.grid_y), dim3(unsigned(g.block)), kargs.argv(), 0, c.stream);
  if (detail::thread_capture()) [[unlikely]]
    detail::record_launch(c, kargs.argv(), kargs.count());  // graph/capture_record.hpp
  return result;
}

}  // namespace kiln
