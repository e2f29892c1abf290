#include "kiln/runtime/graph_memory.hpp"

#include <algorithm>

#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/memory.hpp"

namespace kiln {
namespace {

constexpr std::size_t kSmallMax = std::size_t(64) << 10;  // the pool's small-block limit
constexpr std::size_t kSlabBytes = std::size_t(1) << 20;
constexpr std::size_t kAlign = 256;  // what cudaMallocAsync guarantees

void* as_ptr(std::uintptr_t a) { return reinterpret_cast<void*>(a); }
std::uintptr_t as_addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Makes `device` current for a scope without throwing (destructor paths).
class QuietDeviceSwitch {
 public:
  explicit QuietDeviceSwitch(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != device && cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
    device_ = device;
  }
  ~QuietDeviceSwitch() {
    if (previous_ >= 0 && previous_ != device_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1, device_ = 0;
};

}  // namespace

GraphMemory::GraphMemory(int device, Stream home) : device_(device), home_(std::move(home)) {}

GraphMemory::~GraphMemory() {
  // Left only when release_graph never ran (or ran during a capture that never ended): give
  // the blocks back now, still after the last replay when there was one.
  std::lock_guard lock(mutex_);
  std::vector<Free> frees;
  for (auto& [base, c] : chunks_) frees.push_back({as_ptr(base), c.bytes, c.stream});
  chunks_.clear();
  give_back(frees);
  if (after_replays_) cudaEventDestroy(after_replays_);
}

void* GraphMemory::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  MemoryPool& pool = get_memory_pool(device_);
  std::lock_guard lock(mutex_);
  if (bytes <= kSmallMax) {
    const std::size_t need = (bytes + kAlign - 1) / kAlign * kAlign;
    auto it = slab_ ? chunks_.find(slab_) : chunks_.end();
    if (it == chunks_.end() || it->second.used + need > it->second.bytes) {
      void* p = pool.allocate_for_graph(kSlabBytes);
      it = chunks_
               .emplace(as_addr(p),
                        Chunk{.bytes = kSlabBytes, .refs = 1, .slab = true, .stream = home_})
               .first;
      slab_ = it->first;
    }
    Chunk& c = it->second;
    void* p = as_ptr(it->first + c.used);
    c.used += need;
    ++c.refs;
    return p;
  }
  void* p = pool.allocate_for_graph(bytes);
  chunks_.emplace(as_addr(p), Chunk{.bytes = bytes, .used = bytes, .refs = 2, .stream = home_});
  return p;
}

void GraphMemory::drop_ref(std::map<std::uintptr_t, Chunk>::iterator it, std::vector<Free>& out) {
  if (--it->second.refs > 0) return;
  if (it->first == slab_) slab_ = 0;
  out.push_back({as_ptr(it->first), it->second.bytes, std::move(it->second.stream)});
  chunks_.erase(it);
}

void GraphMemory::release(void* p) noexcept {
  if (!p) return;
  std::lock_guard lock(mutex_);
  auto it = chunks_.upper_bound(as_addr(p));
  if (it == chunks_.begin()) return;
  --it;
  if (as_addr(p) >= it->first + it->second.bytes) return;
  std::vector<Free> frees;
  drop_ref(it, frees);
  give_back(frees);
}

void GraphMemory::adopt(void* p, std::size_t bytes, const Stream& stream) noexcept {
  if (!p) return;
  std::lock_guard lock(mutex_);
  chunks_.emplace(as_addr(p), Chunk{.bytes = bytes, .used = bytes, .refs = 1, .stream = stream});
  if (!graph_alive_) {  // adopted after the graph went (not done by kiln, but stay correct)
    std::vector<Free> frees;
    drop_ref(chunks_.find(as_addr(p)), frees);
    give_back(frees);
  }
}

void GraphMemory::release_graph(const Stream* last_replay) noexcept {
  std::lock_guard lock(mutex_);
  if (!graph_alive_) return;
  if (last_replay) {
    QuietDeviceSwitch on(device_);
    detail::RelaxedCaptureMode relaxed;  // this thread may be capturing another stream
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t e = cudaStreamIsCapturing(last_replay->handle(), &status);
    if (e != cudaSuccess || status != cudaStreamCaptureStatusNone) {
      // An event recorded there now would be captured, not run: keep every block (a leak,
      // said out loud) rather than risk handing out memory a replay may still use.
      cudaGetLastError();
      detail::logger().warn(
          "a kiln graph was destroyed while the stream of its last replay was being captured; "
          "its {} bytes of device memory are kept until the process ends",
          [&] {
            std::size_t n = 0;
            for (const auto& [base, c] : chunks_) n += c.bytes;
            return n;
          }());
      graph_alive_ = false;
      chunks_.clear();
      return;
    }
    if (cudaEventCreateWithFlags(&after_replays_, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventRecord(after_replays_, last_replay->handle()) != cudaSuccess) {
      cudaGetLastError();
      cudaStreamSynchronize(last_replay->handle());  // fall back to waiting here
      cudaGetLastError();
      if (after_replays_) cudaEventDestroy(after_replays_);
      after_replays_ = nullptr;
    }
    replay_stream_ = last_replay->handle();
  }
  graph_alive_ = false;
  std::vector<Free> frees;
  for (auto it = chunks_.begin(); it != chunks_.end();) drop_ref(it++, frees);
  give_back(frees);
}

std::size_t GraphMemory::bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& [base, c] : chunks_) n += c.bytes;
  return n;
}

// Called with mutex_ held. Each block goes back on its stream, which first waits for the last
// replay (once per stream); a stream being captured cannot wait on an event, so then this
// thread waits for it instead.
void GraphMemory::give_back(std::vector<Free>& frees) noexcept {
  if (frees.empty()) return;
  MemoryPool* pool = nullptr;
  try {
    pool = &get_memory_pool(device_);
  } catch (...) {
    return;  // no device any more (process teardown): nothing to give back to
  }
  QuietDeviceSwitch on(device_);
  for (auto& f : frees) {
    const cudaStream_t h = f.stream.handle();
    if (after_replays_ && h != replay_stream_ &&
        std::find(waited_.begin(), waited_.end(), h) == waited_.end()) {
      const bool capturing = h ? pool->capture_memory(h) != nullptr
                               : pool->captures_.load(std::memory_order_acquire) > 0;
      if (capturing) {
        detail::RelaxedCaptureMode relaxed;
        if (cudaEventSynchronize(after_replays_) != cudaSuccess) cudaGetLastError();
        cudaEventDestroy(after_replays_);
        after_replays_ = nullptr;  // every later free is ordered now
      } else {
        if (cudaStreamWaitEvent(h, after_replays_, 0) != cudaSuccess) cudaGetLastError();
        waited_.push_back(h);
      }
    }
    pool->deallocate(f.ptr, f.bytes, f.stream);
  }
  frees.clear();
}

}  // namespace kiln
