#pragma once
// The disk cache's writing side: folders made 0700, atomic file writes (temp + fsync +
// rename), and the per-key lock file. Reading is regular_file.hpp; names and trust rules are
// cache_layout.hpp. Private to cache/src.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

/// Creates `dir` and missing parents with mode 0700. Returns an error text or nullopt.
std::optional<std::string> make_dirs_0700(const std::filesystem::path& dir);

/// Writes `bytes` to a temp file beside `path` (CacheLayout::temp_path), renames it over `path`
/// and returns an error text or nullopt. With `durable`, the file is fsynced before the rename
/// and the folder after it (a crash then never leaves a renamed but empty file); without, a
/// crash may leave an empty file, which readers treat as a bad or missing one. The temp file
/// never survives a failure.
std::optional<std::string> write_atomically(const std::filesystem::path& path,
                                            std::string_view bytes, bool durable = true);

/// An exclusive flock on a lock file, released on destruction, or by the kernel if the
/// process dies, so a killed compiler never blocks others for long. The holder writes
/// "<pid> <host>" into the file so that waiters can say whom they wait for.
class FileLock {
 public:
  /// Waits until the lock is held, at most `timeout_s` seconds: after about a second it logs
  /// at warn level who holds it (`what` names the work, e.g. "kernel 'k' (key ...)"), and
  /// past the timeout it logs that it gives up. `waited` is set if another holder made us wait.
  /// The returned lock is not held (held() == false) when the wait timed out, the lock file
  /// cannot be opened, or it is not a regular file (refused without opening it, counted in
  /// stats().bad_entries): the caller then works without the lock.
  static FileLock acquire(const std::filesystem::path& path, const std::string& what,
                          double timeout_s, bool& waited);
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
