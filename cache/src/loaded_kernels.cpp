#include "kiln/cache/loaded_kernels.hpp"

#include <cuda.h>

#include <algorithm>
#include <cstring>

#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/kernel_record.hpp"
#include "kiln/cache/memory_cache.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/device.hpp"

namespace kiln::cache {
namespace {

MemoryCache<LoadedKernel>& loaded_cache() {
  return process_table<LoadedKernel, struct loaded_kernels>();
}

}  // namespace

LoadedKernel compile_and_load(int device, MakeRequest make, const void* context,
                              bool entry_function) {
  const int arch = device_properties(device).arch();
  const CompileRequest req = make(context, arch);
  detail::logger().debug("kernel '{}': compiling or loading for {} on device {}", req.kernel_name,
                         arch_name(req.arch), device);
  // Record mode (KILN_CACHE_RECORD) costs nothing on hits: this is the miss path.
  const auto& record = record_path();
  BinarySource source = BinarySource::compiled;
  Binary bin = compile_cached(req, CacheConfig::from_env(), &source);
  if (!record.empty()) record_kernel(record, req, source == BinarySource::compiled);
  LoadedKernel out;
  out.module = Module::load(bin.cubin, device);
  if (entry_function) {
    const std::string& entry =
        req.name_expressions.empty() ? req.kernel_name : bin.lowered_names.front();
    out.function = out.module->function(entry);
    out.max_threads_per_block = out.function.max_threads_per_block();
  }
  out.lowered_names = std::move(bin.lowered_names);
  // Kernels that take more dynamic shared memory than the default 48 KiB (rows held partly in
  // shared memory) say so with this global: they may take what the device allows a block, and
  // ask for the largest shared-memory carveout, so that two such blocks share an SM.
  if (entry_function && bin.cubin.find("kiln_dynamic_shared_memory") != std::string::npos &&
      out.module->global("kiln_dynamic_shared_memory")) {
    const auto& props = device_properties(device);
    const int fixed = out.function.attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    out.function.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               int(props.shared_memory_per_block_optin) - fixed);
    out.function.set_attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
  }
  // Split reductions size their partials from this global (their reduce type may be a user
  // struct); asked only of modules that have it, so other loads make no failing driver call.
  if (bin.cubin.find("kiln_partial_bytes") != std::string::npos)
    if (const auto g = out.module->global("kiln_partial_bytes")) {
      out.partial_bytes = g->second;
      for (int k = 0;
           k < int(out.blocks_per_sm.size()) && (k + 1) * 32 <= out.max_threads_per_block; ++k)
        out.blocks_per_sm[std::size_t(k)] = std::uint8_t(
            std::min(255, out.function.max_active_blocks_per_multiprocessor((k + 1) * 32, 0)));
    }
  return out;
}

Hash128 kernel_key(const Hash128& definition, std::span<const std::byte> spec,
                   int device) noexcept {
  // definition (16) + device (4) + spec: one XXH3 over a stack buffer.
  constexpr std::size_t kHead = 20;
  std::byte buf[kHead + 512];
  std::memcpy(buf, &definition, 16);
  std::memcpy(buf + 16, &device, 4);
  if (spec.size() <= sizeof buf - kHead) {
    std::memcpy(buf + kHead, spec.data(), spec.size());
    return hash128(buf, kHead + spec.size());
  }
  // Larger specs: chain the two parts (still allocation-free).
  const Hash128 head = hash128(buf, kHead);
  const Hash128 tail = hash128(spec.data(), spec.size());
  const Hash128 both[2] = {head, tail};
  return hash128(both, sizeof both);
}

const LoadedKernel& loaded_kernel(const Hash128& key, int device, MakeRequest make,
                                  const void* context) {
  auto& cache = loaded_cache();
  if (const LoadedKernel* hit = cache.find(key)) return *hit;
  return cache.get_or_create(key, [&] { return compile_and_load(device, make, context); });
}

const LoadedKernel& loaded_entry(const Hash128& key, MakeLoaded make, const void* context) {
  auto& cache = loaded_cache();
  if (const LoadedKernel* hit = cache.find(key)) return *hit;
  return cache.get_or_create(key, [&] { return make(context); });
}

}  // namespace kiln::cache
