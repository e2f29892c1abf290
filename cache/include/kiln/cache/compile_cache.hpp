#pragma once
// compile-or-load: the one entry point the rest of kiln uses to get a binary.
//
//   Binary bin = compile_cached(req);         // config from the environment
//
// Order: disk entry -> (per-key lock, re-check disk) -> NVRTC -> atomic write. Many
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

namespace kiln::cache {

/// The binary for `req`, from the disk cache or freshly compiled (and then stored).
/// Throws kiln::CompileError if NVRTC rejects the source, kiln::CacheMissError if
/// cfg.disallow_compile is set and the binary is not in the cache.
Binary compile_cached(const CompileRequest& req, const CacheConfig& cfg = CacheConfig::from_env());

}  // namespace kiln::cache
