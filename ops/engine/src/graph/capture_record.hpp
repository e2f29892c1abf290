#pragma once
// Internal: what the engine's launch paths tell a capture. After each kiln kernel launch, a
// call path that sees this thread capturing (one thread-local load otherwise) calls
// record_launch; the recorder reads the kernel node CUDA just added to the capture (its
// function, geometry and parameter bytes) and keeps it with the role of each parameter, so
// graph::update can change arrays and scalars later. Recording never fails a launch: a node
// it cannot read makes the graph's updates unavailable (graph::update says why).
//
//   loaded.function.launch(grid, block, kargs.argv(), 0, c.stream);
//   if (kiln::detail::thread_capture()) kiln::detail::record_launch(c, kargs.argv(),
//   kargs.count());
#include <cuda_runtime_api.h>

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/kernel_nodes.hpp"
#include "kiln/engine/raw_args.hpp"
#include "kiln/runtime/capture.hpp"

namespace kiln::detail {

struct KernelCall;

/// The kernels one capture recorded (ThreadCapture::recorder points at it).
struct CaptureRecorder {
  KernelNodes nodes;
  std::string unavailable;  // why updates are not possible, "" while they are
  std::unordered_map<void*, std::vector<ParamSlot>> layouts;  // per CUfunction
};

/// After the launch of call `c` with arguments `argv` (an ElementwiseKernel or ReductionKernel
/// call, which is also how expressions and fused reductions run): its parameters are c's
/// arrays and scalars, in order; what follows them (sizes, shapes, workspaces) stays as
/// captured.
void record_launch(const KernelCall& c, void* const* argv, std::size_t argc);
/// After a RawKernel launch of `name` on `stream`.
void record_raw_launch(std::string_view name, cudaStream_t stream, std::span<const raw_arg> args,
                       void* const* argv);  // args.size() entries
/// Records the node just captured on `stream`, launched with the `argc` entries of `argv`,
/// with the roles of its first parameters; `waits`: a kernel kiln generated (it begins with
/// kiln_grid_dependency_wait, so it may follow another kernel on a programmatic edge).
void record_node(cudaStream_t stream, std::string_view name, std::span<const ArgInfo> roles,
                 void* const* argv, std::size_t argc, bool waits);

}  // namespace kiln::detail
