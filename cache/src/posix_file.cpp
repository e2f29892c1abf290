#include "posix_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "kiln/runtime/detail/log.hpp"

namespace kiln::cache::detail {
namespace fs = std::filesystem;

namespace {
std::string errno_text(const std::string& what, const fs::path& p) {
  return what + " " + p.string() + ": " + std::strerror(errno);
}
}  // namespace

std::optional<std::string> refuse_reason(const struct stat& st) {
  if (st.st_uid != geteuid())
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
  return std::nullopt;
}

std::optional<std::string> make_dirs_0700(const fs::path& dir) {
  fs::path p;
  for (const auto& part : dir) {
    p /= part;
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) return errno_text("cannot create", p);
  }
  return std::nullopt;
}

std::optional<std::string> write_atomically(const fs::path& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  // pid + counter make the temp name unique across processes and threads; O_EXCL makes sure.
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                       std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errno_text("cannot create", tmp);
  auto fail = [&](const char* what) {
    std::string err = errno_text(what, tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return err;
  };
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write");
    done += static_cast<std::size_t>(n);
  }
  // Without fsync before rename, a crash can leave a renamed but empty file.
  if (::fsync(fd) != 0) return fail("cannot fsync");
  if (::close(fd) != 0) {
    std::string err = errno_text("cannot close", tmp);
    ::unlink(tmp.c_str());
    return err;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = errno_text("cannot rename onto " + path.string() + " from", tmp);
    ::unlink(tmp.c_str());
    return err;
  }
  // Make the rename itself durable; failure here costs at most a recompile after a crash.
  if (const int dfd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return std::nullopt;
}

FileLock FileLock::acquire(const fs::path& path, bool& waited) {
  waited = false;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    kiln::detail::logger().warn("cannot open cache lock file {}: {}; compiling without it",
                                path.string(), std::strerror(errno));
    return FileLock(-1);
  }
  // flock locks belong to the open file description: each acquire opens its own, so the lock
  // excludes other threads of this process too, and the kernel drops it when the fd closes
  // or the process dies.
  int r = ::flock(fd, LOCK_EX | LOCK_NB);
  if (r != 0 && errno == EWOULDBLOCK) {
    waited = true;
    kiln::detail::logger().debug("waiting for another process compiling {}", path.string());
    do r = ::flock(fd, LOCK_EX);
    while (r != 0 && errno == EINTR);
  }
  if (r != 0) {
    kiln::detail::logger().warn("cannot lock {}: {}; compiling without it", path.string(),
                                std::strerror(errno));
    ::close(fd);
    return FileLock(-1);
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last fd of the description releases the flock
}

}  // namespace kiln::cache::detail
