#include "kiln/cache/disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/entry_format.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "posix_file.hpp"

namespace kiln::cache {
namespace fs = std::filesystem;

namespace {

// Entries are kernels, a few MB at most; anything far larger is not ours.
constexpr off_t kMaxEntryBytes = off_t{1} << 30;

// A refused folder would otherwise warn on every compile; once per folder is enough.
void warn_folder_once(const fs::path& dir, const std::string& why) {
  static std::mutex m;
  static std::set<std::string> warned;
  {
    std::lock_guard lock(m);
    if (!warned.insert(dir.string() + '\n' + why).second) return;
  }
  kiln::detail::logger().warn(
      "not using kernel cache folder {}: {}; kernels are compiled in memory (fix with chmod 700 "
      "or choose another KILN_CACHE_DIR)",
      dir.string(), why);
}

// nullopt if `dir` is missing; else whether it is a folder we may trust.
std::optional<bool> folder_ok(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    warn_folder_once(dir, std::strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    warn_folder_once(dir, "not a folder but " + detail::file_kind(st.st_mode));
    return false;
  }
  if (auto why = detail::refuse_reason(st)) {
    warn_folder_once(dir, *why);
    return false;
  }
  return true;
}

void bad_entry(const fs::path& p, const std::string& why) {
  stats().bad_entries.fetch_add(1, std::memory_order_relaxed);
  kiln::detail::logger().warn("ignoring kernel cache entry {}: {}; it will be recompiled", p.string(), why);
}

}  // namespace

DiskCache::DiskCache(fs::path dir) : dir_(std::move(dir)) {
  if (dir_.empty()) {
    usable_ = false;
    return;
  }
  usable_ = folder_ok(dir_).value_or(true);
}

fs::path DiskCache::entry_path(const Key& key) const {
  const std::string hex = key.hex();
  return dir_ / hex.substr(0, 2) / (hex + ".kbin");
}

fs::path DiskCache::lock_path(const Key& key) const {
  const std::string hex = key.hex();
  return dir_ / hex.substr(0, 2) / (hex + ".lock");
}

fs::path DiskCache::source_path(const Key& key) const {
  const std::string hex = key.hex();
  return dir_ / hex.substr(0, 2) / (hex + ".cu");
}

std::optional<Binary> DiskCache::load(const Key& key) const {
  if (!usable_) return std::nullopt;
  const fs::path path = entry_path(key);
  if (const auto ok = folder_ok(path.parent_path()); ok != true) {
    // A fan-out "folder" that is a FIFO, socket, device or file is a bad entry too (stat does
    // not open it, so it cannot block).
    struct stat st {};
    if (ok == false && ::stat(path.parent_path().c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
      stats().bad_entries.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }

  // Opening a FIFO or a device can block forever: look first (lstat opens nothing), then open
  // with O_NONBLOCK in case it is swapped in between (fstat below refuses it). O_NOFOLLOW: an
  // entry must be a file we own, not a link to somebody else's.
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) {
    if (errno != ENOENT) bad_entry(path, std::string("cannot stat: ") + std::strerror(errno));
    return std::nullopt;
  }
  if (!S_ISREG(lst.st_mode)) {
    bad_entry(path, "it is " + detail::file_kind(lst.st_mode) + ", not a regular file (not opened)");
    return std::nullopt;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) bad_entry(path, std::string("cannot open: ") + std::strerror(errno));
    return std::nullopt;
  }
  std::string bytes;
  std::string why;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    why = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "it is " + detail::file_kind(st.st_mode) + ", not a regular file";
  } else if (auto refused = detail::refuse_reason(st)) {
    why = "refused, " + *refused;
  } else if (st.st_size > kMaxEntryBytes) {
    why = "implausibly large (" + std::to_string(st.st_size) + " bytes)";
  } else {
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        why = std::string("cannot read: ") + std::strerror(errno);
        break;
      }
      if (n == 0) break;  // shrank under us; decode_entry reports it as truncated
      done += static_cast<std::size_t>(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  if (!why.empty()) {
    bad_entry(path, why);
    return std::nullopt;
  }
  auto bin = decode_entry(bytes, key, &why);
  if (!bin) bad_entry(path, why);
  return bin;
}

bool DiskCache::prepare_folder(const Key& key) {
  if (!usable_) return false;
  const fs::path fanout = entry_path(key).parent_path();
  if (auto err = detail::make_dirs_0700(fanout)) {
    kiln::detail::logger().warn("cannot create kernel cache folder: {}", *err);
    return false;
  }
  // Re-check after creating: the folders may have existed already, made by someone else.
  if (folder_ok(dir_) != true) {
    usable_ = false;
    return false;
  }
  return folder_ok(fanout) == true;
}

void DiskCache::store(const Key& key, const Binary& bin, std::string_view source_to_save_or_empty) {
  if (!prepare_folder(key)) return;
  if (!source_to_save_or_empty.empty()) {
    if (auto err = detail::write_atomically(source_path(key), source_to_save_or_empty))
      kiln::detail::logger().warn("cannot save kernel source: {}", *err);
  }
  if (auto err = detail::write_atomically(entry_path(key), encode_entry(key, bin)))
    kiln::detail::logger().warn("cannot write kernel cache entry: {}", *err);
}

}  // namespace kiln::cache
