#pragma once
// Where and how compile_cached keeps binaries. Usually read from the environment:
//
//   KILN_CACHE_DIR=/path        cache folder (default $XDG_CACHE_HOME/kiln, else ~/.cache/kiln)
//   KILN_CACHE_READONLY_DIRS=/opt/app/kiln:/srv/kiln
//                               deployed caches, searched in order before KILN_CACHE_DIR and
//                               never written or locked (misses compile into KILN_CACHE_DIR)
//   KILN_CACHE_MAX_SIZE=2G      after a write passes it, least recently used entries are
//                               evicted from KILN_CACHE_DIR (default: no limit)
//   KILN_CACHE_IN_MEMORY=1      no disk reads or writes at all
//   KILN_CACHE_SAVE_SOURCE=1    keep <hex>.cu beside each binary, for debugging
//   KILN_DISALLOW_COMPILE=1     a compile attempt throws kiln::CacheMissError
//   KILN_CACHE_LOCK_TIMEOUT=30  seconds to wait for another process compiling the same kernel
//                               before compiling it too (0: do not wait)
//
//   auto cfg = CacheConfig::from_env();
//   cfg.save_source = true;
//   Binary bin = compile_cached(req, cfg);
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace kiln::cache {

struct CacheConfig {
  /// The user's own cache: read, and written on a miss (only if this user owns it).
  std::filesystem::path dir;
  /// Caches to read before `dir`, never written or locked: a cache precompiled into an image
  /// and deployed read-only (cache_layout.hpp says which owners kiln trusts).
  std::vector<std::filesystem::path> readonly_dirs;
  /// Evict least recently used entries from `dir` once a write makes it larger than this.
  std::optional<std::uint64_t> max_bytes;
  bool in_memory_only = false;
  bool save_source = false;
  bool disallow_compile = false;
  /// How long compile_cached waits on another process's lock for the same key. A stopped
  /// holder (Ctrl-Z) would otherwise block every waiter forever; past this, the waiter compiles
  /// too and the atomic rename keeps the entry valid.
  double lock_timeout_s = 30;

  /// Reads the variables above. Flags are true for 1/true/yes/on (any case). With no
  /// KILN_CACHE_DIR, no usable XDG_CACHE_HOME (it must be absolute) and no home folder,
  /// the cache is in-memory only (the read-only caches are still read). A
  /// KILN_CACHE_LOCK_TIMEOUT that is not a number >= 0, or a KILN_CACHE_MAX_SIZE that is not a
  /// size (parse_size), is logged and the default kept.
  static CacheConfig from_env();
};

}  // namespace kiln::cache
