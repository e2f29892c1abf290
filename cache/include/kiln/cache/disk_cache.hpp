#pragma once
// The on-disk kernel cache: one file per entry, dir/<first two hex digits>/<hex>.kbin (paths
// in cache_layout.hpp, format in entry_format.hpp, read by entry_file.hpp's one reader).
// Writes go to a temp file in the same folder, are fsynced, then renamed into place, so
// readers see a whole old file, a whole new file, or none.
//
// The cache holds code that will run, so folders are created 0700, and a folder or entry
// kiln does not trust (cache_layout.hpp) is refused: logged as a warning, treated as a miss,
// never written into. An entry or fan-out path that is not a regular file or folder (a FIFO,
// socket, device) is refused the same way without being opened, since opening it could block
// forever. Nothing here throws for I/O or permission problems; the worst outcome is a miss.
//
//   DiskCache disk(cfg.dir);
//   if (auto bin = disk.load(key)) return *bin;
//   Binary bin = nvrtc_compile(req);
//   disk.store(key, bin, cfg.save_source ? req.source : "");
#include <filesystem>
#include <optional>
#include <string_view>

#include "kiln/cache/binary.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/cache_layout.hpp"

namespace kiln::cache {

class DiskCache {
 public:
  /// Does not create `dir` (store does, 0700); checks it if it exists. With Access::read (a
  /// deployed cache), nothing is ever written there: no folders, entries, locks or access times.
  explicit DiskCache(std::filesystem::path dir, Access access = Access::write);

  /// The binary stored under `key`; nullopt on a miss, on an unusable folder, or on a bad
  /// entry (a failed check is logged as a warning and counted in stats().bad_entries). A hit
  /// in a writable cache marks the entry used (its access time) for least-recently-used pruning.
  std::optional<Binary> load(const Key& key) const;

  /// Atomically writes the entry for `key` (and, when `source_to_save_or_empty` is not empty,
  /// <hex>.cu beside it); true when the entry was written. Failures are logged, never thrown:
  /// the caller has its binary anyway.
  bool store(const Key& key, const Binary& bin, std::string_view source_to_save_or_empty);

  /// Where this cache's files are (entry_path, lock_path, source_path, ...).
  const CacheLayout& layout() const noexcept { return layout_; }
  std::filesystem::path entry_path(const Key& key) const { return layout_.entry_path(key); }
  /// The per-key lock file compile_cached uses for single-flight.
  std::filesystem::path lock_path(const Key& key) const { return layout_.lock_path(key); }
  std::filesystem::path source_path(const Key& key) const { return layout_.source_path(key); }

  const std::filesystem::path& dir() const noexcept { return layout_.dir(); }
  /// False when the folder exists but may not be read (cache_layout.hpp's trust rule).
  bool usable() const noexcept { return usable_; }

  /// Creates the fan-out folder for `key` (and `dir`) 0700 if missing and checks that this
  /// user may write there. False, with a logged warning, if they cannot be made or are refused,
  /// and always for a read-only cache.
  bool prepare_folder(const Key& key);

 private:
  CacheLayout layout_;
  Access access_;
  bool usable_ = true;
};

}  // namespace kiln::cache
