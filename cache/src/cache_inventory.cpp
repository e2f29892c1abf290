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
#include "kiln/cache/entry_file.hpp"
#include "kiln/cache/regular_file.hpp"
#include "kiln/runtime/error.hpp"
#include "posix_file.hpp"

namespace kiln::cache {
namespace fs = std::filesystem;

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

// A .meta sidecar is three short lines.
constexpr std::uint64_t kMaxMetadataBytes = 4096;

std::string errno_text() { return std::strerror(errno); }

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

}  // namespace

Inventory scan_cache(const fs::path& dir, bool check_entries) {
  Inventory inv;
  inv.dir = dir;
  bool missing = false;
  if (auto why = folder_problem(dir, FolderKind::top, &missing)) throw kiln::Error(*why);
  if (missing) return inv;
  inv.exists = true;

  auto describe = [](CacheFile& f, const fs::path& path, const struct stat& s) {
    f.path = path;
    f.size = std::uint64_t(s.st_size);
    f.mtime = s.st_mtim.tv_sec;
    f.last_used = std::max(s.st_atim.tv_sec, s.st_mtim.tv_sec);
  };
  for (const std::string& folder : list_dir(dir)) {
    const fs::path sub = dir / folder;
    struct stat fst {};
    if (::lstat(sub.c_str(), &fst) != 0) continue;  // removed meanwhile
    const bool fanout = CacheLayout::is_fanout_name(folder) && S_ISDIR(fst.st_mode);
    if (!fanout) {
      CacheFile f;
      describe(f, sub, fst);
      f.problem =
          S_ISLNK(fst.st_mode) ? "symbolic link, not an entry" : "not a kiln cache folder or file";
      inv.files.push_back(std::move(f));
      continue;
    }
    const auto refused = trust_problem(fst);
    for (const std::string& name : list_dir(sub)) {
      CacheFile f;
      const fs::path path = sub / name;
      struct stat s {};
      if (::lstat(path.c_str(), &s) != 0) continue;
      describe(f, path, s);
      const auto named = CacheLayout::classify(folder, name);
      f.type = named.type;
      f.key = named.key;
      if (f.type == CacheFileType::stray) f.problem = "not a kiln cache file name";
      if (S_ISLNK(s.st_mode))
        f.problem = "symbolic link, not an entry";
      else if (!S_ISREG(s.st_mode))
        f.problem = "not a regular file";
      else if (refused)
        f.problem = "in a refused folder: " + *refused;
      if (f.type == CacheFileType::entry && f.problem.empty() && check_entries) {
        EntryRead r = read_entry_file(f.path, *f.key, EntryUse::inspect);
        f.problem = std::move(r.problem);
        if (r.missing) continue;  // removed meanwhile
        if (const auto& bin = r.binary) {
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

namespace {
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}
}  // namespace

bool write_entry_metadata(const fs::path& dir, const Key& key, const EntryMetadata& meta) {
  const std::string text = "kind=" + one_line(meta.kind) + "\nname=" + one_line(meta.name) +
                           "\narch=" + std::to_string(meta.arch) + "\n";
  // Not durable (no fsyncs): metadata is a description, not the binary, and two fsyncs per
  // kernel would cost a fifth of a small kernel's precompile. A crash leaves at worst an empty
  // or missing .meta, which readers treat as none.
  return !detail::write_atomically(CacheLayout(dir).meta_path(key), text, /*durable=*/false);
}

std::optional<EntryMetadata> read_entry_metadata(const fs::path& dir, const Key& key) {
  RegularFile f = RegularFile::open(CacheLayout(dir).meta_path(key),
                                    {.follow_links = false, .keep_atime = true});
  if (!f.ok() || trust_problem(f.stat())) return std::nullopt;
  const auto bytes = f.read_all(kMaxMetadataBytes);
  if (!bytes || bytes->empty()) return std::nullopt;
  EntryMetadata m;
  std::string_view text(*bytes);
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
  const CacheLayout layout(dir);
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
    const fs::path lock = layout.lock_path(*f->key);
    TryLock held(lock, /*create=*/false);
    struct stat ls {};
    if (!held.held() && ::lstat(lock.c_str(), &ls) == 0) {
      ++r.busy_skipped;  // another process is compiling this key right now
      continue;
    }
    if (remove_file(f->path, r)) {
      ++r.entries_removed;
      r.bytes_removed += f->size;
      remove_file(layout.meta_path(*f->key), r);
      remove_file(layout.source_path(*f->key), r);
    }
  }
  for (const auto& f : inv.files) {
    if (f.type == CacheFileType::lock && f.problem.empty()) {
      // Unlinking while holding the lock: a process that opened the old file keeps a lock
      // nobody else sees, which costs at most one duplicate compile (both writes are valid).
      TryLock held(f.path, /*create=*/false);
      if (held.held() && remove_file(f.path, r)) ++r.locks_removed;
    } else if (f.type == CacheFileType::temp) {
      const pid_t writer = CacheLayout::temp_writer(f.path);
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
