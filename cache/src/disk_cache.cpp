#include "kiln/cache/disk_cache.hpp"

#include <sys/stat.h>

#include <mutex>
#include <set>
#include <string>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/entry_file.hpp"
#include "kiln/cache/entry_format.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "posix_file.hpp"

namespace kiln::cache {
namespace fs = std::filesystem;

namespace {

// A refused folder would otherwise warn on every compile; once per folder is enough.
void warn_folder_once(const std::string& problem) {
  static std::mutex m;
  static std::set<std::string> warned;
  {
    std::lock_guard lock(m);
    if (!warned.insert(problem).second) return;
  }
  kiln::detail::logger().warn(
      "not using kernel cache folder: {}; kernels it lacks are compiled in memory", problem);
}

// nullopt if `dir` is missing; else whether it is a folder we may use (refusals are logged).
std::optional<bool> folder_ok(const fs::path& dir, FolderKind kind, Access access) {
  bool missing = false;
  if (auto why = folder_problem(dir, kind, access, &missing)) {
    warn_folder_once(*why);
    return false;
  }
  if (missing) return std::nullopt;
  return true;
}

void bad_entry(const fs::path& p, const std::string& why) {
  stats().bad_entries.fetch_add(1, std::memory_order_relaxed);
  kiln::detail::logger().warn("ignoring kernel cache entry {}: {}; it will be recompiled",
                              p.string(), why);
}

}  // namespace

DiskCache::DiskCache(fs::path dir, Access access) : layout_(std::move(dir)), access_(access) {
  if (layout_.dir().empty()) {
    usable_ = false;
    return;
  }
  usable_ = folder_ok(layout_.dir(), FolderKind::top, Access::read).value_or(true);
}

std::optional<Binary> DiskCache::load(const Key& key) const {
  if (!usable_) return std::nullopt;
  const fs::path fanout = layout_.fanout(key);
  if (const auto ok = folder_ok(fanout, FolderKind::fanout, Access::read); ok != true) {
    // A fan-out "folder" that is a FIFO, socket, device, file or link is a bad entry too
    // (lstat does not open it, so it cannot block).
    struct stat st {};
    if (ok == false && ::lstat(fanout.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
      stats().bad_entries.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const fs::path path = layout_.entry_path(key);
  EntryRead r =
      read_entry_file(path, key, access_ == Access::write ? EntryUse::load : EntryUse::look);
  if (!r.binary && !r.missing) bad_entry(path, r.problem);
  return std::move(r.binary);
}

bool DiskCache::prepare_folder(const Key& key) {
  if (!usable_ || access_ != Access::write) return false;
  // The top folder first: never create fan-outs inside a folder this user may not write.
  if (folder_ok(layout_.dir(), FolderKind::top, Access::write) == false) return false;
  const fs::path fanout = layout_.fanout(key);
  if (auto err = detail::make_dirs_0700(fanout)) {
    kiln::detail::logger().warn("cannot create kernel cache folder: {}", *err);
    return false;
  }
  // Re-check after creating: the folders may have existed already, made by someone else.
  if (folder_ok(layout_.dir(), FolderKind::top, Access::write) != true) return false;
  return folder_ok(fanout, FolderKind::fanout, Access::write) == true;
}

bool DiskCache::store(const Key& key, const Binary& bin, std::string_view source_to_save_or_empty) {
  if (!prepare_folder(key)) return false;
  if (!source_to_save_or_empty.empty()) {
    if (auto err = detail::write_atomically(layout_.source_path(key), source_to_save_or_empty))
      kiln::detail::logger().warn("cannot save kernel source: {}", *err);
  }
  if (auto err = detail::write_atomically(layout_.entry_path(key), encode_entry(key, bin))) {
    kiln::detail::logger().warn("cannot write kernel cache entry: {}", *err);
    return false;
  }
  return true;
}

}  // namespace kiln::cache
