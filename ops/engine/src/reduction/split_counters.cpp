#include "reduction/split_counters.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln::detail {
namespace {

struct Slab {
  int device;
  unsigned long long stream_id;  // cudaStreamGetId: never reused, unlike handles
  unsigned* counters;
  std::size_t count;
};

struct Slabs {
  std::mutex mutex;
  std::vector<Slab> slabs;
};

Slabs& slabs() {
  static auto* s = new Slabs;  // never destroyed: launches may run during static destruction
  return *s;
}

// A split has fewer rows (column tiles) than two waves of 32-thread blocks, 128 per SM
// (reduction_geometry), so one slab of that many serves every split launch on its stream.
std::size_t slab_counters(int device) {
  return 128 * std::size_t(std::max(device_properties(device).multiprocessor_count, 1));
}

// Outside the memory pool, so a slab never pins a pool block that free_all_blocks would give
// back. Relaxed capture mode: another thread's capture must not forbid (and lose) it.
unsigned* allocate_zeroed(std::size_t count, cudaStream_t stream) {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  KILN_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, count * sizeof(unsigned));
  KILN_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  if (e != cudaSuccess) {
    cudaGetLastError();  // out of memory here only costs the memset path
    return nullptr;
  }
  if (const cudaError_t z = cudaMemsetAsync(p, 0, count * sizeof(unsigned), stream)) {
    cudaFree(p);
    KILN_CUDA(z);
  }
  return static_cast<unsigned*>(p);
}

}  // namespace

unsigned* stream_split_counters(int device, cudaStream_t stream, std::size_t count) {
  if (Stream::borrow(stream, device).is_capturing()) return nullptr;
  unsigned long long id = 0;
  KILN_CUDA(cudaStreamGetId(stream, &id));
  Slabs& all = slabs();
  std::lock_guard lock(all.mutex);
  for (const Slab& s : all.slabs)
    if (s.stream_id == id && s.device == device) return count <= s.count ? s.counters : nullptr;
  if (all.slabs.size() >= kMaxCounterStreams) return nullptr;
  const std::size_t cap = slab_counters(device);
  if (count > cap) return nullptr;
  unsigned* fresh = allocate_zeroed(cap, stream);
  if (fresh) all.slabs.push_back({device, id, fresh, cap});
  return fresh;
}

}  // namespace kiln::detail
