#pragma once
// Stream-ordered device memory: one pool per device on cudaMallocAsync, keeping freed blocks
// for reuse (like CuPy's MemoryPool). Out of memory: frees cached blocks, retries once, then
// throws OutOfMemoryError naming the request and the pool's state.
//
// Small arrays (<= 64 KiB, what every call's 0-d or tiny output is) skip the driver on reuse:
// a Buffer freed on a kiln-created stream or the null stream keeps its block on the host, and
// the next allocation of that size class on the same stream takes it back (stream order makes
// that safe, as for CuPy's pool). Such a block keeps its stream alive until it is reused or
// free_all_blocks() gives it back; at most 64 blocks per size class are kept.
//
// During a kiln graph capture (kiln::capture) on a stream, Buffers allocated on that stream
// take real memory the graph holds (GraphMemory, graph_memory.hpp) instead of captured
// allocations, and blocks freed on it go to the graph too, never back to this pool while the
// graph may still use them. The raw allocate/deallocate(cudaStream_t) pair does not do this.
//
//   auto& pool = kiln::get_default_memory_pool();
//   std::size_t live = pool.used_bytes(), held = pool.total_bytes();
//   pool.free_all_blocks();   // give cached blocks back to the driver
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/runtime/stream.hpp"

namespace kiln {

class GraphMemory;

class MemoryPool {
 public:
  explicit MemoryPool(int device);
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  /// Allocates on `stream` (usable in stream order). Zero bytes gives nullptr.
  void* allocate(std::size_t bytes, cudaStream_t stream);
  void deallocate(void* p, cudaStream_t stream) noexcept;
  /// The same for a Buffer of `bytes` on `stream`: small blocks are reused on the host (above).
  void* allocate(std::size_t bytes, const Stream& stream);
  void deallocate(void* p, std::size_t bytes, const Stream& stream) noexcept;
  /// Bytes in live allocations (blocks kept for reuse are not live).
  std::size_t used_bytes() const;
  /// Bytes the pool holds from the driver (live + cached for reuse).
  std::size_t total_bytes() const;
  /// Releases every cached block not in use (waits for the device first).
  void free_all_blocks();
  int device() const noexcept { return device_; }

  // ---- graph capture (kiln::capture drives these) ----
  /// While `s` captures, Buffers allocated on it take memory from `g`, and blocks of Buffers
  /// freed on it go to `g`; the null stream's frees wait for the end of every capture.
  void begin_capture(cudaStream_t s, std::shared_ptr<GraphMemory> g);
  void end_capture(cudaStream_t s) noexcept;
  /// The graph memory of a capture on `s`, or nullptr (one atomic load when none runs).
  std::shared_ptr<GraphMemory> capture_memory(cudaStream_t s) const;

 private:
  friend class GraphMemory;
  static constexpr int kSmallClasses = 8;  // 512 B, 1 KiB, ..., 64 KiB
  static constexpr std::size_t kMaxKeptPerClass = 64;
  struct KeptBlock {
    void* ptr;
    Stream stream;
  };
  /// The size class of `bytes`, or -1 when it is not small.
  static int small_class(std::size_t bytes) noexcept;
  static bool reusable_on(const Stream& s) noexcept;
  void flush_kept();
  /// Memory usable at once from any stream, taken while a stream of this device captures: a
  /// pool allocation on a side stream this thread waits for (the capture records nothing).
  void* allocate_for_graph(std::size_t bytes);
  /// A Buffer's free while some stream captures: true when the capture took it (or the null
  /// stream's free was put off until no capture runs).
  bool capture_deallocate(void* p, std::size_t bytes, const Stream& stream) noexcept;

  int device_;
  cudaMemPool_t pool_ = nullptr;
  mutable std::mutex kept_mutex_;
  std::array<std::vector<KeptBlock>, kSmallClasses> kept_;
  std::size_t kept_bytes_ = 0;

  struct Capture {
    cudaStream_t stream;
    std::shared_ptr<GraphMemory> memory;
  };
  struct DeferredFree {
    void* ptr;
    std::size_t bytes;
    Stream stream;
  };
  std::atomic<int> captures_{0};
  mutable std::mutex capture_mutex_;
  std::vector<Capture> capturing_;
  std::vector<DeferredFree> deferred_;
  cudaStream_t graph_side_stream_ = nullptr;  // allocate_for_graph's, made on first use
};

/// The pool of the current device (or of `device`).
MemoryPool& get_default_memory_pool();
MemoryPool& get_memory_pool(int device);

/// A block of device memory, freed into its pool (on the stream it was allocated on) when the
/// last ndarray using it goes away. It keeps that stream alive until then.
class Buffer {
 public:
  Buffer(std::size_t bytes, int device, Stream stream);
  /// Memory kiln does not own (e.g. a DLPack import): `release` runs instead of a pool free
  /// when the last array using it goes away. Touches no device.
  Buffer(void* ptr, std::size_t bytes, int device, std::function<void()> release);
  /// The same, keeping `owner` (e.g. the module a __device__ variable lives in) alive as long
  /// as the buffer.
  static std::shared_ptr<Buffer> borrow(void* ptr, std::size_t bytes, int device,
                                        std::shared_ptr<const void> owner);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return bytes_; }
  int device() const noexcept { return device_; }
  /// True for a buffer allocated during a graph capture on its stream: the graph holds its
  /// memory too, and it goes back to the pool when both are gone.
  bool graph_owned() const noexcept { return graph_ != nullptr; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
  int device_;
  Stream stream_;
  std::function<void()> release_;       // set for memory kiln does not own
  std::shared_ptr<GraphMemory> graph_;  // set for a buffer born in a capture
};

}  // namespace kiln
