#include "kiln/runtime/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln {
namespace fs = std::filesystem;

std::string file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

RegularFile RegularFile::open(const fs::path& path, Options opts) {
  RegularFile f;
  // Look first (a stat opens nothing): a FIFO, socket or device is refused without being
  // opened at all, since opening some devices has effects of its own.
  struct stat look {};
  if ((opts.follow_links ? ::stat(path.c_str(), &look) : ::lstat(path.c_str(), &look)) == 0 &&
      !S_ISREG(look.st_mode)) {
    f.problem_ = S_ISLNK(look.st_mode)
                     ? std::string("symbolic link, not followed")
                     : "it is " + file_kind(look.st_mode) + ", not a regular file (not opened)";
    return f;
  }
  // O_NONBLOCK: opening a FIFO with no writer, or some devices, would otherwise wait forever.
  // It changes nothing for the reads of a regular file.
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (opts.follow_links ? 0 : O_NOFOLLOW);
  int fd = opts.keep_atime ? ::open(path.c_str(), flags | O_NOATIME) : -1;
  if (fd < 0) fd = ::open(path.c_str(), flags);  // O_NOATIME needs the owner: EPERM otherwise
  if (fd < 0) {
    f.missing_ = errno == ENOENT;
    f.problem_ = errno == ELOOP && !opts.follow_links
                     ? std::string("symbolic link, not followed")
                     : std::string("cannot open: ") + std::strerror(errno);
    return f;
  }
  if (::fstat(fd, &f.st_) != 0) {
    f.problem_ = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return f;
  }
  if (!S_ISREG(f.st_.st_mode)) {
    f.problem_ = "it is " + file_kind(f.st_.st_mode) + ", not a regular file";
    ::close(fd);
    return f;
  }
  f.fd_ = fd;
  return f;
}

RegularFile::RegularFile(RegularFile&& o) noexcept
    : fd_(o.fd_), missing_(o.missing_), problem_(std::move(o.problem_)), st_(o.st_) {
  o.fd_ = -1;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> RegularFile::read_all(std::uint64_t max_bytes) {
  if (fd_ < 0) return std::nullopt;
  if (std::uint64_t(st_.st_size) > max_bytes) {
    problem_ = "larger than the " + std::to_string(max_bytes) + "-byte limit (" +
               std::to_string(st_.st_size) + " bytes)";
    return std::nullopt;
  }
  std::string bytes(std::size_t(st_.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      problem_ = std::string("cannot read: ") + std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;  // shrank under us: the caller's checks see what is there
    done += std::size_t(n);
  }
  bytes.resize(done);
  return bytes;
}

void RegularFile::touch_atime() const noexcept {
  if (fd_ < 0) return;
  const timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  (void)::futimens(fd_, times);
}

std::optional<std::string> read_regular_file(const fs::path& path, std::uint64_t max_bytes,
                                             std::string& why) {
  RegularFile f = RegularFile::open(path, {.follow_links = true});
  auto bytes = f.read_all(max_bytes);
  if (!bytes) why = f.problem();
  return bytes;
}

}  // namespace kiln
