#pragma once
// Small POSIX helpers for the disk cache: ownership/permission checks, whole-file reads and
// atomic writes, and the per-key lock file. Private to cache/src.
#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

/// Why a folder or file with this stat must not be trusted (owned by another user, or
/// writable by group/others); nullopt if it is fine.
std::optional<std::string> refuse_reason(const struct stat& st);

/// Creates `dir` and missing parents with mode 0700. Returns an error text or nullopt.
std::optional<std::string> make_dirs_0700(const std::filesystem::path& dir);

/// Writes `bytes` to a temp file beside `path`, fsyncs it, renames it over `path`, and fsyncs
/// the folder. Returns an error text or nullopt. The temp file never survives a failure.
std::optional<std::string> write_atomically(const std::filesystem::path& path, std::string_view bytes);

/// An exclusive flock on a lock file, released on destruction, or by the kernel if the
/// process dies, so a killed compiler never blocks others for long.
class FileLock {
 public:
  /// Blocks until the lock is held. `waited` is set if another holder made us wait.
  /// If the lock file cannot be opened, the returned lock is not held (held() == false).
  static FileLock acquire(const std::filesystem::path& path, bool& waited);
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();
  bool held() const noexcept { return fd_ >= 0; }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace kiln::cache::detail
