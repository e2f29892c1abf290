#pragma once
// GPUs: how many, what they are, and which one is current on this host thread.
// Like CuPy, the current device is per host thread; DeviceGuard is `with cupy.cuda.Device(1):`.
//
//   if (kiln::device_count() > 0) {
//     kiln::DeviceGuard on(1);                        // device 1 until end of scope
//     auto& p = kiln::device_properties(1);           // p.name, p.multiprocessor_count, ...
//   }
#include <cstddef>
#include <string>

namespace kiln {

struct DeviceProperties {
  int id = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int multiprocessor_count = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multiprocessor = 0;
  int warp_size = 32;
  std::size_t total_memory = 0;
  std::size_t l2_cache_bytes = 0;
  std::size_t shared_memory_per_multiprocessor = 0;
  std::size_t shared_memory_per_block_optin = 0;   // a block's most, with the attribute set
  int arch() const { return major * 10 + minor; }  // 90 for sm_90
};

/// Number of usable GPUs; 0 when there is no driver or no GPU (never throws).
int device_count() noexcept;
/// Why device_count() is 0 ("no NVIDIA driver found", ...), or "" when there are GPUs.
std::string no_device_reason();
/// Throws NoDeviceError (with the reason) when there is no GPU.
void require_device();
/// Properties of a device (cached after the first call); throws ValueError for a bad id.
const DeviceProperties& device_properties(int device);
/// The current device of this host thread (0 unless set). Throws NoDeviceError without a GPU.
int current_device();
void set_current_device(int device);
/// Waits for all work on the current device.
void synchronize_device();

/// Makes `device` current for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

}  // namespace kiln
