// Recording the kiln kernels of a capture: the node CUDA just added to the capturing stream,
// its function, geometry and parameter bytes, and the role of each parameter.
#include "graph/capture_record.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "call/kernel_call.hpp"
#include "kiln/runtime/detail/driver_api.hpp"

namespace kiln::detail {
namespace {

// The driver's parameter layout of `f`, once per function and capture.
const std::vector<ParamSlot>* layout_of(CaptureRecorder& rec, CUfunction f, std::size_t argc) {
  auto it = rec.layouts.find(f);
  if (it == rec.layouts.end()) {
    auto layout = Function(f).param_layout(argc);
    if (!layout) return nullptr;
    it = rec.layouts.emplace(f, std::move(*layout)).first;
  }
  return &it->second;
}

}  // namespace

void record_node(cudaStream_t stream, std::string_view name, std::span<const ArgInfo> roles,
                 void* const* argv, std::size_t argc, bool waits) {
  ThreadCapture* t = thread_capture();
  auto* rec = t ? static_cast<CaptureRecorder*>(t->recorder) : nullptr;
  if (!rec || !rec->unavailable.empty()) return;
  auto give_up = [&](std::string why) {
    rec->unavailable = fmt::format("kernel '{}' could not be recorded for updates: {}", name, why);
  };
  try {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    const cudaGraphNode_t* deps = nullptr;
    const cudaGraphEdgeData* edges = nullptr;
    std::size_t n = 0;
    if (const cudaError_t e =
            cudaStreamGetCaptureInfo(stream, &status, &id, nullptr, &deps, &edges, &n);
        e != cudaSuccess) {
      cudaGetLastError();
      return give_up(fmt::format("cudaStreamGetCaptureInfo failed: {}", cudaGetErrorName(e)));
    }
    // A launch on another stream, not captured (or captured by someone else): not ours.
    if (status != cudaStreamCaptureStatusActive || id != t->id) return;
    if (n != 1) return give_up(fmt::format("the stream depends on {} nodes after it", n));
    cudaGraphNodeType type{};
    if (cudaGraphNodeGetType(deps[0], &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) {
      cudaGetLastError();
      return give_up("the node after it is not a kernel node");
    }
    CUDA_KERNEL_NODE_PARAMS p{};
    if (const CUresult r = driver().cuGraphKernelNodeGetParams(deps[0], &p); r != CUDA_SUCCESS)
      return give_up(fmt::format("cuGraphKernelNodeGetParams failed ({})", int(r)));
    if (!p.func || !p.kernelParams) return give_up("its node holds no function or parameters");
    const std::vector<ParamSlot>* layout = layout_of(*rec, p.func, argc);
    if (!layout) return give_up("the driver is older than 12.4 (no cuFuncGetParamInfo)");
    if (layout->size() != argc || roles.size() > argc)
      return give_up(fmt::format("it has {} parameters but was launched with {} arguments",
                                 layout->size(), argc));
    KernelNode node;
    node.node = deps[0];
    node.function = p.func;
    node.name = std::string(name);
    node.waits = waits;
    node.grid[0] = p.gridDimX, node.grid[1] = p.gridDimY, node.grid[2] = p.gridDimZ;
    node.block[0] = p.blockDimX, node.block[1] = p.blockDimY, node.block[2] = p.blockDimZ;
    node.shared_bytes = p.sharedMemBytes;
    node.params = *layout;
    std::size_t total = 0;
    for (const auto& s : node.params) total = std::max<std::size_t>(total, s.offset + s.size);
    node.bytes.assign(total, std::byte{0});
    // The bytes the launch passed (what the node holds: cuLaunchKernel copied them).
    for (std::size_t k = 0; k < node.params.size(); ++k)
      std::memcpy(node.bytes.data() + node.params[k].offset, argv[k], node.params[k].size);
    node.args.assign(node.params.size(), ArgInfo{});
    std::copy(roles.begin(), roles.end(), node.args.begin());
    rec->nodes.add(std::move(node));
  } catch (const std::exception& e) {
    give_up(e.what());
  }
}

void record_launch(const KernelCall& c, void* const* argv, std::size_t argc) {
  std::array<ArgInfo, kMaxParams> roles{};
  for (int k = 0; k < c.nparams; ++k)
    roles[std::size_t(k)] =
        c.arrays[k] ? ArgInfo{ArgRole::array, c.types[k]} : ArgInfo{ArgRole::scalar, c.types[k]};
  record_node(c.stream, c.def.name, std::span(roles.data(), std::size_t(c.nparams)), argv, argc,
              /*waits=*/true);
}

void record_raw_launch(std::string_view name, cudaStream_t stream, std::span<const raw_arg> args,
                       void* const* argv) {
  std::vector<ArgInfo> roles(args.size());
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k].is_array())
      roles[k] = {ArgRole::array, float64};
    else if (args[k].has_dtype())
      roles[k] = {ArgRole::scalar, args[k].dtype()};
  }
  record_node(stream, name, roles, argv, args.size(), /*waits=*/false);
}

}  // namespace kiln::detail
