#pragma once
// A thread-safe map Key -> V with stable addresses, for per-process caches of compiled or
// loaded kernels. Lookups take a shared lock, so readers never block each other, and a hit
// does no allocation and no I/O. get_or_create runs make() at most once per key (retrying
// only if it threw), without holding the map lock, so different keys are created in parallel.
//
//   MemoryCache<LoadedKernel> kernels;
//   LoadedKernel& k = kernels.get_or_create(key, [&] { return load(compile_cached(req)); });
//   if (LoadedKernel* hit = kernels.find(key)) launch(*hit);
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "kiln/runtime/hash128.hpp"

namespace kiln::cache {

template <class V>
class MemoryCache {
 public:
  /// The value for `key`, or nullptr if absent or still being created. The pointer stays
  /// valid until clear() or destruction.
  V* find(const kiln::Hash128& key) {
    std::shared_lock lock(map_mutex_);
    auto it = map_.find(key);
    if (it == map_.end() || !it->second->ready.load(std::memory_order_acquire)) return nullptr;
    return &*it->second->value;
  }

  /// The value for `key`, calling make() to create it if absent. Concurrent callers for the
  /// same key wait for the one running make(); if make() throws, the exception reaches that
  /// caller and the next caller tries again.
  template <class F>
  V& get_or_create(const kiln::Hash128& key, F&& make) {
    if (V* hit = find(key)) return *hit;
    Node* node = nullptr;
    {
      std::unique_lock lock(map_mutex_);
      auto& slot = map_[key];
      if (!slot) slot = std::make_unique<Node>();
      node = slot.get();  // stable: nodes are never freed before clear()
    }
    std::lock_guard create_lock(node->create_mutex);
    if (!node->ready.load(std::memory_order_acquire)) {
      node->value.emplace(std::forward<F>(make)());
      node->ready.store(true, std::memory_order_release);
      size_.fetch_add(1, std::memory_order_relaxed);
    }
    return *node->value;
  }

  /// Drops every entry. Must not run while another thread uses the cache or holds a
  /// pointer/reference from it.
  void clear() {
    std::unique_lock lock(map_mutex_);
    map_.clear();
    size_.store(0, std::memory_order_relaxed);
  }

  /// Number of created values.
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  struct Node {
    std::mutex create_mutex;
    std::atomic<bool> ready{false};
    std::optional<V> value;
  };

  mutable std::shared_mutex map_mutex_;
  std::unordered_map<kiln::Hash128, std::unique_ptr<Node>, kiln::Hash128Hash>
      map_;  // by cache::Key
  std::atomic<std::size_t> size_{0};
};

/// THE lifetime of kiln's process-wide kernel tables (loaded kernels, expression kernels,
/// fused and built-in reductions): made on first use, never destroyed. Kernels may be
/// launched from static destructors and exit handlers, and modules must not be unloaded
/// after the driver has shut down at exit. `Tag` names the table.
///
///   auto& t = process_table<std::unique_ptr<ElementwiseKernel>, struct expression_kernels>();
///   const ElementwiseKernel& k = *t.get_or_create(key, [&] { return make(); });
template <class V, class Tag>
MemoryCache<V>& process_table() {
  static auto* table = new MemoryCache<V>();
  return *table;
}

}  // namespace kiln::cache
