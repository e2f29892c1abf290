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
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/cache/size_and_age.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/regular_file.hpp"
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
std::size_t Inventory::other_nvrtc_entries() const {
  return std::count_if(files.begin(), files.end(), [](const CacheFile& f) {
    return f.type == CacheFileType::entry && f.problem.empty() && f.other_nvrtc;
  });
}

namespace {

// A .meta sidecar is three short lines.
constexpr std::uint64_t kMaxMetadataBytes = 4096;

std::string errno_text() { return std::strerror(errno); }

std::optional<std::vector<std::string>> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return std::nullopt;
  while (const dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Whether an entry was compiled by the NVRTC of this process: by the full version when both
// know it ("13.0.88"), else by major.minor.
bool same_nvrtc(const std::string& entry_version) {
  const std::string& mine = nvrtc_version().full;
  if (entry_version.empty()) return true;  // unknown: never call it foreign
  const bool both_full = std::count(mine.begin(), mine.end(), '.') >= 2 &&
                         std::count(entry_version.begin(), entry_version.end(), '.') >= 2;
  if (both_full) return entry_version == mine;
  const std::string mm =
      std::to_string(nvrtc_version().major) + "." + std::to_string(nvrtc_version().minor);
  return entry_version == mm || entry_version.starts_with(mm + ".");
}

}  // namespace

Inventory scan_cache(const fs::path& dir, bool check_entries) {
  Inventory inv;
  inv.dir = dir;
  bool missing = false;
  if (auto why = folder_problem(dir, FolderKind::top, Access::read, &missing)) {
    // Refused is reported (verify says so, --fix repairs it); not a folder is an error.
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw kiln::Error(*why);
    inv.refused_folders.push_back(*why);
  }
  if (missing) return inv;
  inv.exists = true;
  const auto top_refused = trust_problem([&] {
    struct stat st {};
    ::stat(dir.c_str(), &st);
    return st;
  }());
  const auto top_names = list_dir(dir);
  if (!top_names)
    throw kiln::Error("cannot read kernel cache folder " + dir.string() + ": " + errno_text());

  auto describe = [](CacheFile& f, const fs::path& path, const struct stat& s) {
    f.path = path;
    f.size = std::uint64_t(s.st_size);
    f.mtime = s.st_mtim.tv_sec;
    f.last_used = std::max(s.st_atim.tv_sec, s.st_mtim.tv_sec);
  };
  for (const std::string& folder : *top_names) {
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
    auto refused = top_refused ? top_refused : trust_problem(fst);
    if (!top_refused && refused)
      inv.refused_folders.push_back(*folder_problem(sub, FolderKind::fanout, Access::read));
    const auto names = list_dir(sub);
    if (!names) {
      inv.refused_folders.push_back("cannot read kernel cache folder " + sub.string() + ": " +
                                    errno_text());
      continue;
    }
    for (const std::string& name : *names) {
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
        EntryRead r = read_entry_file(f.path, *f.key, EntryUse::look);
        f.problem = std::move(r.problem);
        if (r.missing) continue;  // removed meanwhile
        if (const auto& bin = r.binary) {
          CubinInfo info = inspect_cubin(bin->cubin);
          f.arch = info.arch;
          f.kernels = std::move(info.kernels);
          f.nvrtc_version = std::move(info.tool_version);
          f.other_nvrtc = !same_nvrtc(f.nvrtc_version);
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
                           "\narch=" + arch_text(meta.arch) + "\n";
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
      m.arch = (v.ends_with('a') ? kArchSpecificFlag : 0) + std::atoi(std::string(v).c_str());
  }
  return m;
}

namespace {

// An flock on `lock_file` if nobody holds it (creating the file is fine: it is ours).
struct TryLock {
  int fd = -1;
  explicit TryLock(const fs::path& lock_file, bool create) {
    fd = ::open(lock_file.c_str(),
                O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (create ? O_CREAT : 0), 0600);
    struct stat st {};
    if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {  // a FIFO is no lock
      ::close(fd);
      fd = -1;
    }
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
  Inventory inv = scan_cache(dir, /*check_entries=*/opts.bad_entries || opts.other_nvrtc);
  if (!inv.exists) return r;
  if (bool missing = false; auto why = folder_problem(dir, FolderKind::top, Access::read, &missing))
    throw kiln::Error(*why + "; kiln-cache verify --fix repairs it");
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
  bool full = false;  // once an entry does not fit, every older one goes too (strict LRU)
  for (const CacheFile* f : entries) {
    bool remove = opts.everything;
    if (opts.bad_entries && !f->problem.empty()) remove = true;
    if (opts.other_nvrtc && f->problem.empty() && f->other_nvrtc) remove = true;
    if (opts.older_than_s && now - f->last_used > *opts.older_than_s) remove = true;
    if (opts.max_bytes && !remove) {
      full = full || kept + f->size > *opts.max_bytes;
      if (full)
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

PruneResult enforce_size_limit(const fs::path& dir, std::uint64_t max_bytes) {
  try {
    const Inventory inv = scan_cache(dir, /*check_entries=*/false);
    std::uint64_t total = 0;
    for (const auto& f : inv.files)
      if (f.type == CacheFileType::entry) total += f.size;
    if (total <= max_bytes) return {};
    PruneOptions down;
    down.max_bytes = max_bytes / 10 * 9;
    PruneResult r = prune_cache(dir, down);
    kiln::detail::logger().info(
        "kernel cache {} passed its size limit ({} > {}, KILN_CACHE_MAX_SIZE): removed the {} "
        "least recently used entries ({})",
        dir.string(), human_bytes(total), human_bytes(max_bytes), r.entries_removed,
        human_bytes(r.bytes_removed));
    for (const auto& e : r.errors) kiln::detail::logger().warn("kernel cache size limit: {}", e);
    return r;
  } catch (const kiln::Error& e) {
    kiln::detail::logger().warn("kernel cache size limit not applied: {}", e.what());
    return {};
  }
}

FolderRepair repair_folder_modes(const Inventory& inv) {
  FolderRepair out;
  if (!inv.exists) return out;
  std::vector<fs::path> folders{inv.dir};
  if (const auto names = list_dir(inv.dir))
    for (const auto& n : *names)
      if (CacheLayout::is_fanout_name(n)) folders.push_back(inv.dir / n);
  for (const auto& folder : folders) {
    struct stat st {};
    const bool top = folder == inv.dir;
    if ((top ? ::stat(folder.c_str(), &st) : ::lstat(folder.c_str(), &st)) != 0 ||
        !S_ISDIR(st.st_mode))
      continue;
    if (!trust_problem(st)) continue;
    if (st.st_uid != ::geteuid()) {
      out.errors.push_back(
          *folder_problem(folder, top ? FolderKind::top : FolderKind::fanout, Access::read) +
          "; not changed: another user owns it");
      continue;
    }
    if (::chmod(folder.c_str(), st.st_mode & 07755) != 0)
      out.errors.push_back("cannot chmod go-w " + folder.string() + ": " + errno_text());
    else
      ++out.fixed;
  }
  return out;
}

std::vector<std::string> share_for_reading(const fs::path& dir) {
  std::vector<std::string> errors;
  auto share = [&](const fs::path& p, mode_t mode) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || st.st_uid != ::geteuid()) return;
    if ((st.st_mode & 07777) != mode && ::chmod(p.c_str(), mode) != 0)
      errors.push_back("cannot chmod " + p.string() + ": " + errno_text());
  };
  share(dir, 0755);
  const auto names = list_dir(dir);
  if (!names) return {"cannot read " + dir.string() + ": " + errno_text()};
  for (const auto& n : *names) {
    if (!CacheLayout::is_fanout_name(n)) continue;
    const fs::path sub = dir / n;
    struct stat st {};
    if (::lstat(sub.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    share(sub, 0755);
    for (const auto& f : list_dir(sub).value_or(std::vector<std::string>{})) {
      const auto type = CacheLayout::classify(n, f).type;
      struct stat fst {};
      if (::lstat((sub / f).c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) continue;
      if (type == CacheFileType::entry || type == CacheFileType::metadata ||
          type == CacheFileType::source)
        share(sub / f, 0644);
    }
  }
  return errors;
}

}  // namespace kiln::cache
