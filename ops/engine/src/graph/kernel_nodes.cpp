#include "kernel_nodes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "kiln/runtime/error.hpp"

namespace kiln::detail {
namespace {

// The alignment of an address, up to 16 bytes (the widest vector access kiln generates).
std::uintptr_t alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a == 0 ? 16 : std::min<std::uintptr_t>(a & (~a + 1), 16);
}

std::string describe(const ndarray& a) {
  return fmt::format("{} {} with strides {}", a.dtype().name(), a.shape().str(), a.strides().str());
}

std::uint64_t load_pointer(const std::vector<std::byte>& bytes, const ParamSlot& s) {
  std::uint64_t p = 0;
  std::memcpy(&p, bytes.data() + s.offset, sizeof p);
  return p;
}

}  // namespace

void check_array_update(const ndarray& from, const ndarray& to) {
  if (!from.defined() || !to.defined())
    throw ValueError("graph::update: an array of the pair is an empty ndarray handle");
  if (from.dtype() != to.dtype())
    throw TypeError(
        fmt::format("graph::update: the new array is {} but the captured one is {}; "
                    "the captured kernels were compiled for {}",
                    to.dtype().name(), from.dtype().name(), from.dtype().name()));
  if (from.shape() != to.shape() || from.strides() != to.strides())
    throw ShapeError(
        fmt::format("graph::update: the new array ({}) must have the layout of the "
                    "captured one ({}): the captured kernels were planned for it",
                    describe(to), describe(from)));
  if (from.size() > 0 && from.device() != to.device())
    throw ValueError(
        fmt::format("graph::update: the new array is on device {}, the captured one "
                    "on device {}",
                    to.device(), from.device()));
  if (alignment(to.data()) < alignment(from.data()))
    throw ValueError(fmt::format(
        "graph::update: the new array's data is aligned to {} bytes, the captured one's to {}: "
        "the captured kernels may use vector loads of that width (take a view at an offset "
        "aligned as the captured one's)",
        alignment(to.data()), alignment(from.data())));
}

std::vector<void*> param_pointers(const std::vector<ParamSlot>& params,
                                  std::vector<std::byte>& bytes) {
  std::vector<void*> argv(params.size());
  for (std::size_t k = 0; k < params.size(); ++k) argv[k] = bytes.data() + params[k].offset;
  return argv;
}

UpdatePlan KernelNodes::plan_rebind(std::span<const std::pair<ndarray, ndarray>> pairs) const {
  struct Range {
    std::uint64_t base, lo, hi, to, item;
  };
  std::vector<Range> ranges;
  for (const auto& [from, to] : pairs) {
    check_array_update(from, to);
    const auto [lo, hi] = from.byte_extent();
    const auto base = std::uint64_t(reinterpret_cast<std::uintptr_t>(from.data()));
    ranges.push_back({base, base + std::uint64_t(lo), base + std::uint64_t(hi),
                      std::uint64_t(reinterpret_cast<std::uintptr_t>(to.data())),
                      std::uint64_t(from.itemsize())});
  }
  std::vector<std::size_t> hits(ranges.size(), 0);
  UpdatePlan plan;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const KernelNode& node = nodes_[n];
    std::vector<std::byte> bytes;
    for (std::size_t k = 0; k < node.params.size() && k < node.args.size(); ++k) {
      if (node.args[k].role != ArgRole::array || node.params[k].size < 8) continue;
      const std::uint64_t p = load_pointer(node.bytes, node.params[k]);
      for (std::size_t j = 0; j < ranges.size(); ++j) {
        const Range& r = ranges[j];
        if (p < r.lo || p >= r.hi) continue;
        const std::int64_t offset = std::int64_t(p - r.base);  // may be negative (lo < 0)
        if (offset % std::int64_t(r.item) != 0) continue;      // not on an element of `from`
        if (bytes.empty()) bytes = node.bytes;
        const std::uint64_t q = r.to + std::uint64_t(offset);
        std::memcpy(bytes.data() + node.params[k].offset, &q, sizeof q);
        ++hits[j];
        ++plan.arguments;
        break;
      }
    }
    if (!bytes.empty()) plan.changes.push_back({n, std::move(bytes)});
  }
  for (std::size_t j = 0; j < ranges.size(); ++j)
    if (hits[j] == 0)
      throw ValueError(fmt::format(
          "graph::update: no captured kiln kernel argument points into the array of pair {} ({}); "
          "the graph's kiln kernels use other arrays (library kernels, cuBLAS and CUB, "
          "cannot be updated)",
          j, describe(pairs[j].first)));
  return plan;
}

UpdatePlan KernelNodes::plan_scalar(const scalar& from, const scalar& to) const {
  UpdatePlan plan;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const KernelNode& node = nodes_[n];
    std::vector<std::byte> bytes;
    for (std::size_t k = 0; k < node.params.size() && k < node.args.size(); ++k) {
      const ArgInfo& a = node.args[k];
      if (a.role != ArgRole::scalar) continue;
      const std::size_t size = a.type.itemsize();
      if (node.params[k].size < size) continue;
      alignas(16) std::byte want[16] = {};
      try {
        from.store_as(a.type, want);
      } catch (const ValueError&) {
        continue;  // `from` does not fit this dtype: it cannot be this argument's value
      }
      if (std::memcmp(node.bytes.data() + node.params[k].offset, want, size) != 0) continue;
      alignas(16) std::byte now[16] = {};
      try {
        to.store_as(a.type, now);
      } catch (const ValueError&) {
        throw ValueError(
            fmt::format("graph::update_scalar: {} does not fit argument {} ({}) of "
                        "kernel '{}', which holds {}",
                        to.str(), k, a.type.name(), node.name, from.str()));
      }
      if (bytes.empty()) bytes = node.bytes;
      std::memcpy(bytes.data() + node.params[k].offset, now, size);
      ++plan.arguments;
    }
    if (!bytes.empty()) plan.changes.push_back({n, std::move(bytes)});
  }
  if (plan.arguments == 0)
    throw ValueError(fmt::format(
        "graph::update_scalar: no captured kiln kernel has a scalar argument equal to {} (in its "
        "dtype); scalars of library kernels (cuBLAS, CUB) cannot be updated",
        from.str()));
  return plan;
}

void KernelNodes::commit(UpdatePlan& plan) {
  for (auto& c : plan.changes) nodes_[c.node].bytes = std::move(c.bytes);
  plan.changes.clear();
}

}  // namespace kiln::detail
