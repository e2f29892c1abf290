#include "kiln/cache/cache_inventory.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "kiln/cache/cubin_info.hpp"
#include "kiln/cache/entry_format.hpp"
#include "kiln/runtime/error.hpp"
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

std::size_t Inventory::valid_entries() const {
  return std::count_if(files.begin(), files.end(), [](const CacheFile& f) {
    return f.type == CacheFileType::entry && f.problem.empty();
  });
}
std::size_t Inventory::bad_entries() const {
  return std::count_if(files.begin(), files.end(), [](const CacheFile& f) {
    return f.type == CacheFileType::entry && !f.problem.empty();
  });
}
std::uint64_t Inventory::entry_bytes() const {
  std::uint64_t n = 0;
  for (const auto& f : files)
    if (f.type == CacheFileType::entry && f.problem.empty()) n += f.size;
  return n;
}

namespace {

// Matches DiskCache: entries are kernels, a few MB at most.
constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{1} << 30;

std::string errno_text() { return std::strerror(errno); }

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<Key> key_from_hex(std::string_view hex) {
  if (hex.size() != 32 || !is_hex(hex)) return std::nullopt;
  auto half = [](std::string_view h) { return std::stoull(std::string(h), nullptr, 16); };
  return Key{half(hex.substr(0, 16)), half(hex.substr(16))};
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d)
    throw kiln::Error("cannot read kernel cache folder " + dir.string() + ": " + errno_text());
  while (const dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Classifies a file in a fan-out folder by its name: type and key.
void classify(CacheFile& f, const std::string& folder, const std::string& name) {
  const auto dot = name.find('.');
  const std::string stem = name.substr(0, dot);
  const std::string ext = dot == std::string::npos ? "" : name.substr(dot);
  f.key = key_from_hex(stem);
  if (!f.key || stem.compare(0, 2, folder) != 0) {
    f.key.reset();
    f.type = CacheFileType::stray;
    f.problem = "not a kiln cache file name";
    return;
  }
  if (ext == ".kbin")
    f.type = CacheFileType::entry;
  else if (ext == ".lock")
    f.type = CacheFileType::lock;
  else if (ext == ".cu")
    f.type = CacheFileType::source;
  else if (ext == ".meta")
    f.type = CacheFileType::metadata;
  else if (ext.starts_with(".kbin.tmp.") || ext.starts_with(".cu.tmp.") ||
           ext.starts_with(".meta.tmp."))
    f.type = CacheFileType::temp;
  else {
    f.type = CacheFileType::stray;
    f.problem = "not a kiln cache file name";
  }
}

// The writer's pid in a temp file name (<...>.tmp.<pid>.<n>), or 0.
pid_t temp_writer(const fs::path& p) {
  const std::string n = p.filename().string();
  const auto at = n.find(".tmp.");
  if (at == std::string::npos) return 0;
  try {
    return pid_t(std::stol(n.substr(at + 5)));
  } catch (...) {
    return 0;
  }
}

std::optional<std::string> folder_problem(const fs::path& dir, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return dir.string() + " is not a folder";
  if (auto why = detail::refuse_reason(st))
    return dir.string() + " is refused as a kernel cache folder: " + *why +
           " (fix with chmod 700 / chown, or choose another KILN_CACHE_DIR)";
  return std::nullopt;
}

}  // namespace

std::optional<Binary> read_entry(const fs::path& path, const Key& key, std::string& why) {
  // O_NOATIME: looking at the cache must not make every entry "recently used" for prune.
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  int fd = ::open(path.c_str(), kFlags | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = ::open(path.c_str(), kFlags);  // not the owner
  if (fd < 0) {
    why = errno == ELOOP ? "symbolic link, not an entry" : "cannot open: " + errno_text();
    return std::nullopt;
  }
  struct stat st {};
  std::string bytes;
  if (::fstat(fd, &st) != 0)
    why = "cannot stat: " + errno_text();
  else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (auto refused = detail::refuse_reason(st))
    why = "refused, " + *refused;
  else if (std::uint64_t(st.st_size) > kMaxEntryBytes)
    why = "implausibly large (" + std::to_string(st.st_size) + " bytes)";
  else {
    bytes.resize(std::size_t(st.st_size));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        why = "cannot read: " + errno_text();
        break;
      }
      if (n == 0) break;
      done += std::size_t(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  if (!why.empty()) return std::nullopt;
  return decode_entry(bytes, key, &why);
}

Inventory scan_cache(const fs::path& dir, bool check_entries) {
  Inventory inv;
  inv.dir = dir;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return inv;
    throw kiln::Error("cannot use kernel cache folder " + dir.string() + ": " + errno_text());
  }
  if (auto why = folder_problem(dir, st)) throw kiln::Error(*why);
  inv.exists = true;

  auto describe = [](CacheFile& f, const struct stat& s) {
    f.size = std::uint64_t(s.st_size);
    f.mtime = s.st_mtim.tv_sec;
    f.last_used = std::max(s.st_atim.tv_sec, s.st_mtim.tv_sec);
  };
  for (const std::string& folder : list_dir(dir)) {
    const fs::path sub = dir / folder;
    struct stat fst {};
    if (::lstat(sub.c_str(), &fst) != 0) continue;  // removed meanwhile
    const bool fanout = folder.size() == 2 && is_hex(folder) && S_ISDIR(fst.st_mode);
    if (!fanout) {
      CacheFile f{.path = sub};
      describe(f, fst);
      f.problem =
          S_ISLNK(fst.st_mode) ? "symbolic link, not an entry" : "not a kiln cache folder or file";
      inv.files.push_back(std::move(f));
      continue;
    }
    const auto refused = detail::refuse_reason(fst);
    for (const std::string& name : list_dir(sub)) {
      CacheFile f{.path = sub / name};
      struct stat s {};
      if (::lstat(f.path.c_str(), &s) != 0) continue;
      describe(f, s);
      classify(f, folder, name);
      if (S_ISLNK(s.st_mode))
        f.problem = "symbolic link, not an entry";
      else if (!S_ISREG(s.st_mode))
        f.problem = "not a regular file";
      else if (refused)
        f.problem = "in a refused folder: " + *refused;
      if (f.type == CacheFileType::entry && f.problem.empty() && check_entries) {
        if (auto bin = read_entry(f.path, *f.key, f.problem)) {
          CubinInfo info = inspect_cubin(bin->cubin);
          f.arch = info.arch;
          f.kernels = std::move(info.kernels);
          f.meta = read_entry_metadata(dir, *f.key);
        }
      }
      inv.files.push_back(std::move(f));
    }
  }
  return inv;
}

std::optional<std::string> cache_folder_problem(const fs::path& dir, bool create) {
  if (dir.empty()) return std::string("no cache folder (set KILN_CACHE_DIR or HOME)");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      return "cannot use cache folder " + dir.string() + ": " + errno_text();
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
    if (::stat(dir.c_str(), &st) != 0)
      return "cannot use cache folder " + dir.string() + ": " + errno_text();
  }
  if (auto why = folder_problem(dir, st)) return why;
  const fs::path probe = dir / (".kiln-write-probe." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return "cannot write into cache folder " + dir.string() + ": " + errno_text();
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

namespace {
fs::path sidecar(const fs::path& dir, const Key& key, const char* ext) {
  const std::string hex = key.hex();
  return dir / hex.substr(0, 2) / (hex + ext);
}
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}
}  // namespace

bool write_entry_metadata(const fs::path& dir, const Key& key, const EntryMetadata& meta) {
  const std::string text = "kind=" + one_line(meta.kind) + "\nname=" + one_line(meta.name) +
                           "\narch=" + std::to_string(meta.arch) + "\n";
  // Temp + rename without write_atomically's fsyncs: metadata is a description, not the
  // binary, and two fsyncs per kernel would cost a fifth of a small kernel's precompile. A
  // crash leaves at worst an empty or missing .meta, which readers treat as none.
  const fs::path path = sidecar(dir, key, ".meta");
  static std::atomic<unsigned> counter{0};
  const fs::path tmp =
      path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::optional<EntryMetadata> read_entry_metadata(const fs::path& dir, const Key& key) {
  const int fd = ::open(sidecar(dir, key, ".meta").c_str(),
                        O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOATIME);
  if (fd < 0) return std::nullopt;
  char buf[4096];
  struct stat st {};
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && !detail::refuse_reason(st))
    n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  EntryMetadata m;
  std::string_view text(buf, std::size_t(n));
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "kind")
      m.kind = v;
    else if (k == "name")
      m.name = v;
    else if (k == "arch")
      m.arch = std::atoi(std::string(v).c_str());
  }
  return m;
}

namespace {

// An flock on `lock_file` if nobody holds it (creating the file is fine: it is ours).
struct TryLock {
  int fd = -1;
  explicit TryLock(const fs::path& lock_file, bool create) {
    fd = ::open(lock_file.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
    if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~TryLock() {
    if (fd >= 0) ::close(fd);
  }
  bool held() const { return fd >= 0; }
};

bool remove_file(const fs::path& p, PruneResult& r) {
  if (::unlink(p.c_str()) == 0 || errno == ENOENT) return true;
  r.errors.push_back("cannot remove " + p.string() + ": " + errno_text());
  return false;
}

}  // namespace

PruneResult prune_cache(const fs::path& dir, const PruneOptions& opts) {
  PruneResult r;
  Inventory inv = scan_cache(dir, /*check_entries=*/opts.bad_entries);
  if (!inv.exists) return r;
  const std::int64_t now = std::int64_t(std::time(nullptr));

  std::vector<const CacheFile*> entries;
  for (const auto& f : inv.files)
    if (f.type == CacheFileType::entry) entries.push_back(&f);
  // Most recently used first: what stays under max_bytes.
  std::stable_sort(entries.begin(), entries.end(), [](const CacheFile* a, const CacheFile* b) {
    return a->last_used > b->last_used;
  });
  std::uint64_t kept = 0;
  for (const CacheFile* f : entries) {
    bool remove = opts.everything;
    if (opts.bad_entries && !f->problem.empty()) remove = true;
    if (opts.older_than_s && now - f->last_used > *opts.older_than_s) remove = true;
    if (opts.max_bytes && !remove) {
      if (kept + f->size > *opts.max_bytes)
        remove = true;
      else
        kept += f->size;
    }
    if (!remove) continue;
    // A symlink or other non-entry in an entry's name: remove the link itself, nothing else.
    const fs::path lock = sidecar(dir, *f->key, ".lock");
    TryLock held(lock, /*create=*/false);
    struct stat ls {};
    if (!held.held() && ::lstat(lock.c_str(), &ls) == 0) {
      ++r.busy_skipped;  // another process is compiling this key right now
      continue;
    }
    if (remove_file(f->path, r)) {
      ++r.entries_removed;
      r.bytes_removed += f->size;
      remove_file(sidecar(dir, *f->key, ".meta"), r);
      remove_file(sidecar(dir, *f->key, ".cu"), r);
    }
  }
  for (const auto& f : inv.files) {
    if (f.type == CacheFileType::lock && f.problem.empty()) {
      // Unlinking while holding the lock: a process that opened the old file keeps a lock
      // nobody else sees, which costs at most one duplicate compile (both writes are valid).
      TryLock held(f.path, /*create=*/false);
      if (held.held() && remove_file(f.path, r)) ++r.locks_removed;
    } else if (f.type == CacheFileType::temp) {
      const pid_t writer = temp_writer(f.path);
      const bool gone = writer <= 0 || (::kill(writer, 0) != 0 && errno == ESRCH);
      // A live pid may be a reused one: a temp untouched for a day is a leftover too.
      if ((gone || now - f.mtime > 86400) && remove_file(f.path, r)) ++r.temps_removed;
    } else if (opts.everything &&
               (f.type == CacheFileType::source || f.type == CacheFileType::metadata)) {
      remove_file(f.path, r);
    }
  }
  return r;
}

}  // namespace kiln::cache
