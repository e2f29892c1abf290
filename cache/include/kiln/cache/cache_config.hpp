#pragma once
// Where and how compile_cached keeps binaries. Usually read from the environment:
//
//   KILN_CACHE_DIR=/path        cache folder (default $XDG_CACHE_HOME/kiln, else ~/.cache/kiln)
//   KILN_CACHE_IN_MEMORY=1      no disk reads or writes at all
//   KILN_CACHE_SAVE_SOURCE=1    keep <hex>.cu beside each binary, for debugging
//   KILN_DISALLOW_COMPILE=1     a compile attempt throws kiln::CacheMissError
//   KILN_CACHE_LOCK_TIMEOUT=30  seconds to wait for another process compiling the same kernel
//                               before compiling it too (0: do not wait)
//
//   auto cfg = CacheConfig::from_env();
//   cfg.save_source = true;
//   Binary bin = compile_cached(req, cfg);
#include <filesystem>

namespace kiln::cache {

struct CacheConfig {
  std::filesystem::path dir;
  bool in_memory_only = false;
  bool save_source = false;
  bool disallow_compile = false;
  /// How long compile_cached waits on another process's lock for the same key. A stopped
  /// holder (Ctrl-Z) would otherwise block every waiter forever; past this, the waiter compiles
  /// too and the atomic rename keeps the entry valid.
  double lock_timeout_s = 30;

  /// Reads the variables above. Flags are true for 1/true/yes/on (any case). With no
  /// KILN_CACHE_DIR, no usable XDG_CACHE_HOME (it must be absolute) and no home folder,
  /// the cache is in-memory only. A KILN_CACHE_LOCK_TIMEOUT that is not a number >= 0 is
  /// logged and the default kept.
  static CacheConfig from_env();
};

}  // namespace kiln::cache
