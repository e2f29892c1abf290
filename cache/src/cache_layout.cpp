#include "kiln/cache/cache_layout.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "kiln/runtime/regular_file.hpp"
#include "posix_file.hpp"

namespace kiln::cache {
namespace fs = std::filesystem;

const char* to_string(CacheFileType t) noexcept {
  switch (t) {
    case CacheFileType::entry:
      return "entry";
    case CacheFileType::lock:
      return "lock";
    case CacheFileType::source:
      return "source";
    case CacheFileType::metadata:
      return "metadata";
    case CacheFileType::temp:
      return "temp";
    case CacheFileType::stray:
      return "stray";
  }
  return "?";
}

namespace {

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

fs::path CacheLayout::fanout(const Key& key) const { return dir_ / key.hex().substr(0, 2); }

fs::path CacheLayout::entry_path(const Key& key) const {
  return fanout(key) / (key.hex() + ".kbin");
}
fs::path CacheLayout::lock_path(const Key& key) const {
  return fanout(key) / (key.hex() + ".lock");
}
fs::path CacheLayout::source_path(const Key& key) const {
  return fanout(key) / (key.hex() + ".cu");
}
fs::path CacheLayout::meta_path(const Key& key) const {
  return fanout(key) / (key.hex() + ".meta");
}

fs::path CacheLayout::temp_path(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  // pid + counter keep names apart across processes and threads; writers open with O_EXCL too.
  return target.string() + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

pid_t CacheLayout::temp_writer(const fs::path& temp) {
  const std::string n = temp.filename().string();
  const auto at = n.find(".tmp.");
  if (at == std::string::npos) return 0;
  pid_t pid = 0;
  for (std::size_t k = at + 5; k < n.size() && n[k] >= '0' && n[k] <= '9'; ++k) {
    if (pid > 100'000'000) return 0;  // no pid is that large: not a name kiln wrote
    pid = pid * 10 + (n[k] - '0');
  }
  return pid;
}

bool CacheLayout::is_fanout_name(std::string_view name) noexcept {
  return name.size() == 2 && is_hex(name);
}

CacheLayout::Name CacheLayout::classify(std::string_view fanout_name, std::string_view name) {
  Name out;
  const auto dot = name.find('.');
  const std::string_view stem = name.substr(0, dot);
  const std::string_view ext = dot == std::string_view::npos ? "" : name.substr(dot);
  // Lowercase only: hex() writes lowercase, so "AB..." is not a name kiln wrote.
  auto key = is_hex(stem) ? Key::from_hex(stem) : std::nullopt;
  if (!key || stem.substr(0, 2) != fanout_name) return out;
  if (ext == ".kbin")
    out.type = CacheFileType::entry;
  else if (ext == ".lock")
    out.type = CacheFileType::lock;
  else if (ext == ".cu")
    out.type = CacheFileType::source;
  else if (ext == ".meta")
    out.type = CacheFileType::metadata;
  else if (ext.starts_with(".kbin.tmp.") || ext.starts_with(".cu.tmp.") ||
           ext.starts_with(".meta.tmp."))
    out.type = CacheFileType::temp;
  else
    return out;
  out.key = key;
  return out;
}

std::optional<std::string> trust_problem(const struct stat& st, Access access) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return "owned by uid " + std::to_string(st.st_uid) + ", neither this user (uid " +
           std::to_string(me) + ") nor root";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return std::string("writable by group or others");
  if (access == Access::write && st.st_uid != me)
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(me) + "): kiln reads it but writes only into its user's folders";
  return std::nullopt;
}

std::optional<std::string> folder_problem(const fs::path& dir, FolderKind kind, Access access,
                                          bool* missing) {
  if (missing) *missing = false;
  struct stat st {};
  const int r = kind == FolderKind::top ? ::stat(dir.c_str(), &st) : ::lstat(dir.c_str(), &st);
  if (r != 0) {
    if (errno == ENOENT) {
      if (missing) *missing = true;
      return std::nullopt;
    }
    return "cannot use kernel cache folder " + dir.string() + ": " + std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode))
    return dir.string() + " is not a folder (it is " + file_kind(st.st_mode) + ")";
  if (auto why = trust_problem(st, access))
    return dir.string() + " is refused as a kernel cache folder" +
           (access == Access::write ? " to write into: " : ": ") + *why +
           (st.st_mode & (S_IWGRP | S_IWOTH) ? " (fix with chmod go-w, or choose another folder)"
                                             : " (choose another folder)");
  return std::nullopt;
}

}  // namespace kiln::cache

namespace kiln::cache {

std::optional<std::string> writable_folder_problem(const fs::path& dir, bool create) {
  if (dir.empty()) return std::string("no cache folder (set KILN_CACHE_DIR or HOME)");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      return "cannot use kernel cache folder " + dir.string() + ": " + std::strerror(errno);
    if (!create) return "cache folder " + dir.string() + " does not exist";
    // Say which ancestor is in the way: "a file" is the usual mistake.
    for (fs::path p = dir.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
      struct stat pst {};
      if (::stat(p.c_str(), &pst) == 0) {
        if (!S_ISDIR(pst.st_mode))
          return "cannot create cache folder " + dir.string() + ": " + p.string() +
                 " is a file, not a folder";
        break;
      }
      if (errno != ENOENT && errno != ENOTDIR) break;
    }
    if (auto err = detail::make_dirs_0700(dir)) return "cannot create cache folder: " + *err;
  }
  if (auto why = folder_problem(dir, FolderKind::top, Access::write)) return why;
  const fs::path probe = dir / (".kiln-write-probe." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return "cannot write into cache folder " + dir.string() + ": " + std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

}  // namespace kiln::cache
