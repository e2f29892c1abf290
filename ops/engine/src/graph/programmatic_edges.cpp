#include "graph/programmatic_edges.hpp"

#include <cstdlib>
#include <cstring>

#include "kiln/runtime/detail/cuda_check.hpp"

namespace kiln::detail {

bool programmatic_edges_enabled() {
  const char* v = std::getenv("KILN_GRAPH_PROGRAMMATIC_EDGES");
  return !(v && std::strcmp(v, "0") == 0);
}

std::size_t add_programmatic_edges(cudaGraph_t graph, const KernelNodes& nodes) {
  std::size_t changed = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const KernelNode& k = nodes[i];
    if (!k.waits) continue;
    auto to = static_cast<cudaGraphNode_t>(k.node);
    cudaGraphNode_t from[2] = {};
    cudaGraphEdgeData edges[2] = {};
    std::size_t count = 2;
    if (cudaGraphNodeGetDependencies(to, from, edges, &count) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    cudaGraphNodeType type{};
    if (count != 1 || edges[0].type != cudaGraphDependencyTypeDefault || edges[0].from_port != 0 ||
        cudaGraphNodeGetType(from[0], &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) {
      cudaGetLastError();
      continue;
    }
    if (cudaGraphRemoveDependencies(graph, &from[0], &to, nullptr, 1) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    cudaGraphEdgeData programmatic{};
    programmatic.from_port = cudaGraphKernelNodePortLaunchCompletion;
    programmatic.type = cudaGraphDependencyTypeProgrammatic;
    if (cudaGraphAddDependencies(graph, &from[0], &to, &programmatic, 1) == cudaSuccess) {
      ++changed;
    } else {
      cudaGetLastError();  // not supported here: the plain edge goes back
      KILN_CUDA(cudaGraphAddDependencies(graph, &from[0], &to, nullptr, 1));
    }
  }
  return changed;
}

}  // namespace kiln::detail
