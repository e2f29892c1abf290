#pragma once
// Process-wide counters of what the kernel cache did, for tests and benchmarks.
//
//   auto before = stats().nvrtc_compiles.load();
//   compile_cached(req);
//   bool compiled = stats().nvrtc_compiles.load() > before;
#include <atomic>
#include <cstdint>

namespace kiln::cache {

struct CacheStats {
  std::atomic<std::uint64_t> disk_hits{0};       // binary loaded from disk
  std::atomic<std::uint64_t> disk_misses{0};     // no valid entry on first look
  std::atomic<std::uint64_t> nvrtc_compiles{0};  // NVRTC runs started by compile_cached
  std::atomic<std::uint64_t> bad_entries{0};     // entries that failed a check or were refused
  std::atomic<std::uint64_t> lock_waits{0};      // waits on another process's lock for a key
  std::atomic<std::uint64_t> thread_waits{0};    // waits on another thread compiling a key
};

/// The process-wide counters. Never reset by kiln; compare before/after.
CacheStats& stats();

}  // namespace kiln::cache
