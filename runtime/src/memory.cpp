#include "kiln/runtime/memory.hpp"

#include <array>
#include <cstdint>
#include <mutex>

#include <fmt/format.h>

#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {
namespace {

std::uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  std::uint64_t v = 0;
  KILN_CUDA(cudaMemPoolGetAttribute(pool, attr, &v));
  return v;
}

}  // namespace

MemoryPool::MemoryPool(int device) : device_(device) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  KILN_CUDA(cudaMemPoolCreate(&pool_, &props));
  // Keep freed memory cached for reuse instead of returning it at every synchronization.
  std::uint64_t keep_all = UINT64_MAX;
  KILN_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_all));
}

void* MemoryPool::allocate(std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_, stream);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    free_all_blocks();  // give cached blocks back, then try once more
    e = cudaMallocFromPoolAsync(&p, bytes, pool_, stream);
  }
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw OutOfMemoryError(
        fmt::format("out of memory on device {} allocating {} bytes ({:.2f} GiB): the pool holds "
                    "{} bytes ({} in use), the device has {} of {} bytes free",
                    device_, bytes, double(bytes) / (1 << 30), total_bytes(), used_bytes(), free_b,
                    total_b),
        bytes);
  }
  KILN_CUDA(e);
  return p;
}

void MemoryPool::deallocate(void* p, cudaStream_t stream) noexcept {
  if (p && cudaFreeAsync(p, stream) != cudaSuccess) cudaGetLastError();  // e.g. at process exit
}

std::size_t MemoryPool::used_bytes() const {
  return pool_attribute(pool_, cudaMemPoolAttrUsedMemCurrent);
}

std::size_t MemoryPool::total_bytes() const {
  return pool_attribute(pool_, cudaMemPoolAttrReservedMemCurrent);
}

void MemoryPool::free_all_blocks() {
  int prev = -1;
  cudaGetDevice(&prev);
  if (prev != device_) cudaSetDevice(device_);
  cudaError_t e = cudaDeviceSynchronize();
  if (prev != device_) cudaSetDevice(prev);
  KILN_CUDA(e);
  KILN_CUDA(cudaMemPoolTrimTo(pool_, 0));
}

MemoryPool& get_memory_pool(int device) {
  constexpr int kMaxDevices = 64;
  // Pools live for the whole process (never destroyed), so arrays freed during static
  // destruction still have a pool to return to.
  static std::array<MemoryPool*, kMaxDevices> pools{};
  static std::array<std::once_flag, kMaxDevices> once;
  require_device();
  if (device < 0 || device >= device_count() || device >= kMaxDevices)
    throw ValueError(fmt::format("device {} does not exist", device));
  std::call_once(once[device], [device] { pools[device] = new MemoryPool(device); });
  return *pools[device];
}

MemoryPool& get_default_memory_pool() { return get_memory_pool(current_device()); }

Buffer::Buffer(std::size_t bytes, int device, Stream stream)
    : bytes_(bytes), device_(device), stream_(std::move(stream)) {
  ptr_ = get_memory_pool(device).allocate(bytes, stream_.handle());
}

Buffer::Buffer(void* ptr, std::size_t bytes, int device, std::function<void()> release)
    : ptr_(ptr), bytes_(bytes), device_(device), stream_(Stream::borrow(nullptr, device)),
      release_(release ? std::move(release) : [] {}) {}

std::shared_ptr<Buffer> Buffer::borrow(void* ptr, std::size_t bytes, int device,
                                       std::shared_ptr<const void> owner) {
  return std::make_shared<Buffer>(ptr, bytes, device, [owner = std::move(owner)] {});
}

Buffer::~Buffer() {
  if (release_) {
    release_();
    return;
  }
  get_memory_pool(device_).deallocate(ptr_, stream_.handle());
}

}  // namespace kiln
