#pragma once
// Loaded GPU code: a cubin loaded into a device's context, and launching its kernels through
// the driver, whose entry points are fetched at run time (kiln never links libcuda).
//
//   auto m = kiln::Module::load(cubin, kiln::current_device());
//   kiln::Function f = m->function("my_kernel");
//   void* args[] = {&ptr, &n};
//   f.launch({blocks}, {256}, args, 0, kiln::current_stream_handle());
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct CUmod_st;
struct CUfunc_st;

namespace kiln {

/// Where one kernel parameter lives in the argument buffer, as the driver reports it.
struct ParamSlot {
  std::uint32_t offset = 0, size = 0;
  friend bool operator==(const ParamSlot&, const ParamSlot&) = default;
};

class Function {
 public:
  Function() = default;
  explicit Function(CUfunc_st* f) : f_(f) {}
  /// One driver launch: cuLaunchKernel. No allocation, no locks.
  void launch(dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
              cudaStream_t stream) const;
  /// cuLaunchCooperativeKernel (grid-wide sync); the caller checks co-residency first.
  void launch_cooperative(dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
                          cudaStream_t stream) const;
  int max_threads_per_block() const;
  int num_registers() const;
  /// cuFuncGetAttribute / cuFuncSetAttribute with a CUfunction_attribute value.
  int attribute(int attr) const;
  void set_attribute(int attr, int value) const;
  /// The parameter layout (cuFuncGetParamInfo); nullopt when the driver is older than 12.4.
  std::optional<std::vector<ParamSlot>> param_layout() const;
  /// The layout of the first `count` parameters (no query past them: for a caller that knows
  /// how many there are, e.g. from the arguments of a launch that succeeded).
  std::optional<std::vector<ParamSlot>> param_layout(std::size_t count) const;
  /// Blocks of `block_threads` threads that fit on one multiprocessor at once.
  int max_active_blocks_per_multiprocessor(int block_threads, std::size_t shared_bytes) const;
  CUfunc_st* handle() const noexcept { return f_; }
  explicit operator bool() const noexcept { return f_ != nullptr; }

 private:
  CUfunc_st* f_ = nullptr;
};

class Module {
 public:
  /// Loads a cubin (or PTX) image on `device`; throws CudaError or NoDeviceError.
  static std::shared_ptr<Module> load(std::string_view image, int device);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  /// Throws CudaError naming the kernel when the module does not have it.
  Function function(const std::string& name) const;
  /// The kernel named `name`, or an empty Function when the module has none.
  Function find_function(const std::string& name) const;
  /// Address and size of a __device__ / __constant__ variable; nullopt when there is none.
  std::optional<std::pair<void*, std::size_t>> global(const std::string& name) const;
  /// The names of the module's kernels (empty when the driver is older than 12.4).
  std::vector<std::string> function_names() const;
  int device() const noexcept { return device_; }

 private:
  Module(CUmod_st* m, int device) : m_(m), device_(device) {}
  CUmod_st* m_;
  int device_;
};

}  // namespace kiln
