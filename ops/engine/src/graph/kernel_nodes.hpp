#pragma once
// Internal: the kiln kernels of one capture as recorded at their launch (capture_record.hpp),
// and what graph::update / update_scalar change in their arguments. Host-only and testable
// without a GPU: planning a change computes new parameter bytes per node; the graph pushes
// them to its executable graph (cuGraphExecKernelNodeSetParams) and then commits them here.
//
//   KernelNodes nodes;
//   nodes.add(node);                                   // at capture
//   auto plan = nodes.plan_rebind(pairs);              // ValueError if a pair matches nothing
//   for (auto& c : plan.changes) set_params(nodes[c.node], c.bytes);
//   nodes.commit(plan);
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/runtime/dtype.hpp"
#include "kiln/runtime/module.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/scalar.hpp"

namespace kiln::detail {

/// What a kernel parameter is to update(): an array (its first 8 bytes are the device pointer
/// of the array's element 0, as kiln packs every array argument), a scalar of a dtype, or
/// something else that stays as captured (index widths, shapes, workspaces, raw C++ values).
enum class ArgRole : std::uint8_t { other, array, scalar };

struct ArgInfo {
  ArgRole role = ArgRole::other;
  dtype type = float64;  // scalar: its dtype
};

struct KernelNode {
  void* node = nullptr;      // the cudaGraphNode_t in the captured graph
  void* function = nullptr;  // its CUfunction
  std::string name;          // the kernel's name, for messages
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  std::vector<ParamSlot> params;  // the driver's layout
  std::vector<ArgInfo> args;      // parallel to params
  std::vector<std::byte> bytes;   // the parameters as captured, params[k].offset into it
};

/// New parameter bytes for some nodes.
struct NodeChange {
  std::size_t node;
  std::vector<std::byte> bytes;
};
struct UpdatePlan {
  std::vector<NodeChange> changes;
  std::size_t arguments = 0;  // arguments changed
};

/// Checks an update pair before anything changes: both defined, same dtype (TypeError), same
/// shape and strides (ShapeError), same device, `to` aligned at least as `from` up to 16
/// bytes (ValueError).
void check_array_update(const ndarray& from, const ndarray& to);

class KernelNodes {
 public:
  void add(KernelNode n) { nodes_.push_back(std::move(n)); }
  std::size_t size() const noexcept { return nodes_.size(); }
  const KernelNode& operator[](std::size_t i) const { return nodes_[i]; }

  /// Array arguments pointing at an element of pairs[j].first point at the same element of
  /// pairs[j].second (the first pair that matches wins). ValueError naming the pair when one
  /// matches no argument. The pairs are checked with check_array_update first.
  UpdatePlan plan_rebind(std::span<const std::pair<ndarray, ndarray>> pairs) const;
  /// Scalar arguments equal to `from` in their dtype become `to` in it. ValueError when none
  /// matches or `to` does not fit a matching argument's dtype.
  UpdatePlan plan_scalar(const scalar& from, const scalar& to) const;
  /// Makes a plan's bytes the recorded ones (after the device took them).
  void commit(UpdatePlan& plan);

 private:
  std::vector<KernelNode> nodes_;
};

/// The argv of cuLaunchKernel / a kernel node for parameter bytes laid out by `params`.
std::vector<void*> param_pointers(const std::vector<ParamSlot>& params,
                                  std::vector<std::byte>& bytes);

}  // namespace kiln::detail
