#pragma once
// compile-or-load: the one entry point the rest of kiln uses to get a binary.
//
//   Binary bin = compile_cached(req);         // config from the environment
//
// Order: the read-only caches (cfg.readonly_dirs, in order) -> the user's cache -> (per-key
// lock, re-check the user's cache) -> NVRTC -> atomic write into the user's cache (then, with
// cfg.max_bytes, least recently used entries evicted down to 90% of it). Many
// threads or processes asking for the same missing kernel at once run NVRTC once: threads
// share the first caller's result, processes serialise on dir/ab/<hex>.lock (an flock,
// released by the kernel if its holder dies) and load the winner's entry. The wait is bounded
// (cfg.lock_timeout_s; a stopped holder keeps its lock) and named at warn level after a
// second; past it the waiter compiles too. Different kernels compile in parallel. Results
// are not kept in memory here; callers keep what they load (see MemoryCache).
#include "kiln/cache/binary.hpp"
#include "kiln/cache/cache_config.hpp"
#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/compile_request.hpp"
#include "kiln/cache/nvrtc_archs.hpp"  // check_arch: every ahead-of-time entry point checks first

namespace kiln::cache {

/// Where compile_cached found a binary.
enum class BinarySource {
  disk,           // the user's cache had it
  readonly_disk,  // a read-only cache (KILN_CACHE_READONLY_DIRS) had it
  other_process,  // another process compiled it while this one waited for the key's lock
  compiled,       // NVRTC ran in this process
};

/// The binary for `req`, from a disk cache or freshly compiled (and then stored); `source`
/// (when given) says which. Throws kiln::ValueError for an arch NVRTC cannot target or an
/// architecture option in req.options (check_request), kiln::CompileError if NVRTC rejects the
/// source, kiln::CacheMissError if cfg.disallow_compile is set and no cache has the binary.
Binary compile_cached(const CompileRequest& req, const CacheConfig& cfg = CacheConfig::from_env(),
                      BinarySource* source = nullptr);

}  // namespace kiln::cache
