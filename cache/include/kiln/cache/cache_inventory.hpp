#pragma once
// What is in an on-disk kernel cache folder, file by file, and the maintenance kiln-cache
// does on it (verify, prune, clear) and the automatic size limit. Nothing here needs a GPU.
//
//   Inventory inv = scan_cache(cfg.dir);     // throws kiln::Error if dir cannot be looked at
//   for (const CacheFile& f : inv.files)
//     if (f.type == CacheFileType::entry && f.problem.empty()) use(f.key, f.size, f.arch);
//   PruneResult r = prune_cache(cfg.dir, {.max_bytes = 1 << 30});   // LRU down to 1 GiB
//
// An entry counts only if DiskCache::load would load it: both read it with read_entry_file
// (entry_file.hpp), and both take names and trust rules from cache_layout.hpp. Everything else
// in the folder is listed with the reason it is not an entry. Removal never touches a file
// another process is writing: entries are only removed while holding their per-key lock (the
// one compile_cached takes), temp files only when their writer is gone, lock files only when
// nobody holds them.
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
  int arch = 0;      // as nvrtc_archs.hpp holds it (arch_specific(90) for sm_90a)
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
  int arch = 0;                      // valid entries: from the cubin
  std::vector<std::string> kernels;  // valid entries: the cubin's entry points
  std::string nvrtc_version;         // valid entries: the compiler's ("13.0.88"; "" unknown)
  /// Valid entries made by another NVRTC than this process's: their keys hold that version, so
  /// this kiln never loads them (kiln-cache prune --other-nvrtc removes them).
  bool other_nvrtc = false;
  std::optional<EntryMetadata> meta;  // valid entries with a .meta sidecar
};

struct Inventory {
  std::filesystem::path dir;
  bool exists = false;  // false: the folder is not there (nothing else is set)
  /// Folders kiln refuses to read (the top one or a fan-out), one line each naming the folder
  /// and why; their entries are listed as bad.
  std::vector<std::string> refused_folders;
  std::vector<CacheFile> files;  // sorted by path

  /// Valid entries / bad entries (type entry with a problem) counts and bytes.
  std::size_t valid_entries() const;
  std::size_t bad_entries() const;
  std::uint64_t entry_bytes() const;
  std::size_t other_nvrtc_entries() const;
};

/// Looks at every file under `dir` (never following links). With check_entries, every entry
/// is read and checked in full (header, key, size, checksum) and described from its cubin.
/// Throws kiln::Error when `dir` exists but cannot be looked at (not a folder, unreadable); a
/// folder kiln refuses is scanned and named in refused_folders.
Inventory scan_cache(const std::filesystem::path& dir, bool check_entries = true);

/// Writes (atomically) / reads the .meta sidecar of the entry for `key` in `dir`.
bool write_entry_metadata(const std::filesystem::path& dir, const Key& key,
                          const EntryMetadata& meta);
std::optional<EntryMetadata> read_entry_metadata(const std::filesystem::path& dir, const Key& key);

struct PruneOptions {
  std::optional<std::uint64_t> max_bytes;    // keep the most recently used entries up to this
  std::optional<std::int64_t> older_than_s;  // remove entries unused for longer than this
  bool bad_entries = false;                  // remove entries that fail their checks
  bool other_nvrtc = false;                  // remove entries made by another NVRTC
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
/// scan_cache does, and for a folder kiln refuses (verify --fix repairs those); a missing
/// folder is an empty result.
PruneResult prune_cache(const std::filesystem::path& dir, const PruneOptions& opts);

/// The automatic size limit (KILN_CACHE_MAX_SIZE), run after a write: when the entries in `dir`
/// take more than `max_bytes`, the least recently used are removed down to 90% of it (so the
/// next writes do not each prune). Never throws; what it removed is logged at info level.
PruneResult enforce_size_limit(const std::filesystem::path& dir, std::uint64_t max_bytes);

struct FolderRepair {
  std::size_t fixed = 0;            // folders whose group/other write bits were removed
  std::vector<std::string> errors;  // refused folders kiln cannot repair, with why
};
/// verify --fix: removes group/other write permission (chmod go-w) from the refused folders of
/// `inv` that this user owns; another user's folder is reported, never changed.
FolderRepair repair_folder_modes(const Inventory& inv);

/// precompile --shared: makes `dir`, its fan-out folders and kiln's files in them that this
/// user owns readable by every user and writable by this user only (folders 0755, files
/// 0644), so the folder can be deployed as a read-only cache (KILN_CACHE_READONLY_DIRS) for
/// other users, e.g. a service user running an image built as root. Returns the errors.
std::vector<std::string> share_for_reading(const std::filesystem::path& dir);

}  // namespace kiln::cache
