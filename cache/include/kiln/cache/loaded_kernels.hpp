#pragma once
// The one loaded-kernel cache of the process, for every kernel kind: (kind's structural key,
// device) -> a function loaded on that device. A hit hashes a small POD key and finds the
// function under a shared lock: no strings, no NVRTC, no file I/O, no allocation. A miss is
// the single place where kiln generates, compiles (through the disk cache, cache/) and loads
// code, so whatever must see every kernel a program loads hooks in here.
//
//   const LoadedKernel& k = loaded_kernel(kernel_key(def.hash, spec, device), device,
//                                         [&](int arch) { return request_for(spec, arch); });
//   k.function.launch(grid, block, args.argv(), 0, stream);
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/cache/compile_request.hpp"
#include "kiln/runtime/hash128.hpp"
#include "kiln/runtime/module.hpp"

namespace kiln::cache {

/// A kernel loaded on one device, with what launches need to know about it.
struct LoadedKernel {
  std::shared_ptr<Module> module;
  Function function;  // the request's kernel_name (or its first lowered name expression)
  int max_threads_per_block = 0;
  std::vector<std::string> lowered_names;  // parallel to the request's name_expressions
  /// The function's parameter layout from the driver (cuFuncGetParamInfo), fetched once
  /// when raw kernels load; params_known is false on drivers older than 12.4.
  std::vector<ParamSlot> params;
  bool params_known = false;
  /// Bytes of one reduction partial (the `kiln_partial_bytes` global of split reduction
  /// kernels, whose reduce type may be a user struct); 0 for other kernels.
  std::size_t partial_bytes = 0;
  /// Split reductions only: blocks of (k + 1) * 32 threads one multiprocessor holds at once
  /// (the driver's occupancy, fetched at load), so a launch can fill the GPU in whole waves;
  /// 0 where unknown.
  std::array<std::uint8_t, 32> blocks_per_sm{};
};

/// Builds the compile request of a missing kernel for an architecture (e.g. 90).
using MakeRequest = cache::CompileRequest (*)(const void* context, int arch);

/// The key of one loaded kernel: the definition's hash, the kind's spec bytes (a POD whose
/// used prefix identifies it), the device. Allocation-free.
Hash128 kernel_key(const Hash128& definition, std::span<const std::byte> spec, int device) noexcept;
template <class Spec>
Hash128 kernel_key(const Hash128& definition, const Spec& spec, int device) noexcept {
  return kernel_key(definition, std::as_bytes(std::span(&spec, 1)).first(spec.key_size()), device);
}

/// The loaded kernel for `key` on `device`: from memory, or (the one miss path) built from
/// make(arch), compiled through the disk cache and loaded. Concurrent misses of one key load
/// it once.
const LoadedKernel& loaded_kernel(const Hash128& key, int device, MakeRequest make,
                                  const void* context);
template <class F>
const LoadedKernel& loaded_kernel(const Hash128& key, int device, const F& make) {
  return loaded_kernel(
      key, device, [](const void* f, int arch) { return (*static_cast<const F*>(f))(arch); },
      &make);
}

/// The same cache, for entries a kind builds itself on a miss (a module loaded from a user's
/// cubin/PTX image, a function looked up in an already loaded module): make(context) runs
/// at most once per key.
using MakeLoaded = LoadedKernel (*)(const void* context);
const LoadedKernel& loaded_entry(const Hash128& key, MakeLoaded make, const void* context);
template <class F>
const LoadedKernel& loaded_entry(const Hash128& key, const F& make) {
  return loaded_entry(
      key, [](const void* f) { return (*static_cast<const F*>(f))(); }, &make);
}

/// Compiles (through the disk cache) and loads `make(arch)` on `device` without looking up
/// or storing anything: the miss path of loaded_kernel, for loaded_entry callers.
LoadedKernel compile_and_load(int device, MakeRequest make, const void* context,
                              bool entry_function = true);
template <class F>
LoadedKernel compile_and_load(int device, const F& make, bool entry_function = true) {
  return compile_and_load(
      device, [](const void* f, int arch) { return (*static_cast<const F*>(f))(arch); }, &make,
      entry_function);
}

}  // namespace kiln::cache
