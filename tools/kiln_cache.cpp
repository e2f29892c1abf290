// kiln-cache: fills, inspects and maintains kiln's on-disk kernel cache, so a deployed
// program never waits on NVRTC. Runs without a GPU.
//
//   kiln-cache precompile samples/kernels.json --arch 80,90 --jobs 2
//   KILN_CACHE_RECORD=k.jsonl ./app && kiln-cache precompile k.jsonl --arch 90 --cache-dir out
//   kiln-cache list | stats | verify [--fix] | prune --max-size 1G | clear | show KEY
//   kiln-cache devices | info | --version
//
// Every command takes --json (one JSON document on stdout) and --cache-dir DIR, before or after
// the command's name. Exit status: 0 ok; 1 some kernels or manifest entries failed
// (precompile), problems left (verify), no GPU (devices); 2 bad usage or input (including an
// unusable cache folder or manifest).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/cache/cache_config.hpp"
#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/entry_format.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/cache/size_and_age.hpp"
#include "kiln/kiln.hpp"
#include "kiln/runtime/regular_file.hpp"
#include "manifest.hpp"
#include "precompile.hpp"

namespace {
namespace fs = std::filesystem;
using kiln::cache::CacheFile;
using kiln::cache::CacheFileType;
using kiln::cache::human_bytes;
using json = nlohmann::json;

constexpr int kOk = 0, kFailed = 1, kBadInput = 2;

// A saved source is shown whole up to this; larger is not one kiln wrote for a kernel.
constexpr std::uint64_t kMaxShownSourceBytes = std::uint64_t{64} << 20;

// Bad usage or input: one line on stderr, exit status 2.
struct BadInput : kiln::Error {
  using kiln::Error::Error;
};

struct Common {
  std::string cache_dir;
  bool json = false;
};

void print_json(const json& j) { std::printf("%s\n", j.dump(2).c_str()); }

fs::path cache_dir(const Common& c) {
  if (!c.cache_dir.empty()) return c.cache_dir;
  auto cfg = kiln::cache::CacheConfig::from_env();
  if (cfg.dir.empty())
    throw BadInput("no cache folder: set KILN_CACHE_DIR or HOME, or pass --cache-dir");
  return cfg.dir;
}

// Commands that write entries: the folder must take them, and programs must be able to read
// them (KILN_CACHE_IN_MEMORY=1 means they never look).
fs::path writable_cache_dir(const Common& c) {
  if (kiln::cache::CacheConfig::from_env().in_memory_only)
    throw BadInput(
        "KILN_CACHE_IN_MEMORY=1 is set: programs run this way never read a disk cache, so nothing "
        "written to one would be used; unset it");
  const fs::path dir = cache_dir(c);
  if (auto why = kiln::cache::writable_folder_problem(dir, /*create=*/true)) throw BadInput(*why);
  return dir;
}

kiln::cache::Inventory scan(const fs::path& dir, bool check = true) {
  try {
    return kiln::cache::scan_cache(dir, check);
  } catch (const kiln::Error& e) {
    throw BadInput(e.what());
  }
}

std::vector<int> parse_archs(const std::vector<std::string>& args) {
  std::vector<int> archs;
  for (const auto& a : args) {
    int v = 0;
    try {
      v = kiln::cache::parse_arch(a);
    } catch (const kiln::Error& e) {
      throw BadInput(std::string("--arch ") + a + ": " + e.what());
    }
    if (std::find(archs.begin(), archs.end(), v) == archs.end()) archs.push_back(v);
  }
  return archs;
}

json arch_list(const std::vector<int>& archs) {
  json j = json::array();
  for (int a : archs) j.push_back(kiln::cache::arch_name(a));
  return j;
}

std::string human_age(std::int64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + "s";
  if (seconds < 7200) return std::to_string(seconds / 60) + "m";
  if (seconds < 172800) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

std::string entry_kind(const CacheFile& f) {
  return f.meta && !f.meta->kind.empty() ? f.meta->kind : "-";
}
std::string entry_name(const CacheFile& f) {
  if (f.meta && !f.meta->name.empty()) return f.meta->name;
  return f.kernels.empty() ? "-" : f.kernels.front();
}
bool valid_entry(const CacheFile& f) { return f.type == CacheFileType::entry && f.problem.empty(); }

json file_json(const CacheFile& f) {
  json j{{"path", f.path.string()},  {"type", kiln::cache::to_string(f.type)},
         {"size", f.size},           {"mtime", f.mtime},
         {"last_used", f.last_used}, {"valid", f.problem.empty()}};
  if (f.key) j["key"] = f.key->hex();
  if (!f.problem.empty()) j["problem"] = f.problem;
  if (valid_entry(f)) {
    j["arch"] = kiln::cache::base_arch(f.arch);  // an int, as before; sm_90a: arch_specific
    j["arch_specific"] = kiln::cache::is_arch_specific(f.arch);
    j["arch_name"] = kiln::cache::arch_name(f.arch);
    j["kind"] = entry_kind(f);
    j["name"] = entry_name(f);
    j["kernels"] = f.kernels;
    j["nvrtc"] = f.nvrtc_version;
    j["other_nvrtc"] = f.other_nvrtc;
  }
  return j;
}

json prune_json(const fs::path& dir, const kiln::cache::PruneResult& r) {
  return {{"dir", dir.string()},
          {"entries_removed", r.entries_removed},
          {"bytes_removed", r.bytes_removed},
          {"busy_skipped", r.busy_skipped},
          {"locks_removed", r.locks_removed},
          {"temps_removed", r.temps_removed},
          {"errors", r.errors}};
}

// ---- commands ----

struct PrecompileArgs {
  std::string manifest;
  std::vector<std::string> archs;
  int jobs = 1;
  bool save_source = false, keep_going = false, shared = false;
  std::string lock_timeout;  // seconds; empty: KILN_CACHE_LOCK_TIMEOUT (default 30)
};

int run_precompile(const Common& c, const PrecompileArgs& a) {
  if (a.jobs < 1) throw BadInput("--jobs " + std::to_string(a.jobs) + ": at least 1");
  double lock_timeout = kiln::cache::CacheConfig::from_env().lock_timeout_s;
  if (!a.lock_timeout.empty()) {
    char* end = nullptr;
    const double s = std::strtod(a.lock_timeout.c_str(), &end);
    if (end == a.lock_timeout.c_str() || *end != '\0' || !(s >= 0) || s > 1e9)
      throw BadInput("--lock-timeout " + a.lock_timeout + ": a number of seconds >= 0");
    lock_timeout = s;
  }
  std::vector<int> archs = parse_archs(a.archs);
  kiln::tools::Manifest m;
  try {
    m = kiln::tools::read_manifest(a.manifest, a.keep_going);
  } catch (const kiln::Error& e) {
    throw BadInput(e.what());
  }
  if (archs.empty()) {
    archs = m.archs.empty() ? kiln::tools::recorded_archs(m) : m.archs;
    for (int arch : archs) kiln::cache::check_arch(arch);
  }
  if (archs.empty())
    throw BadInput("no architecture to compile for: pass --arch (e.g. --arch 90; supported: " +
                   kiln::cache::supported_archs_text() +
                   ") or give the manifest an \"archs\" list");
  // Every entry is checked before anything is compiled: a typo is exit 2 with nothing done,
  // unless --keep-going sets the bad entries aside (reported, exit 1).
  std::vector<std::string> invalid = m.invalid;
  std::vector<kiln::tools::PrecompileJob> work;
  for (const auto& e : m.entries) {
    std::vector<kiln::tools::PrecompileJob> jobs;
    try {
      for (int arch : archs) {
        auto j = kiln::tools::expand_entry(m, e, arch);
        jobs.insert(jobs.end(), std::make_move_iterator(j.begin()),
                    std::make_move_iterator(j.end()));
      }
    } catch (const kiln::Error& err) {
      if (!a.keep_going) throw BadInput(err.what());
      invalid.push_back(err.what());
      continue;
    }
    work.insert(work.end(), std::make_move_iterator(jobs.begin()),
                std::make_move_iterator(jobs.end()));
  }
  const fs::path dir = writable_cache_dir(c);
  kiln::tools::PrecompileOptions opts{.dir = dir,
                                      .jobs = a.jobs,
                                      .save_source = a.save_source,
                                      .progress_bar = !c.json && ::isatty(STDERR_FILENO) != 0,
                                      .quiet = c.json,
                                      .lock_timeout_s = lock_timeout};
  std::string arch_text;
  for (int arch : archs)
    arch_text += (arch_text.empty() ? "" : ", ") + kiln::cache::arch_name(arch);
  if (!c.json) {
    for (const auto& i : invalid) std::printf("invalid: %s\n", i.c_str());
    std::printf("precompiling %zu kernels from %zu manifest entries for %s into %s with %d job%s\n",
                work.size(), m.entries.size() + m.invalid.size(), arch_text.c_str(), dir.c_str(),
                a.jobs, a.jobs == 1 ? "" : "s");
    std::fflush(stdout);
  }
  const auto s = kiln::tools::precompile(work, opts);
  const auto share_errors =
      a.shared ? kiln::cache::share_for_reading(dir) : std::vector<std::string>{};
  const bool failed = s.failed || !invalid.empty() || !share_errors.empty();
  if (c.json) {
    json jobs = json::array();
    for (const auto& r : s.reports) {
      const auto& job = work[r.job];
      json j{{"key", r.key},
             {"name", job.name},
             {"kind", job.kind},
             {"variant", job.variant},
             {"arch", kiln::cache::base_arch(job.request.arch)},
             {"arch_name", kiln::cache::arch_name(job.request.arch)},
             {"entry", job.entry},
             {"outcome", kiln::tools::to_string(r.outcome)}};
      if (!r.error.empty()) j["error"] = r.error;
      jobs.push_back(std::move(j));
    }
    print_json({{"dir", dir.string()},
                {"archs", arch_list(archs)},
                {"kernels", work.size()},
                {"compiled", s.compiled},
                {"loaded_compiled_by_another_process", s.loaded},
                {"already_cached", s.cached},
                {"failed", s.failed},
                {"duplicates", s.duplicates},
                {"invalid_entries", invalid},
                {"shared", a.shared},
                {"errors", share_errors},
                {"seconds", s.seconds},
                {"jobs", jobs}});
    return failed ? kFailed : kOk;
  }
  std::printf(
      "done in %.2f s: %zu compiled, %zu loaded (compiled by another process), %zu already "
      "cached, %zu failed",
      s.seconds, s.compiled, s.loaded, s.cached, s.failed);
  if (s.duplicates) std::printf(" (%zu duplicates skipped)", s.duplicates);
  if (!invalid.empty()) std::printf("; %zu invalid manifest entries skipped", invalid.size());
  std::printf("\n");
  for (const auto& f : s.failures) std::printf("failed: %s\n", f.c_str());
  for (const auto& e : share_errors) std::printf("error: %s\n", e.c_str());
  if (a.shared && share_errors.empty())
    std::printf(
        "%s is readable by every user (folders 0755, entries 0644): deploy it with "
        "KILN_CACHE_READONLY_DIRS=%s\n",
        dir.c_str(), dir.c_str());
  return failed ? kFailed : kOk;
}

void print_refused(const kiln::cache::Inventory& inv) {
  for (const auto& r : inv.refused_folders) std::printf("refused folder: %s\n", r.c_str());
}

int run_list(const Common& c, bool all) {
  const auto inv = scan(cache_dir(c));
  const std::int64_t now = std::int64_t(std::time(nullptr));
  if (c.json) {
    auto files = json::array();
    for (const auto& f : inv.files)
      if (all || f.type == CacheFileType::entry) files.push_back(file_json(f));
    // An array as before, so scripts that read it keep working; refusals go to stderr.
    for (const auto& r : inv.refused_folders)
      std::fprintf(stderr, "refused folder: %s\n", r.c_str());
    print_json(files);
    return kOk;
  }
  print_refused(inv);
  std::printf("%-32s  %-11s  %-24s  %-7s  %9s  %5s\n", "key", "kind", "name", "arch", "size",
              "age");
  for (const auto& f : inv.files) {
    if (valid_entry(f)) {
      std::printf("%-32s  %-11s  %-24s  %-7s  %9s  %5s%s\n", f.key->hex().c_str(),
                  entry_kind(f).c_str(), entry_name(f).c_str(),
                  kiln::cache::arch_name(f.arch).c_str(), human_bytes(f.size).c_str(),
                  human_age(now - f.last_used).c_str(),
                  f.other_nvrtc ? ("  (NVRTC " + f.nvrtc_version + ")").c_str() : "");
    } else if (all || f.type == CacheFileType::entry || f.type == CacheFileType::stray) {
      std::printf("%-32s  %s: %s\n", f.key ? f.key->hex().c_str() : "-", f.path.c_str(),
                  f.problem.empty() ? kiln::cache::to_string(f.type) : f.problem.c_str());
    }
  }
  return kOk;
}

int run_stats(const Common& c) {
  const auto inv = scan(cache_dir(c));
  std::map<std::string, std::pair<std::size_t, std::uint64_t>> by_kind, by_arch, by_nvrtc;
  std::map<std::string, std::size_t> other;
  for (const auto& f : inv.files) {
    if (valid_entry(f)) {
      auto& k = by_kind[entry_kind(f)];
      ++k.first, k.second += f.size;
      auto& a = by_arch[kiln::cache::arch_name(f.arch)];
      ++a.first, a.second += f.size;
      auto& n = by_nvrtc[f.nvrtc_version.empty() ? "unknown" : f.nvrtc_version];
      ++n.first, n.second += f.size;
    } else if (f.type == CacheFileType::entry) {
      ++other["bad entries"];
    } else if (f.type == CacheFileType::stray || f.type == CacheFileType::temp ||
               !f.problem.empty()) {
      ++other[f.type == CacheFileType::temp ? "temp files" : "files that are not kiln's"];
    }
  }
  const std::string mine = kiln::cache::nvrtc_version().full;
  if (c.json) {
    json j{{"dir", inv.dir.string()},
           {"exists", inv.exists},
           {"entries", inv.valid_entries()},
           {"bytes", inv.entry_bytes()},
           {"bad_entries", inv.bad_entries()},
           {"nvrtc", mine},
           {"other_nvrtc_entries", inv.other_nvrtc_entries()},
           {"refused_folders", inv.refused_folders}};
    for (const auto& [k, v] : by_kind)
      j["by_kind"][k] = {{"entries", v.first}, {"bytes", v.second}};
    for (const auto& [k, v] : by_arch)
      j["by_arch"][k] = {{"entries", v.first}, {"bytes", v.second}};
    for (const auto& [k, v] : by_nvrtc)
      j["by_nvrtc"][k] = {{"entries", v.first}, {"bytes", v.second}};
    for (const auto& [k, v] : other) j["other_files"][k] = v;
    print_json(j);
    return kOk;
  }
  std::printf("cache folder: %s%s\n", inv.dir.c_str(), inv.exists ? "" : " (does not exist yet)");
  print_refused(inv);
  std::printf("entries: %zu (%s)\n", inv.valid_entries(), human_bytes(inv.entry_bytes()).c_str());
  for (const auto& [k, v] : by_kind)
    std::printf("  kind %-12s %6zu entries  %10s\n", k.c_str(), v.first,
                human_bytes(v.second).c_str());
  for (const auto& [k, v] : by_arch)
    std::printf("  arch %-12s %6zu entries  %10s\n", k.c_str(), v.first,
                human_bytes(v.second).c_str());
  for (const auto& [k, v] : by_nvrtc)
    std::printf("  NVRTC %-11s %6zu entries  %10s%s\n", k.c_str(), v.first,
                human_bytes(v.second).c_str(),
                k == mine || k == "unknown" ? "" : "  (another NVRTC)");
  if (const auto n = inv.other_nvrtc_entries())
    std::printf(
        "entries made by another NVRTC than this one (%s): %zu, never loaded by this kiln "
        "(kiln-cache prune --other-nvrtc removes them)\n",
        mine.c_str(), n);
  for (const auto& [k, v] : other)
    std::printf("%s: %zu%s\n", k.c_str(), v,
                k == "bad entries" ? " (kiln-cache verify --fix removes them)" : "");
  return kOk;
}

int run_info(const Common& c) {
  const auto cfg = kiln::cache::CacheConfig::from_env();
  std::string dir, dir_problem;
  try {
    dir = cache_dir(c).string();
  } catch (const BadInput& e) {
    dir_problem = e.what();
  }
  std::size_t entries = 0;
  std::uint64_t bytes = 0;
  if (!dir.empty()) {
    const auto inv = scan(dir, /*check=*/false);
    for (const auto& f : inv.files)
      if (f.type == CacheFileType::entry && f.problem.empty()) ++entries, bytes += f.size;
  }
  json readonly = json::array();
  for (const auto& d : cfg.readonly_dirs) {
    json r{{"dir", d.string()}};
    try {
      const auto inv = kiln::cache::scan_cache(d, /*check_entries=*/false);
      std::size_t n = 0;
      for (const auto& f : inv.files) n += f.type == CacheFileType::entry && f.problem.empty();
      r["exists"] = inv.exists;
      r["entries"] = n;
      if (!inv.refused_folders.empty()) r["refused"] = inv.refused_folders;
    } catch (const kiln::Error& e) {
      r["problem"] = e.what();
    }
    readonly.push_back(std::move(r));
  }
  const std::string max = cfg.max_bytes ? human_bytes(*cfg.max_bytes) : "";
  if (c.json) {
    json j{{"cache_dir", dir},
           {"entries", entries},
           {"bytes", bytes},
           {"readonly_dirs", readonly},
           {"in_memory_only", cfg.in_memory_only},
           {"disallow_compile", cfg.disallow_compile},
           {"lock_timeout_s", cfg.lock_timeout_s},
           {"nvrtc", kiln::cache::nvrtc_version().full},
           {"archs", kiln::cache::supported_archs_text()}};
    if (cfg.max_bytes) j["max_bytes"] = *cfg.max_bytes;
    if (!dir_problem.empty()) j["cache_dir_problem"] = dir_problem;
    print_json(j);
    return kOk;
  }
  std::printf("cache folder: %s%s\n", dir.empty() ? dir_problem.c_str() : dir.c_str(),
              cfg.in_memory_only ? " (KILN_CACHE_IN_MEMORY=1: programs do not use it)" : "");
  std::printf("entries: %zu (%ju bytes)\n", entries, std::uintmax_t(bytes));
  std::printf("size limit: %s\n",
              cfg.max_bytes ? (max + " (KILN_CACHE_MAX_SIZE: least recently used entries are "
                                     "evicted past it)")
                                  .c_str()
                            : "none (KILN_CACHE_MAX_SIZE)");
  if (readonly.empty())
    std::printf("read-only caches: none (KILN_CACHE_READONLY_DIRS: deployed caches read first)\n");
  for (const auto& r : readonly) {
    std::printf("read-only cache (KILN_CACHE_READONLY_DIRS, read before the cache folder): %s",
                r["dir"].get<std::string>().c_str());
    if (r.contains("problem"))
      std::printf(" (%s)", r["problem"].get<std::string>().c_str());
    else if (!r["exists"].get<bool>())
      std::printf(" (does not exist)");
    else
      std::printf(" (%zu entries)", r["entries"].get<std::size_t>());
    std::printf("\n");
  }
  std::printf("NVRTC: %s (archs %s)\n", kiln::cache::nvrtc_version().full.c_str(),
              kiln::cache::supported_archs_text().c_str());
  return kOk;
}

int run_verify(const Common& c, bool fix) {
  const fs::path dir = cache_dir(c);
  auto inv = scan(dir);
  if (!inv.exists)
    throw BadInput("cache folder " + dir.string() +
                   " does not exist (check --cache-dir / KILN_CACHE_DIR)");
  kiln::cache::FolderRepair repair;
  kiln::cache::PruneResult pruned;
  std::size_t bad = 0, stray = 0;
  std::vector<std::string> refused = inv.refused_folders;
  json bad_list = json::array(), stray_list = json::array();
  for (const auto& f : inv.files) {
    if (f.type == CacheFileType::entry && !f.problem.empty()) {
      ++bad;
      bad_list.push_back({{"path", f.path.string()}, {"problem", f.problem}});
    } else if (f.type == CacheFileType::stray) {
      ++stray;
      stray_list.push_back({{"path", f.path.string()}, {"problem", f.problem}});
    }
  }
  std::size_t bad_after = bad;
  std::vector<std::string> refused_after = refused;
  if (fix) {
    // Folders first: an entry is only bad because its folder was refused is fine once the
    // folder's mode is; then whatever is still bad is removed.
    repair = kiln::cache::repair_folder_modes(inv);
    try {
      pruned = kiln::cache::prune_cache(dir, {.bad_entries = true});
    } catch (const kiln::Error& e) {
      pruned.errors.push_back(e.what());
    }
    inv = scan(dir);
    bad_after = inv.bad_entries();
    refused_after = inv.refused_folders;
  }
  const bool ok =
      bad_after == 0 && refused_after.empty() && pruned.errors.empty() && repair.errors.empty();
  if (c.json) {
    json j{{"dir", dir.string()},       {"valid_entries", inv.valid_entries()},
           {"bad_entries", bad_list},   {"refused_folders", refused},
           {"stray_files", stray_list}, {"ok", ok}};
    if (fix) {
      j["fixed"] = {
          {"folders_repaired", repair.fixed},      {"entries_removed", pruned.entries_removed},
          {"locks_removed", pruned.locks_removed}, {"temps_removed", pruned.temps_removed},
          {"busy_skipped", pruned.busy_skipped},   {"errors", repair.errors},
          {"remove_errors", pruned.errors}};
      j["bad_entries_left"] = bad_after;
      j["refused_folders_left"] = refused_after;
    }
    print_json(j);
    return ok ? kOk : kFailed;
  }
  for (const auto& r : refused) std::printf("refused folder: %s\n", r.c_str());
  for (const auto& b : bad_list)
    std::printf("bad entry %s: %s\n", b["path"].get<std::string>().c_str(),
                b["problem"].get<std::string>().c_str());
  for (const auto& s : stray_list)
    std::printf("not an entry %s: %s\n", s["path"].get<std::string>().c_str(),
                s["problem"].get<std::string>().c_str());
  std::printf("%zu valid entries, %zu bad, %zu refused folders, %zu other files not kiln's\n",
              fix ? inv.valid_entries() : inv.valid_entries(), bad, refused.size(), stray);
  if (!fix) {
    if (!refused.empty()) std::printf("kiln-cache verify --fix repairs the folders' modes\n");
    return ok ? kOk : kFailed;
  }
  std::printf(
      "repaired %zu folders (chmod go-w), removed %zu bad entries, %zu stale lock files, %zu temp "
      "files%s\n",
      repair.fixed, pruned.entries_removed, pruned.locks_removed, pruned.temps_removed,
      pruned.busy_skipped ? " (some skipped: in use by another process)" : "");
  for (const auto& e : repair.errors) std::printf("error: %s\n", e.c_str());
  for (const auto& e : pruned.errors) std::printf("error: %s\n", e.c_str());
  for (const auto& r : refused_after) std::printf("still refused: %s\n", r.c_str());
  return ok ? kOk : kFailed;
}

int run_prune(const Common& c, const kiln::cache::PruneOptions& opts, const char* what) {
  const fs::path dir = cache_dir(c);
  kiln::cache::PruneResult r;
  try {
    r = kiln::cache::prune_cache(dir, opts);
  } catch (const kiln::Error& e) {
    throw BadInput(e.what());
  }
  if (c.json) {
    print_json(prune_json(dir, r));
    return r.errors.empty() ? kOk : kFailed;
  }
  std::printf("%s %s: removed %zu entries (%s), %zu stale lock files, %zu temp files", what,
              dir.c_str(), r.entries_removed, human_bytes(r.bytes_removed).c_str(), r.locks_removed,
              r.temps_removed);
  if (r.busy_skipped) std::printf("; kept %zu in use by another process", r.busy_skipped);
  std::printf("\n");
  for (const auto& e : r.errors) std::printf("error: %s\n", e.c_str());
  return r.errors.empty() ? kOk : kFailed;
}

int run_show(const Common& c, std::string key_text) {
  std::transform(key_text.begin(), key_text.end(), key_text.begin(), ::tolower);
  if (key_text.size() < 4 || key_text.size() > 32 ||
      key_text.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw BadInput("show " + key_text + ": a key is 4 to 32 hex digits (from kiln-cache list)");
  const auto inv = scan(cache_dir(c));
  const CacheFile* found = nullptr;
  for (const auto& f : inv.files) {
    if (f.type != CacheFileType::entry || !f.key || !f.key->hex().starts_with(key_text)) continue;
    if (found)
      throw BadInput("show " + key_text + ": more than one entry starts with it; give more digits");
    found = &f;
  }
  if (!found)
    throw BadInput("show " + key_text + ": no entry with that key in " + inv.dir.string());
  const CacheFile& f = *found;
  // The saved source is kiln's own file: never through a link, never a FIFO or device, never
  // one kiln would not trust, never unbounded.
  const fs::path src = kiln::cache::CacheLayout(inv.dir).source_path(*f.key);
  std::optional<std::string> source;
  std::string source_problem;
  {
    auto file = kiln::RegularFile::open(src, {.follow_links = false, .keep_atime = true});
    if (file.ok()) {
      if (auto why = kiln::cache::trust_problem(file.stat()))
        source_problem = "refused, " + *why;
      else if (!(source = file.read_all(kMaxShownSourceBytes)))
        source_problem = file.problem();
    } else if (!file.missing()) {
      source_problem = file.problem();
    }
  }
  if (c.json) {
    json j = file_json(f);
    if (source) j["source"] = *source;
    if (!source_problem.empty()) j["source_problem"] = source_problem;
    print_json(j);
    return f.problem.empty() ? kOk : kFailed;
  }
  const std::time_t mtime = f.mtime;
  std::printf("key:      %s\npath:     %s\nsize:     %ju bytes\nmodified: %s", f.key->hex().c_str(),
              f.path.c_str(), std::uintmax_t(f.size), std::ctime(&mtime));
  if (!f.problem.empty()) {
    std::printf("status:   BAD: %s\n", f.problem.c_str());
    return kFailed;
  }
  std::printf(
      "status:   valid\nkind:     %s\nname:     %s\narch:     %s\nNVRTC:    %s%s\nkernels: ",
      entry_kind(f).c_str(), entry_name(f).c_str(), kiln::cache::arch_name(f.arch).c_str(),
      f.nvrtc_version.empty() ? "unknown" : f.nvrtc_version.c_str(),
      f.other_nvrtc ? " (another NVRTC than this one: never loaded by this kiln)" : "");
  for (const auto& k : f.kernels) std::printf(" %s", k.c_str());
  std::printf("\n");
  if (!source_problem.empty()) {
    std::printf("source:   not shown: %s: %s\n", src.c_str(), source_problem.c_str());
    return kOk;
  }
  if (!source) {
    std::printf(
        "source:   not saved (KILN_CACHE_SAVE_SOURCE=1 or precompile --save-source keeps it)\n");
    return kOk;
  }
  std::printf("source (%s):\n%s\n", src.c_str(), kiln::cache::number_lines(*source).c_str());
  return kOk;
}

int run_devices(const Common& c) {
  const int n = kiln::device_count();
  if (c.json) {
    json gpus = json::array();
    for (int d = 0; d < n; ++d) {
      const auto& p = kiln::device_properties(d);
      gpus.push_back({{"index", d}, {"name", p.name}, {"arch", p.arch()}});
    }
    json j{{"devices", gpus}};
    if (n == 0) j["no_gpu"] = kiln::no_device_reason();
    print_json(j);
    return n ? kOk : kFailed;
  }
  if (n == 0) {
    std::printf("no GPU: %s\n", kiln::no_device_reason().c_str());
    return kFailed;
  }
  for (int d = 0; d < n; ++d) {
    const auto& p = kiln::device_properties(d);
    std::printf("GPU %d: %s, sm_%d\n", d, p.name.c_str(), p.arch());
  }
  return kOk;
}

struct ElementwiseArgs {
  std::string in_params, out_params, operation, name, preamble;
  std::vector<std::string> dtypes, options;
  std::vector<int> scalars, uniforms;
  std::string arch = "90";
  int ndim = 1, index_bits = 32, vector_width = 1, raw_ndim = 1;
  bool strided = false;
};

// One exact specialisation (the manifest's "layout" does the same from a file).
int run_elementwise(const Common& c, const ElementwiseArgs& a) {
  const int arch = parse_archs({a.arch}).front();
  kiln::elementwise_kernel_options opts;
  opts.preamble = a.preamble;
  opts.options = a.options;
  kiln::ElementwiseKernel k(a.in_params, a.out_params, a.operation, a.name, opts);
  std::vector<kiln::dtype> dtypes;
  for (const auto& d : a.dtypes) dtypes.push_back(kiln::dtype::from_name(d));
  kiln::aot_target t{.dtypes = dtypes, .scalar_inputs = a.scalars, .uniform_inputs = a.uniforms};
  t.only = kiln::elementwise_layout{
      .layout = a.strided ? kiln::codegen::Layout::strided : kiln::codegen::Layout::contiguous,
      .ndim = a.ndim,
      .index_bits = a.index_bits,
      .vector_width = a.vector_width,
      .raw_ndim = a.raw_ndim};
  std::vector<kiln::tools::PrecompileJob> jobs;
  for (auto& req : k.compile_requests(t, arch))
    jobs.push_back({.request = std::move(req),
                    .variant = "",
                    .entry = 1,
                    .kind = "elementwise",
                    .name = a.name});
  const fs::path dir = writable_cache_dir(c);
  const auto s = kiln::tools::precompile(
      jobs, {.dir = dir,
             .jobs = 1,
             .quiet = c.json,
             .lock_timeout_s = kiln::cache::CacheConfig::from_env().lock_timeout_s});
  if (c.json) {
    json j{{"dir", dir.string()},
           {"name", a.name},
           {"arch", kiln::cache::base_arch(arch)},
           {"arch_name", kiln::cache::arch_name(arch)}};
    if (!s.reports.empty()) {
      j["key"] = s.reports[0].key;
      j["outcome"] = kiln::tools::to_string(s.reports[0].outcome);
      if (!s.reports[0].error.empty()) j["error"] = s.reports[0].error;
    }
    print_json(j);
    return s.failed ? kFailed : kOk;
  }
  for (const auto& f : s.failures) std::printf("failed: %s\n", f.c_str());
  if (s.failed) return kFailed;
  std::printf("%s %s for %s in %s\n", s.compiled ? "compiled" : "found", a.name.c_str(),
              kiln::cache::arch_name(arch).c_str(), dir.c_str());
  return kOk;
}

void add_common(CLI::App* sub, Common& c) {
  sub->add_option("--cache-dir", c.cache_dir,
                  "cache folder (default: $KILN_CACHE_DIR, else ~/.cache/kiln)");
  sub->add_flag("--json", c.json, "one JSON document on stdout");
}

// The first word that is not an option (or an option's value): the command's name.
std::string command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cache-dir") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    return a;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kiln-cache: precompile, record, inspect and maintain kiln's kernel cache (no GPU needed)"};
  app.set_version_flag("--version", std::string("kiln-cache ") + KILN_VERSION + " (NVRTC " +
                                        kiln::cache::nvrtc_version().full + ", cache format " +
                                        std::to_string(kiln::cache::kCacheFormatVersion) + ")");
  app.footer(
      "Exit status: 0 ok; 1 some kernels failed or manifest entries were invalid (precompile), "
      "problems remain (verify), no GPU (devices); 2 bad usage or input (options, manifest, "
      "unusable cache folder).\n"
      "Record a manifest from a running program: KILN_CACHE_RECORD=kernels.jsonl ./program\n"
      "Deploy a cache read-only: precompile --shared, then KILN_CACHE_READONLY_DIRS=DIR ./program\n"
      "Manifest format: docs/manifest.md");
  app.require_subcommand(1);
  Common common;
  // Also before the command's name: kiln-cache --cache-dir DIR stats.
  add_common(&app, common);

  auto* pre =
      app.add_subcommand("precompile", "compile every kernel a manifest describes into the cache");
  PrecompileArgs pa;
  pre->add_option("manifest", pa.manifest,
                  "manifest file: JSON object, JSON array or JSON lines; - for standard input")
      ->required();
  pre->add_option("--arch", pa.archs,
                  "architectures, e.g. 80,90,90a (default: the manifest's \"archs\", or the "
                  "recorded ones)")
      ->delimiter(',');
  pre->add_option("--jobs,-j", pa.jobs, "parallel compiles")->capture_default_str();
  pre->add_flag("--save-source", pa.save_source,
                "keep each kernel's source beside it (see `show`)");
  pre->add_flag(
      "--keep-going", pa.keep_going,
      "set invalid manifest entries aside (reported; exit status 1) and compile the rest");
  pre->add_flag("--shared", pa.shared,
                "make the cache readable by every user (folders 0755, files 0644), to deploy it "
                "read-only (KILN_CACHE_READONLY_DIRS)");
  pre->add_option("--lock-timeout", pa.lock_timeout,
                  "seconds to wait for another process compiling the same kernel before compiling "
                  "it too (default: KILN_CACHE_LOCK_TIMEOUT, else 30)");
  add_common(pre, common);

  bool all = false, fix = false, other_nvrtc = false;
  auto* list = app.add_subcommand("list", "list entries: key, kind, name, arch, size, age");
  list->add_flag("--all", all, "also lock, source, metadata and temp files");
  add_common(list, common);
  auto* stats = app.add_subcommand("stats", "entries and bytes, per kind, arch and NVRTC");
  add_common(stats, common);
  auto* verify = app.add_subcommand(
      "verify", "check every entry (file, owner, header, checksum) and the folders' modes");
  verify->add_flag("--fix", fix,
                   "remove bad entries and stale lock / temp files; chmod go-w refused folders");
  add_common(verify, common);
  auto* prune = app.add_subcommand("prune", "remove least recently used entries");
  std::string max_size, older_than;
  prune->add_option("--max-size", max_size, "keep at most this much, e.g. 500M, 2G");
  prune->add_option("--older-than", older_than,
                    "remove entries unused for this long, e.g. 7d, 12h");
  prune->add_flag("--other-nvrtc", other_nvrtc,
                  "remove entries made by another NVRTC version (this kiln never loads them)");
  add_common(prune, common);
  auto* clear = app.add_subcommand("clear", "remove every entry (and lock, source, temp files)");
  add_common(clear, common);
  auto* show = app.add_subcommand("show", "one entry's metadata and saved source");
  std::string key;
  show->add_option("key", key, "key (or a unique prefix of 4+ hex digits)")->required();
  add_common(show, common);
  auto* info = app.add_subcommand(
      "info", "where the caches are (own and read-only), entries, size limit, NVRTC and its archs");
  add_common(info, common);
  auto* devices = app.add_subcommand("devices", "list GPUs; exit status 1 when there is none");
  add_common(devices, common);

  auto* ew =
      app.add_subcommand("elementwise", "compile one exact ElementwiseKernel specialisation");
  ElementwiseArgs a;
  ew->add_option("--in", a.in_params, "input parameters, e.g. \"float32 x, T y\"")->required();
  ew->add_option("--out", a.out_params, "output parameters, e.g. \"float32 z\"")->required();
  ew->add_option("--op", a.operation, "the operation, e.g. \"z = x + y\"")->required();
  ew->add_option("--name", a.name, "kernel name")->required();
  ew->add_option("--dtypes", a.dtypes, "dtype of each argument (inputs, then outputs)")
      ->required()
      ->delimiter(',');
  ew->add_option("--scalars", a.scalars, "indices of inputs passed as scalars")->delimiter(',');
  ew->add_option("--uniforms", a.uniforms,
                 "indices of inputs passed as one-element arrays (a 0-d array, shape (1,))")
      ->delimiter(',');
  ew->add_option("--arch", a.arch, "compute capability, e.g. 90 for sm_90")->capture_default_str();
  ew->add_flag("--strided", a.strided, "strided layout (default: contiguous)");
  ew->add_option("--ndim", a.ndim, "strided: collapsed dimensions")->capture_default_str();
  ew->add_option("--index-bits", a.index_bits, "32 or 64");
  ew->add_option("--vector-width", a.vector_width, "contiguous: elements per 16-byte vector");
  ew->add_option("--raw-ndim", a.raw_ndim, "ndim of raw array parameters");
  ew->add_option("--preamble", a.preamble, "code before the kernel");
  ew->add_option("--option", a.options, "an NVRTC option (repeatable)");
  add_common(ew, common);

  // CLI11 says "The following arguments were not expected" for a misspelt command: name it.
  if (const std::string word = command_word(argc, argv); !word.empty()) {
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands(std::function<bool(CLI::App*)>{})) {
      known = known || sub->get_name() == word;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "kiln-cache: unknown command '%s' (commands: %s; see --help)\n",
                   word.c_str(), names.c_str());
      return kBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int r = app.exit(e);  // prints help, the version, or the error
    return r == 0 ? kOk : kBadInput;
  }
  try {
    if (pre->parsed()) return run_precompile(common, pa);
    if (list->parsed()) return run_list(common, all);
    if (stats->parsed()) return run_stats(common);
    if (verify->parsed()) return run_verify(common, fix);
    if (prune->parsed()) {
      if (max_size.empty() && older_than.empty() && !other_nvrtc)
        throw BadInput(
            "prune: say what to remove: --max-size SIZE (e.g. 2G), --older-than AGE (e.g. 7d) "
            "or --other-nvrtc");
      kiln::cache::PruneOptions o;
      try {
        if (!max_size.empty()) o.max_bytes = kiln::cache::parse_size(max_size);
      } catch (const kiln::ValueError& e) {
        throw BadInput("--max-size " + max_size + ": " + e.what());
      }
      try {
        if (!older_than.empty()) o.older_than_s = kiln::cache::parse_age(older_than);
      } catch (const kiln::ValueError& e) {
        throw BadInput("--older-than " + older_than + ": " + e.what());
      }
      o.other_nvrtc = other_nvrtc;
      return run_prune(common, o, "prune");
    }
    if (clear->parsed()) return run_prune(common, {.everything = true}, "clear");
    if (show->parsed()) return run_show(common, key);
    if (info->parsed()) return run_info(common);
    if (devices->parsed()) return run_devices(common);
    return run_elementwise(common, a);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln-cache: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln-cache: %s\n", e.what());
    return kBadInput;
  }
}
