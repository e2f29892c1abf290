#include "elementwise_launch.hpp"

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <fmt/format.h>

#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/memory_cache.hpp"
#include "kiln/codegen/elementwise_emitter.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::detail {
namespace {

// Everything that selects one loaded kernel, as bytes: hashed on every call.
struct LaunchKey {
  std::uint64_t def_hi = 0, def_lo = 0;
  std::int32_t device = 0;
  std::int32_t reserved = 0;
  codegen::ElementwiseSpec spec;
};
static_assert(offsetof(LaunchKey, spec) == 24);

cache::Key hash_key(const LaunchKey& k) {
  const std::size_t bytes = offsetof(LaunchKey, spec) + k.spec.key_size();
  const XXH128_hash_t h = XXH3_128bits(&k, bytes);
  return {h.high64, h.low64};
}

// Leaked on purpose: modules must not be unloaded after the driver shut down at exit.
cache::MemoryCache<LoadedElementwise>& loaded_cache() {
  static auto* cache = new cache::MemoryCache<LoadedElementwise>();
  return *cache;
}

LoadedElementwise load(const codegen::ElementwiseDefinition& def,
                       const codegen::ElementwiseSpec& spec, int device) {
  const DeviceProperties& props = device_properties(device);
  cache::CompileRequest req;
  req.source = codegen::emit_elementwise(def, spec);
  req.kernel_name = def.name;
  req.options = def.nvrtc_options;
  req.arch = props.arch();
  logger().debug("elementwise kernel '{}': compiling or loading for sm_{} on device {}", def.name,
                 req.arch, device);
  cache::Binary bin = cache::compile_cached(req);
  LoadedElementwise out;
  out.module = Module::load(bin.cubin, device);
  out.function = out.module->function(def.name);
  out.max_threads_per_block = out.function.max_threads_per_block();
  return out;
}

}  // namespace

const LoadedElementwise& loaded_elementwise(const codegen::ElementwiseDefinition& def,
                                            const codegen::ElementwiseSpec& spec, int device) {
  LaunchKey key;
  key.def_hi = def.hash_hi;
  key.def_lo = def.hash_lo;
  key.device = device;
  key.spec = spec;
  const cache::Key k = hash_key(key);
  auto& cache = loaded_cache();
  if (const LoadedElementwise* hit = cache.find(k)) return *hit;
  return cache.get_or_create(k, [&] { return load(def, spec, device); });
}

std::byte* KernelArgs::begin_arg(std::size_t size, std::size_t align) {
  used_ = (used_ + align - 1) / align * align;
  if (used_ + size > kCapacity || count_ == kMaxArgs)
    throw ValueError(fmt::format("kernel arguments need more than {} bytes", kCapacity));
  std::byte* p = buffer_ + used_;
  args_[count_++] = p;
  used_ += size;
  return p;
}

void KernelArgs::put(const void* src, std::size_t size, std::size_t align) {
  std::memcpy(begin_arg(size, align), src, size);
}

}  // namespace kiln::detail
