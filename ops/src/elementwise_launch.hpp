#pragma once
// Private to ops/: the loaded-kernel cache and argument marshalling of elementwise calls.
#include <cstddef>
#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/elementwise_spec.hpp"
#include "kiln/runtime/module.hpp"

namespace kiln::detail {

/// A kernel loaded on one device, with what launches need to know about it and the device.
struct LoadedElementwise {
  std::shared_ptr<Module> module;
  Function function;
  int max_threads_per_block = 0;
};

/// The loaded kernel for (definition, spec, device): from memory, or generated, compiled
/// (through the disk cache) for the device's arch and loaded.
const LoadedElementwise& loaded_elementwise(const codegen::ElementwiseDefinition& def,
                                            const codegen::ElementwiseSpec& spec, int device);

/// Kernel arguments laid out for cuLaunchKernel: args[k] points at argument k's bytes.
class KernelArgs {
 public:
  static constexpr std::size_t kCapacity = 16384;
  static constexpr std::size_t kMaxArgs = codegen::kMaxParams + 2;

  /// Appends a value of `size` bytes (copied from `src`) aligned to `align`.
  void put(const void* src, std::size_t size, std::size_t align);
  template <class T>
  void put(const T& v) { put(&v, sizeof(T), alignof(T)); }
  /// Starts an argument of `align` and returns where to write its bytes.
  std::byte* begin_arg(std::size_t size, std::size_t align);
  void** argv() noexcept { return args_; }

 private:
  alignas(16) std::byte buffer_[kCapacity];
  void* args_[kMaxArgs];
  std::size_t used_ = 0, count_ = 0;
};

}  // namespace kiln::detail
