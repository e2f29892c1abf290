#include "posix_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "kiln/cache/cache_layout.hpp"
#include "kiln/cache/cache_stats.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/regular_file.hpp"

namespace kiln::cache::detail {
namespace fs = std::filesystem;

namespace {
std::string errno_text(const std::string& what, const fs::path& p) {
  return what + " " + p.string() + ": " + std::strerror(errno);
}
}  // namespace

std::optional<std::string> make_dirs_0700(const fs::path& dir) {
  fs::path p;
  for (const auto& part : dir) {
    p /= part;
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) return errno_text("cannot create", p);
  }
  return std::nullopt;
}

std::optional<std::string> write_atomically(const fs::path& path, std::string_view bytes,
                                            bool durable) {
  const fs::path tmp = CacheLayout::temp_path(path);
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
  if (durable && ::fsync(fd) != 0) return fail("cannot fsync");
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
  if (!durable) return std::nullopt;
  if (const int dfd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return std::nullopt;
}

namespace {

// "<pid> <host>" of the current holder, written when the lock is taken.
std::string this_host() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "?";
  return host;
}

void write_holder(int fd) {
  const std::string id = std::to_string(::getpid()) + " " + this_host() + "\n";
  // Best effort: a waiter without it only says less.
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, id.data(), id.size(), 0);
}

// Who holds the lock, as the holder wrote it: "process 1234 (pid in lock file)", with the
// host when it is another one and a hint when the process is stopped.
std::string describe_holder(int fd) {
  char buf[300] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  long pid = 0;
  char host[256] = {};
  if (n <= 0 || std::sscanf(buf, "%ld %255s", &pid, host) != 2 || pid <= 0)
    return "another process (the lock file does not name it yet)";
  std::string who = "process " + std::to_string(pid);
  if (this_host() != host) return who + " on host " + host + " (pid in lock file)";
  who += " (pid in lock file)";
  // /proc/<pid>/stat is "pid (comm) S ...": S == 'T' is stopped, e.g. by Ctrl-Z. (procfs files
  // report size 0, so this one read is not regular_file.hpp's; procfs never blocks.)
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'T')
    who += ", which is stopped (resume it with kill -CONT " + std::to_string(pid) + ")";
  return who;
}

}  // namespace

FileLock FileLock::acquire(const fs::path& path, const std::string& what, double timeout_s,
                           bool& waited) {
  waited = false;
  auto& log = kiln::detail::logger();
  // Opening a FIFO or a device can block forever: look before opening, and open with
  // O_NONBLOCK|O_NOFOLLOW in case it is swapped in between (then fstat refuses it).
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    stats().bad_entries.fetch_add(1, std::memory_order_relaxed);
    log.warn(
        "refusing cache lock file {}: it is {}, not a regular file; compiling {} without the lock",
        path.string(), file_kind(st.st_mode), what);
    return FileLock(-1);
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (fd < 0) {
    log.warn("cannot open cache lock file {}: {}; compiling {} without it", path.string(),
             std::strerror(errno), what);
    return FileLock(-1);
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    stats().bad_entries.fetch_add(1, std::memory_order_relaxed);
    log.warn("refusing cache lock file {}: not a regular file; compiling {} without the lock",
             path.string(), what);
    ::close(fd);
    return FileLock(-1);
  }
  // flock locks belong to the open file description: each acquire opens its own, so the lock
  // excludes other threads of this process too, and the kernel drops it when the fd closes
  // or the process dies. A stopped holder keeps it, so the wait polls and is bounded.
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto timeout = std::chrono::duration<double>(timeout_s);
  auto pause = std::chrono::milliseconds(1);
  bool said = false;
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) break;
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      log.warn("cannot lock {}: {}; compiling {} without it", path.string(), std::strerror(errno),
               what);
      ::close(fd);
      return FileLock(-1);
    }
    if (!waited) log.debug("waiting for another process compiling {}", what);
    waited = true;
    const auto elapsed = clock::now() - start;
    if (elapsed >= timeout) {
      log.warn(
          "gave up after {:.1f} s waiting for {} compiling {}; compiling it here too (the entry "
          "is written atomically, so it stays valid; KILN_CACHE_LOCK_TIMEOUT or kiln-cache "
          "--lock-timeout sets the wait)",
          std::chrono::duration<double>(elapsed).count(), describe_holder(fd), what);
      ::close(fd);
      return FileLock(-1);
    }
    if (!said && elapsed >= std::chrono::seconds(1)) {
      said = true;
      log.warn(
          "waiting for {} compiling {}: lock file {}; giving up after {} s "
          "(KILN_CACHE_LOCK_TIMEOUT)",
          describe_holder(fd), what, path.string(), timeout_s);
    }
    // Short first pauses keep the common case (a compile of a few hundred ms) prompt.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  write_holder(fd);
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last fd of the description releases the flock
}

}  // namespace kiln::cache::detail
