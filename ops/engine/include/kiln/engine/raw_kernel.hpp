#pragma once
// kiln::RawKernel: CuPy's RawKernel in C++. You bring a whole CUDA C++ kernel; kiln compiles
// it on first launch (through the memory and disk kernel caches), then launches it with
// checked arguments on the current device's current stream.
//
//   kiln::RawKernel add(R"(
//     extern "C" __global__ void my_add(const float* x, const float* y, float* z, size_t n) {
//       size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
//       if (i < n) z[i] = x[i] + y[i];
//     })", "my_add");
//   add({(n + 255) / 256}, {256}, x, y, z, std::size_t(n));          // 1-3-D grid and block
//   add(grid, block, x, y, z, std::size_t(n), kiln::launch_options{.shared_mem = 4096, .stream =
//   &s});
//
// Arguments (see raw_args.hpp): ndarrays pass their device pointer, other values their bytes.
// Each launch is checked against the parameter layout the driver reports for the loaded
// kernel (count, sizes and offsets): passing an int where the kernel takes size_t is a
// TypeError naming the kernel, the parameter, the size expected and the C++ type given.
// Grid and block limits are checked before the device is touched (ValueError).
//
// `name` is the kernel's name: an extern "C" name, a C++ name or template instantiation
// ("f<float>", through NVRTC name expressions), or an already mangled name ("_Z...").
// Options: NVRTC options as given ("-I<dir>", "-DN=4", "--use_fast_math"; the architecture is
// always the device's). Headers found through -I (or beside a .cu file) are part of the cache
// key by their contents: edit one and the kernel is recompiled (see raw_module.hpp).
//
// Cost: the first launch per device compiles (or loads from the disk cache) and loads; later
// launches find the loaded kernel by a pointer per device, check the arguments and call
// cuLaunchKernel: no strings, no allocation, no locks.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/compile_request.hpp"
#include "kiln/engine/raw_args.hpp"
#include "kiln/runtime/hash128.hpp"

namespace kiln {

namespace detail {
struct RawSource;
struct RawFunctionState;
}  // namespace detail

struct raw_options {
  /// NVRTC options, e.g. {"-I/path/include", "-DTILE=32", "--use_fast_math"}.
  std::vector<std::string> options;
  /// RawModule: template instantiations or overloads to compile, e.g. "f<float, 4>".
  std::vector<std::string> name_expressions;
  /// Launch with cuLaunchCooperativeKernel (grid-wide sync through cooperative_groups); the
  /// whole grid must be co-resident, which kiln checks before launching.
  bool cooperative = false;
  /// Compile for the device's arch-specific target (sm_90a on a 9.0 device), for code that
  /// uses features of exactly that architecture (wgmma, setmaxnreg, ...). Such a binary loads
  /// only on that compute capability; ahead of time, compile_requests(90) gives sm_90a too.
  bool arch_specific = false;
};

/// What the driver says about a loaded kernel (CuPy's RawKernel attributes).
struct kernel_attributes {
  int max_threads_per_block = 0;
  int shared_size_bytes = 0;  // static shared memory
  int const_size_bytes = 0;
  int local_size_bytes = 0;
  int num_regs = 0;
  int ptx_version = 0;     // e.g. 90
  int binary_version = 0;  // e.g. 90
  int max_dynamic_shared_size_bytes = 0;
  int preferred_shared_memory_carveout = -1;  // percent, -1: no preference
};

class RawKernel {
 public:
  /// Checks the options and reads the user headers the code includes; compiles nothing.
  RawKernel(std::string_view code, std::string_view name, raw_options options = {});
  /// A kernel from a file: .cubin, .ptx and .fatbin are loaded as they are; anything else is
  /// CUDA C++ source (with the file's folder searched for its #include "..." headers).
  static RawKernel from_file(const std::filesystem::path& path, std::string_view name,
                             raw_options options = {});

  /// k(grid, block, args...), optionally ending with launch_options.
  template <class... A>
  void operator()(dim3 grid, dim3 block, const A&... args) const {
    const raw_arg argv[sizeof...(A) + 1] = {raw_arg(args)..., raw_arg(0)};
    launch(grid, block, std::span<const raw_arg>(argv, sizeof...(A)));
  }
  /// The same, with arguments gathered at run time (a trailing launch_options is allowed).
  void launch(dim3 grid, dim3 block, std::span<const raw_arg> args) const;

  /// Attributes of the kernel loaded on the current device (compiles it if needed).
  kernel_attributes attributes() const;
  /// cudaFuncAttributeMaxDynamicSharedMemorySize on the current device.
  void set_max_dynamic_shared_memory(int bytes) const;
  /// cudaFuncAttributePreferredSharedMemoryCarveout (percent of L1 as shared memory, -1..100).
  void set_preferred_shared_memory_carveout(int percent) const;

  const std::string& name() const noexcept;
  /// The symbol loaded from the module on the current device (a mangled name for C++ names).
  std::string symbol() const;

  // ---- ahead of time (no GPU needed): kiln-cache, CPU tests ----
  /// The compile request for `arch` (e.g. 90); none for a kernel loaded from a binary file.
  std::vector<cache::CompileRequest> compile_requests(int arch) const;

 private:
  friend class RawModule;
  RawKernel(std::shared_ptr<const detail::RawSource> src, std::string name, bool cooperative);
  std::shared_ptr<detail::RawFunctionState> state_;
};

}  // namespace kiln
