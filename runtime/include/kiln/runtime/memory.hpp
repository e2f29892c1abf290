#pragma once
// Stream-ordered device memory: one pool per device on cudaMallocAsync, keeping freed blocks
// for reuse (like CuPy's MemoryPool). Out of memory: frees cached blocks, retries once, then
// throws OutOfMemoryError naming the request and the pool's state.
//
//   auto& pool = kiln::get_default_memory_pool();
//   std::size_t live = pool.used_bytes(), held = pool.total_bytes();
//   pool.free_all_blocks();   // give cached blocks back to the driver
#include <cstddef>
#include <functional>
#include <memory>

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
  /// Bytes in live allocations.
  std::size_t used_bytes() const;
  /// Bytes the pool holds from the driver (live + cached for reuse).
  std::size_t total_bytes() const;
  /// Releases every cached block not in use (waits for the device first).
  void free_all_blocks();
  int device() const noexcept { return device_; }

 private:
  int device_;
  cudaMemPool_t pool_ = nullptr;
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
