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
//   auto& pool = kiln::get_default_memory_pool();
//   std::size_t live = pool.used_bytes(), held = pool.total_bytes();
//   pool.free_all_blocks();   // give cached blocks back to the driver
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

#include "kiln/runtime/stream.hpp"

namespace kiln {

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

 private:
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

  int device_;
  cudaMemPool_t pool_ = nullptr;
  mutable std::mutex kept_mutex_;
  std::array<std::vector<KeptBlock>, kSmallClasses> kept_;
  std::size_t kept_bytes_ = 0;
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

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
  int device_;
  Stream stream_;
  std::function<void()> release_;  // set for memory kiln does not own
};

}  // namespace kiln
