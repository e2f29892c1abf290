#pragma once
// Internal: programmatic edges between captured kernels. Stream capture makes every kernel of a
// graph wait for the full completion of the one before it, then launch: for tiny kernels that
// launch is most of their time. A kernel kiln generated begins with kiln_grid_dependency_wait()
// (codegen/device/kiln_core.cuh, griddepcontrol.wait), so when it follows a single kernel node
// its edge can be programmatic from that node's launch-completion port: it launches as soon as
// every block of the kernel before it has started, and waits on the device, at its first
// statement, until that kernel has finished and its writes are visible. Its results are those
// of the plain edge; only the launch overlaps. Raw kernels (user code, no wait), memsets,
// copies and library nodes keep plain edges. KILN_GRAPH_PROGRAMMATIC_EDGES=0 turns it off.
//
//   std::size_t n = add_programmatic_edges(graph, recorder.nodes);   // before instantiating
#include <cuda_runtime_api.h>

#include <cstddef>

#include "graph/kernel_nodes.hpp"

namespace kiln::detail {

/// Makes the edge into each recorded kiln kernel programmatic where it can (one upstream node,
/// a kernel); returns how many edges changed. Throws CudaError only when an edge it removed
/// cannot be put back.
std::size_t add_programmatic_edges(cudaGraph_t graph, const KernelNodes& nodes);

/// False when KILN_GRAPH_PROGRAMMATIC_EDGES=0 (read at each capture's end).
bool programmatic_edges_enabled();

}  // namespace kiln::detail
