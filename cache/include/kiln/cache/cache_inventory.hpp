#pragma once
// What is in an on-disk kernel cache folder, file by file, and the maintenance kiln-cache
// does on it (verify, prune, clear). Nothing here needs a GPU.
//
//   Inventory inv = scan_cache(cfg.dir);              // throws kiln::Error if dir is unusable
//   for (const CacheFile& f : inv.files)
//     if (f.type == CacheFileType::entry && f.problem.empty()) use(f.key, f.size, f.arch);
//   PruneResult r = prune_cache(cfg.dir, {.max_bytes = 1 << 30});   // LRU down to 1 GiB
//
// An entry counts only if DiskCache::load would load it: both read it with read_entry_file
// (entry_file.hpp), and both take names and trust rules from cache_layout.hpp. Everything else
// in the folder is listed with the reason it is not an entry. Removal never touches a file another process is writing: entries are only
// removed while holding their per-key lock (the one compile_cached takes), temp files only
// when their writer is gone, lock files only when nobody holds them.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/cache_layout.hpp"

namespace kiln::cache {

/// What kiln-cache knows about an entry beyond its binary (the .meta sidecar).
struct EntryMetadata {
  std::string kind;  // "elementwise", "source", ...
  std::string name;  // kernel name
  int arch = 0;
};

struct CacheFile {
  std::filesystem::path path;
  CacheFileType type = CacheFileType::stray;
  std::optional<Key> key;      // from the file name, when it has one
  std::uint64_t size = 0;      // bytes (lstat)
  std::int64_t mtime = 0;      // seconds since the epoch
  std::int64_t last_used = 0;  // max(atime, mtime): what LRU pruning orders by
  /// Empty for a valid entry (and for well-formed lock/source/metadata/temp files); else why
  /// the file is bad or not kiln's ("symbolic link, not an entry", "payload checksum mismatch").
  std::string problem;
  int arch = 0;                       // valid entries: from the cubin
  std::vector<std::string> kernels;   // valid entries: the cubin's entry points
  std::optional<EntryMetadata> meta;  // valid entries with a .meta sidecar
};

struct Inventory {
  std::filesystem::path dir;
  bool exists = false;           // false: the folder is not there yet (nothing else is set)
  std::vector<CacheFile> files;  // sorted by path

  /// Valid entries / bad entries (type entry with a problem) counts and bytes.
  std::size_t valid_entries() const;
  std::size_t bad_entries() const;
  std::uint64_t entry_bytes() const;
};

/// Looks at every file under `dir` (never following links). With check_entries, every entry
/// is read and checked in full (header, key, size, checksum) and described from its cubin.
/// Throws kiln::Error when `dir` exists but cannot be used as a cache folder (not a folder,
/// owned by another user, writable by others, unreadable).
Inventory scan_cache(const std::filesystem::path& dir, bool check_entries = true);

/// Writes (atomically) / reads the .meta sidecar of the entry for `key` in `dir`.
bool write_entry_metadata(const std::filesystem::path& dir, const Key& key,
                          const EntryMetadata& meta);
std::optional<EntryMetadata> read_entry_metadata(const std::filesystem::path& dir, const Key& key);

struct PruneOptions {
  std::optional<std::uint64_t> max_bytes;    // keep the most recently used entries up to this
  std::optional<std::int64_t> older_than_s;  // remove entries unused for longer than this
  bool bad_entries = false;                  // remove entries that fail their checks
  bool everything = false;                   // clear: every entry and kiln file
};

struct PruneResult {
  std::size_t entries_removed = 0;
  std::uint64_t bytes_removed = 0;
  std::size_t busy_skipped = 0;     // entries whose lock another process held
  std::size_t locks_removed = 0;    // stale lock files
  std::size_t temps_removed = 0;    // temp files whose writer is gone
  std::vector<std::string> errors;  // files that could not be removed, with why
};

/// Removes what `opts` asks for (least recently used first for max_bytes), with each entry's
/// sidecars, plus stale lock files and dead writers' temp files. Throws kiln::Error as
/// scan_cache does; a missing folder is an empty result.
PruneResult prune_cache(const std::filesystem::path& dir, const PruneOptions& opts);

}  // namespace kiln::cache
