#pragma once
// The one description of a kernel cache folder on disk: where each file of an entry lives, how
// temp files are named, which names are kiln's, and which folders and files kiln trusts. The
// disk cache, the inventory (kiln-cache list/stats/verify/prune/clear/show), precompile and
// record mode all go through it, so they agree on every path and every refusal.
//
//   dir/ab/<32 hex>.kbin              an entry (entry_format.hpp)
//   dir/ab/<32 hex>.lock              its compile lock (flock; the holder writes "<pid> <host>")
//   dir/ab/<32 hex>.cu                its saved source (KILN_CACHE_SAVE_SOURCE=1, --save-source)
//   dir/ab/<32 hex>.meta              kind/name/arch written by kiln-cache precompile
//   dir/ab/<file>.tmp.<pid>.<n>       a write in progress (or left by a crash)
//
//   CacheLayout layout(cfg.dir);
//   layout.entry_path(key);                           // dir/ab/ab12...ef.kbin
//   auto name = CacheLayout::classify("ab", "ab12...ef.lock");   // {lock, key}
//   if (auto why = folder_problem(dir, FolderKind::top, Access::read)) log(*why);
#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/cache/cache_key.hpp"

namespace kiln::cache {

/// What a file in a fan-out folder is, by its name.
enum class CacheFileType {
  entry,     // <hex>.kbin: a kernel binary
  lock,      // <hex>.lock: per-key compile lock
  source,    // <hex>.cu: saved source
  metadata,  // <hex>.meta: kind/name/arch written by kiln-cache precompile
  temp,      // <name>.tmp.<pid>.<n>: a write in progress (or left by a crash)
  stray,     // anything else: not kiln's, or in the wrong place
};
const char* to_string(CacheFileType t) noexcept;

class CacheLayout {
 public:
  explicit CacheLayout(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path& dir() const noexcept { return dir_; }

  /// dir/ab: the fan-out folder of `key` (its first two hex digits).
  std::filesystem::path fanout(const Key& key) const;
  std::filesystem::path entry_path(const Key& key) const;   // dir/ab/<hex>.kbin
  std::filesystem::path lock_path(const Key& key) const;    // dir/ab/<hex>.lock
  std::filesystem::path source_path(const Key& key) const;  // dir/ab/<hex>.cu
  std::filesystem::path meta_path(const Key& key) const;    // dir/ab/<hex>.meta

  /// A fresh temp name beside `target` (<target>.tmp.<pid>.<n>), unique across the processes
  /// and threads writing one folder.
  static std::filesystem::path temp_path(const std::filesystem::path& target);
  /// The writer's pid in a temp file's name, or 0 when the name has none.
  static pid_t temp_writer(const std::filesystem::path& temp);

  /// True for a fan-out folder's name: two lowercase hex digits.
  static bool is_fanout_name(std::string_view name) noexcept;
  struct Name {
    CacheFileType type = CacheFileType::stray;
    std::optional<Key> key;  // for every type but stray
  };
  /// What the file `name` in fan-out folder `fanout_name` is: a key whose first two digits are
  /// not the folder's is in the wrong place, so stray.
  static Name classify(std::string_view fanout_name, std::string_view name);

 private:
  std::filesystem::path dir_;
};

/// What kiln does with a cache folder or file.
enum class Access {
  /// Load entries: the folder and the file must be owned by this user or by root, and writable
  /// by nobody else (group/others). So a cache precompiled as root into an image and made
  /// readable by all (0755 folders, 0644 files) serves every user, and nobody but root or the
  /// owner can have put code there.
  read,
  /// Create folders, write entries, take locks: additionally owned by this user. kiln never
  /// writes into a folder that is not its user's, even one it may read.
  write,
};

/// Why kiln must not use a folder or file with this stat for `access`, or nullopt when it may.
std::optional<std::string> trust_problem(const struct stat& st, Access access = Access::read);

/// Why `dir` cannot be a cache folder, as one line naming it ("/x is not a folder (it is a
/// regular file)", "/x is refused as a kernel cache folder: writable by group or others (fix
/// ...)"), or nullopt when it can. A folder that does not exist is no problem (`*missing` is
/// set when given). The top folder may be a link to a folder (the user chose the path), so it
/// is looked at through links; a fan-out folder is kiln's own, so a link there is refused.
enum class FolderKind { top, fanout };
std::optional<std::string> folder_problem(const std::filesystem::path& dir, FolderKind kind,
                                          Access access, bool* missing = nullptr);

/// Why new entries cannot be written into `dir` (one line), or nullopt when they can. With
/// `create`, a missing folder is created 0700 (its parents too). The check writes and removes
/// a probe file, so a read-only or full file system is caught, not guessed from mode bits.
std::optional<std::string> writable_folder_problem(const std::filesystem::path& dir, bool create);

}  // namespace kiln::cache
