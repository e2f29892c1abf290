#include "kiln/runtime/device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <vector>

#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {
namespace {

struct DeviceTable {
  int count = 0;
  std::string reason;
  std::vector<std::unique_ptr<DeviceProperties>> props;
  std::vector<std::once_flag> prop_once;
};

DeviceTable& table() {
  static DeviceTable* t = [] {
    auto* tbl = new DeviceTable;  // never destroyed: usable during static destruction
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      tbl->reason = e == cudaErrorNoDevice ? "no CUDA-capable GPU was found"
                    : e == cudaErrorInsufficientDriver
                        ? "no NVIDIA driver was found (or it is older than CUDA 13 needs)"
                        : fmt::format("the CUDA runtime could not start: {} ({})",
                                      cudaGetErrorName(e), int(e));
      n = 0;
    } else if (n == 0) {
      tbl->reason = "no CUDA-capable GPU was found";
    }
    tbl->count = n;
    tbl->props.resize(n);
    tbl->prop_once = std::vector<std::once_flag>(n);
    return tbl;
  }();
  return *t;
}

void check_id(int device) {
  require_device();
  if (device < 0 || device >= table().count)
    throw ValueError(
        fmt::format("device {} does not exist: this machine has {} GPU(s)", device, table().count));
}

}  // namespace

int device_count() noexcept { return table().count; }
std::string no_device_reason() { return table().reason; }

void require_device() {
  if (table().count == 0)
    throw NoDeviceError(fmt::format(
        "kiln found no usable GPU: {}. Work that needs no GPU (code generation, NVRTC, the "
        "kernel cache, kiln-cache) still runs.",
        table().reason));
}

const DeviceProperties& device_properties(int device) {
  check_id(device);
  auto& t = table();
  std::call_once(t.prop_once[device], [&] {
    cudaDeviceProp p{};
    KILN_CUDA(cudaGetDeviceProperties(&p, device));
    auto d = std::make_unique<DeviceProperties>();
    d->id = device;
    d->name = p.name;
    d->major = p.major;
    d->minor = p.minor;
    d->multiprocessor_count = p.multiProcessorCount;
    d->max_threads_per_block = p.maxThreadsPerBlock;
    d->max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
    d->warp_size = p.warpSize;
    d->total_memory = p.totalGlobalMem;
    d->l2_cache_bytes = std::size_t(p.l2CacheSize);
    d->shared_memory_per_multiprocessor = p.sharedMemPerMultiprocessor;
    d->shared_memory_per_block_optin = p.sharedMemPerBlockOptin;
    t.props[device] = std::move(d);
  });
  return *t.props[device];
}

int current_device() {
  require_device();
  int d = 0;
  KILN_CUDA(cudaGetDevice(&d));
  return d;
}

void set_current_device(int device) {
  check_id(device);
  KILN_CUDA(cudaSetDevice(device));
}

void synchronize_device() {
  detail::refuse_during_capture("synchronize_device()", "it waits for the device");
  require_device();
  KILN_CUDA(cudaDeviceSynchronize());
}

DeviceGuard::DeviceGuard(int device) : previous_(current_device()) {
  if (device != previous_) set_current_device(device);
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

}  // namespace kiln
