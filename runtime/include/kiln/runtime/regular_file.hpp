#pragma once
// How kiln opens a file to read it: without blocking (O_NONBLOCK, so a FIFO or a device never
// hangs the open), regular files only (checked with fstat on the open file, so a swap after a
// look cannot sneak one in), never through a link where the file is kiln's own (O_NOFOLLOW),
// and never more than a size cap. Every file kiln reads goes through here: cache entries and
// their sidecars, manifests, raw kernel files and the headers they include, NVRTC's
// version.json, the NCCL id file. It lives in runtime/ so every floor above can use it.
//
//   RegularFile f = RegularFile::open(path, {.follow_links = false});
//   if (!f.ok()) return log(f.problem());                 // "it is a FIFO, not a regular file"
//   std::optional<std::string> bytes = f.read_all(1 << 20);   // nullopt: f.problem() says why
//
//   std::string why;
//   auto text = read_regular_file("kernels.json", kMaxManifestBytes, why);
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace kiln {

/// "a regular file", "a folder", "a FIFO", "a socket", "a character device", ... for messages.
std::string file_kind(mode_t mode);

class RegularFile {
 public:
  struct Options {
    /// false: a symbolic link is refused (kiln's own files); true: the user named the path.
    bool follow_links = true;
    /// Leave the access time alone where the kernel allows it (O_NOATIME): inspecting a cache
    /// must not make every entry "recently used".
    bool keep_atime = false;
  };
  /// Opens `path` read-only; never blocks, never throws. !ok() says why in problem().
  static RegularFile open(const std::filesystem::path& path, Options opts);
  RegularFile(RegularFile&& o) noexcept;
  RegularFile& operator=(RegularFile&&) = delete;
  RegularFile(const RegularFile&) = delete;
  ~RegularFile();

  bool ok() const noexcept { return fd_ >= 0; }
  /// The file does not exist (a plain miss, not a problem worth a warning).
  bool missing() const noexcept { return missing_; }
  /// Why it could not be opened or read ("it is a FIFO, not a regular file", "symbolic link,
  /// not followed", "larger than the 1073741824-byte limit (8589934592 bytes)", ...).
  const std::string& problem() const noexcept { return problem_; }
  /// fstat of the open file (valid when ok()).
  const struct stat& stat() const noexcept { return st_; }

  /// The whole file, or nullopt with problem() set: larger than `max_bytes`, or a read error.
  /// A file that shrinks while read is returned as far as it went.
  std::optional<std::string> read_all(std::uint64_t max_bytes);
  /// Marks the file as used now (its access time), for least-recently-used pruning. Best effort.
  void touch_atime() const noexcept;

 private:
  RegularFile() = default;
  int fd_ = -1;
  bool missing_ = false;
  std::string problem_;
  struct stat st_ {};
};

/// The largest file kiln reads that a user names: a manifest, a raw kernel's .cu, .cubin, .ptx
/// or .fatbin and the headers it includes.
inline constexpr std::uint64_t kMaxUserFileBytes = std::uint64_t{1} << 30;

/// read_all of RegularFile::open(path) with links followed (a path the user named); nullopt
/// with `why` set ("cannot open: No such file or directory", "it is a character device, not a
/// regular file", ...).
std::optional<std::string> read_regular_file(const std::filesystem::path& path,
                                             std::uint64_t max_bytes, std::string& why);

}  // namespace kiln
