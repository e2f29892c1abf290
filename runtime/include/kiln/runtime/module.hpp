#pragma once
// Loaded GPU code: a cubin loaded into a device's context, and launching its kernels through
// the driver, whose entry points are fetched at run time (kiln never links libcuda).
//
//   auto m = kiln::Module::load(cubin, kiln::current_device());
//   kiln::Function f = m->function("my_kernel");
//   void* args[] = {&ptr, &n};
//   f.launch({blocks}, {256}, args, 0, kiln::current_stream_handle());
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

struct CUmod_st;
struct CUfunc_st;

namespace kiln {

class Function {
 public:
  Function() = default;
  explicit Function(CUfunc_st* f) : f_(f) {}
  /// One driver launch: cuLaunchKernel. No allocation, no locks.
  void launch(dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
              cudaStream_t stream) const;
  int max_threads_per_block() const;
  int num_registers() const;
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
  /// Bytes of the __device__ variable `name`, 0 when the module has none of that name.
  std::size_t global_size(const std::string& name) const;
  int device() const noexcept { return device_; }

 private:
  Module(CUmod_st* m, int device) : m_(m), device_(device) {}
  CUmod_st* m_;
  int device_;
};

}  // namespace kiln
