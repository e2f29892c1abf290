#include "kiln/runtime/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <new>

#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/graph_memory.hpp"

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
  if (e == cudaErrorMemoryAllocation && !detail::thread_capture()) {
    cudaGetLastError();
    free_all_blocks();  // give cached blocks back, then try once more (not during a capture:
    e = cudaMallocFromPoolAsync(&p, bytes, pool_, stream);  // that waits for the device)
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

int MemoryPool::small_class(std::size_t bytes) noexcept {
  int c = 0;
  for (std::size_t size = 512; size < bytes; size *= 2)
    if (++c == kSmallClasses) return -1;
  return c;
}

// A block may be reused on a stream whose handle cannot be taken by another stream while the
// block waits: the null stream, or a kiln stream the kept block holds alive. A borrowed
// handle (PyTorch's, cudaStreamPerThread) could be destroyed and its value reused.
bool MemoryPool::reusable_on(const Stream& s) noexcept {
  return s.handle() == nullptr || s.owner_ != nullptr;
}

void* MemoryPool::allocate(std::size_t bytes, const Stream& stream) {
  const int c = bytes ? small_class(bytes) : -1;
  if (c < 0 || !reusable_on(stream)) return allocate(bytes, stream.handle());
  {
    std::lock_guard lock(kept_mutex_);
    auto& blocks = kept_[std::size_t(c)];
    for (std::size_t i = blocks.size(); i-- > 0;)
      if (blocks[i].stream.handle() == stream.handle()) {
        void* p = blocks[i].ptr;
        blocks[i] = std::move(blocks.back());
        blocks.pop_back();
        kept_bytes_ -= std::size_t(512) << c;
        return p;
      }
  }
  return allocate(std::size_t(512) << c, stream.handle());
}

void MemoryPool::deallocate(void* p, std::size_t bytes, const Stream& stream) noexcept {
  if (captures_.load(std::memory_order_acquire) > 0 && p) [[unlikely]]
    if (capture_deallocate(p, bytes, stream)) return;
  const int c = p ? small_class(bytes) : -1;
  if (c >= 0 && reusable_on(stream)) {
    std::lock_guard lock(kept_mutex_);
    auto& blocks = kept_[std::size_t(c)];
    if (blocks.size() < kMaxKeptPerClass) {
      try {
        blocks.push_back({p, stream});
        kept_bytes_ += std::size_t(512) << c;
        return;
      } catch (const std::bad_alloc&) {  // give it back to the driver instead
      }
    }
  }
  deallocate(p, stream.handle());
}

void MemoryPool::flush_kept() {
  std::array<std::vector<KeptBlock>, kSmallClasses> blocks;
  {
    std::lock_guard lock(kept_mutex_);
    blocks.swap(kept_);
    kept_bytes_ = 0;
  }
  for (auto& v : blocks)
    for (auto& b : v) deallocate(b.ptr, b.stream.handle());
}

std::size_t MemoryPool::used_bytes() const {
  const std::size_t driver_used = pool_attribute(pool_, cudaMemPoolAttrUsedMemCurrent);
  std::lock_guard lock(kept_mutex_);
  return driver_used - std::min(driver_used, kept_bytes_);
}

std::size_t MemoryPool::total_bytes() const {
  return pool_attribute(pool_, cudaMemPoolAttrReservedMemCurrent);
}

void MemoryPool::free_all_blocks() {
  detail::refuse_during_capture("MemoryPool::free_all_blocks()", "it waits for the device");
  int prev = -1;
  cudaGetDevice(&prev);
  if (prev != device_) cudaSetDevice(device_);
  flush_kept();  // on this device: a kept block's null-stream free belongs to its device
  cudaError_t e = cudaDeviceSynchronize();
  if (prev != device_) cudaSetDevice(prev);
  KILN_CUDA(e);
  KILN_CUDA(cudaMemPoolTrimTo(pool_, 0));
}

// ---- graph capture ----

void MemoryPool::begin_capture(cudaStream_t s, std::shared_ptr<GraphMemory> g) {
  std::lock_guard lock(capture_mutex_);
  capturing_.push_back({s, std::move(g)});
  captures_.fetch_add(1, std::memory_order_release);
}

void MemoryPool::end_capture(cudaStream_t s) noexcept {
  std::vector<DeferredFree> frees;
  {
    std::lock_guard lock(capture_mutex_);
    for (std::size_t i = 0; i < capturing_.size(); ++i)
      if (capturing_[i].stream == s) {
        capturing_.erase(capturing_.begin() + std::ptrdiff_t(i));
        captures_.fetch_sub(1, std::memory_order_release);
        break;
      }
    if (capturing_.empty()) frees.swap(deferred_);
  }
  for (auto& f : frees) deallocate(f.ptr, f.bytes, f.stream);
}

std::shared_ptr<GraphMemory> MemoryPool::capture_memory(cudaStream_t s) const {
  if (captures_.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard lock(capture_mutex_);
  for (const auto& c : capturing_)
    if (c.stream == s) return c.memory;
  return nullptr;
}

bool MemoryPool::capture_deallocate(void* p, std::size_t bytes, const Stream& stream) noexcept {
  std::shared_ptr<GraphMemory> g;
  {
    std::lock_guard lock(capture_mutex_);
    for (const auto& c : capturing_)
      if (c.stream == stream.handle()) g = c.memory;
    if (!g) {
      if (stream.handle() != nullptr) return false;
      // A free on the legacy null stream would wait on a capturing blocking stream and break
      // its capture: it runs when the last capture of this device ends.
      try {
        deferred_.push_back({p, bytes, stream});
        return true;
      } catch (const std::bad_alloc&) {
        return false;
      }
    }
  }
  g->adopt(p, bytes, stream);
  return true;
}

void* MemoryPool::allocate_for_graph(std::size_t bytes) {
  detail::RelaxedCaptureMode relaxed;  // this thread is capturing another stream
  cudaStream_t side = nullptr;
  {
    std::lock_guard lock(capture_mutex_);
    if (!graph_side_stream_) {
      int prev = -1;
      cudaGetDevice(&prev);
      if (prev != device_) cudaSetDevice(device_);
      const cudaError_t e = cudaStreamCreateWithFlags(&graph_side_stream_, cudaStreamNonBlocking);
      if (prev != device_) cudaSetDevice(prev);
      KILN_CUDA(e);
    }
    side = graph_side_stream_;
  }
  void* p = nullptr;
  const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_, side);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw OutOfMemoryError(
        fmt::format("out of memory on device {} allocating {} bytes for a graph capture (cached "
                    "blocks are not released during a capture): the pool holds {} bytes ({} in "
                    "use), the device has {} of {} bytes free",
                    device_, bytes, total_bytes(), used_bytes(), free_b, total_b),
        bytes);
  }
  KILN_CUDA(e);
  // Ready for every stream once the side stream has it; the capture records none of this.
  KILN_CUDA(cudaStreamSynchronize(side));
  return p;
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

// Whole 16-byte granules: a kernel may then read any aligned 16-byte vector holding an element
// of the array without leaving its allocation (reductions' windows over unaligned runs).
Buffer::Buffer(std::size_t bytes, int device, Stream stream)
    : bytes_(bytes + (std::size_t(0) - bytes) % 16), device_(device), stream_(std::move(stream)) {
  MemoryPool& pool = get_memory_pool(device);
  if (auto g = pool.capture_memory(stream_.handle())) [[unlikely]] {
    ptr_ = g->allocate(bytes_);
    graph_ = std::move(g);
    return;
  }
  ptr_ = pool.allocate(bytes_, stream_);
}

Buffer::Buffer(void* ptr, std::size_t bytes, int device, std::function<void()> release)
    : ptr_(ptr),
      bytes_(bytes),
      device_(device),
      stream_(Stream::borrow(nullptr, device)),
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
  if (graph_) {
    graph_->release(ptr_);
    return;
  }
  get_memory_pool(device_).deallocate(ptr_, bytes_, stream_);
}

}  // namespace kiln
