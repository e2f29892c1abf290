// kiln-cache: fills, inspects and maintains kiln's on-disk kernel cache, so a deployed
// program never waits on NVRTC. Runs without a GPU.
//
//   kiln-cache precompile samples/kernels.json --arch 80,90 --jobs 2
//   KILN_CACHE_RECORD=k.jsonl ./app && kiln-cache precompile k.jsonl --arch 90 --cache-dir out
//   kiln-cache list | stats | verify [--fix] | prune --max-size 1G | clear | show KEY
//   kiln-cache devices | info | --version
//
// Exit status: 0 ok; 1 some kernels failed (precompile), bad entries left (verify), no GPU
// (devices); 2 bad usage or input (including an unusable cache folder or manifest).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/cache/cache_config.hpp"
#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/disk_cache.hpp"
#include "kiln/cache/entry_format.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/kiln.hpp"
#include "manifest.hpp"
#include "precompile.hpp"

namespace {
namespace fs = std::filesystem;
using kiln::cache::CacheFile;
using kiln::cache::CacheFileType;

constexpr int kOk = 0, kFailed = 1, kBadInput = 2;

// Bad usage or input: one line on stderr, exit status 2.
struct BadInput : kiln::Error {
  using kiln::Error::Error;
};

struct Common {
  std::string cache_dir;
};

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

kiln::cache::Inventory scan(const Common& c, bool check = true) {
  try {
    return kiln::cache::scan_cache(cache_dir(c), check);
  } catch (const BadInput&) {
    throw;
  } catch (const kiln::Error& e) {
    throw BadInput(e.what());
  }
}

std::vector<int> parse_archs(const std::vector<std::string>& args) {
  std::vector<int> archs;
  for (const auto& a : args) {
    std::string s = a;
    if (s.starts_with("sm_")) s = s.substr(3);
    int v = 0;
    std::size_t used = 0;
    try {
      v = std::stoi(s, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != s.size())
      throw BadInput("--arch " + a +
                     ": not an architecture number (e.g. 90 for sm_90); supported: " +
                     kiln::cache::supported_archs_text());
    try {
      kiln::cache::check_arch(v);
    } catch (const kiln::Error& e) {
      throw BadInput(std::string("--arch ") + a + ": " + e.what());
    }
    if (std::find(archs.begin(), archs.end(), v) == archs.end()) archs.push_back(v);
  }
  return archs;
}

std::string human_bytes(std::uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string human_age(std::int64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + "s";
  if (seconds < 7200) return std::to_string(seconds / 60) + "m";
  if (seconds < 172800) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

std::uint64_t parse_size(const std::string& text) {
  std::size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (...) {
  }
  std::string unit = text.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), ::tolower);
  static const std::map<std::string, double> units{{"", 1},
                                                   {"b", 1},
                                                   {"k", 1024.0},
                                                   {"kb", 1e3},
                                                   {"kib", 1024.0},
                                                   {"m", 1048576.0},
                                                   {"mb", 1e6},
                                                   {"mib", 1048576.0},
                                                   {"g", 1073741824.0},
                                                   {"gb", 1e9},
                                                   {"gib", 1073741824.0},
                                                   {"t", 1099511627776.0},
                                                   {"tb", 1e12},
                                                   {"tib", 1099511627776.0}};
  auto it = units.find(unit);
  if (v < 0 || used == 0 || it == units.end())
    throw BadInput("--max-size " + text + ": not a size (examples: 500M, 2G, 1048576)");
  return std::uint64_t(v * it->second);
}

std::int64_t parse_age(const std::string& text) {
  std::size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (...) {
  }
  const std::string unit = text.substr(used);
  static const std::map<std::string, double> units{
      {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 604800}};
  auto it = units.find(unit);
  if (v < 0 || used == 0 || it == units.end())
    throw BadInput("--older-than " + text + ": not an age (examples: 90s, 30m, 12h, 7d, 2w)");
  return std::int64_t(v * it->second);
}

std::string entry_kind(const CacheFile& f) {
  return f.meta && !f.meta->kind.empty() ? f.meta->kind : "-";
}
std::string entry_name(const CacheFile& f) {
  if (f.meta && !f.meta->name.empty()) return f.meta->name;
  return f.kernels.empty() ? "-" : f.kernels.front();
}

// ---- commands ----

int run_precompile(const Common& c, const std::string& manifest_path,
                   const std::vector<std::string>& arch_args, int jobs, bool save_source) {
  if (jobs < 1) throw BadInput("--jobs " + std::to_string(jobs) + ": at least 1");
  std::vector<int> archs = parse_archs(arch_args);
  kiln::tools::Manifest m;
  try {
    m = kiln::tools::read_manifest(manifest_path);
  } catch (const kiln::Error& e) {
    throw BadInput(e.what());
  }
  if (archs.empty())
    archs = parse_archs([&] {
      std::vector<std::string> s;
      for (int a : m.archs.empty() ? kiln::tools::recorded_archs(m) : m.archs)
        s.push_back(std::to_string(a));
      return s;
    }());
  if (archs.empty())
    throw BadInput("no architecture to compile for: pass --arch (e.g. --arch 90; supported: " +
                   kiln::cache::supported_archs_text() +
                   ") or give the manifest an \"archs\" list");
  // Every entry is checked before anything is compiled: a typo is exit 2 with nothing done.
  std::vector<kiln::tools::PrecompileJob> work;
  for (int arch : archs)
    for (const auto& e : m.entries) {
      try {
        auto j = kiln::tools::expand_entry(m, e, arch);
        work.insert(work.end(), std::make_move_iterator(j.begin()),
                    std::make_move_iterator(j.end()));
      } catch (const kiln::Error& err) {
        throw BadInput(err.what());
      }
    }
  const fs::path dir = writable_cache_dir(c);
  kiln::tools::PrecompileOptions opts{.dir = dir,
                                      .jobs = jobs,
                                      .save_source = save_source,
                                      .progress_bar = ::isatty(STDERR_FILENO) != 0};
  std::string arch_text;
  for (int a : archs) arch_text += (arch_text.empty() ? "sm_" : ", sm_") + std::to_string(a);
  std::printf("precompiling %zu kernels from %zu manifest entries for %s into %s with %d job%s\n",
              work.size(), m.entries.size(), arch_text.c_str(), dir.c_str(), jobs,
              jobs == 1 ? "" : "s");
  std::fflush(stdout);
  const auto s = kiln::tools::precompile(work, opts);
  std::printf("done in %.2f s: %zu compiled, %zu already cached, %zu failed", s.seconds, s.compiled,
              s.cached, s.failed);
  if (s.duplicates) std::printf(" (%zu duplicates skipped)", s.duplicates);
  std::printf("\n");
  for (const auto& f : s.failures) std::printf("failed: %s\n", f.c_str());
  return s.failed ? kFailed : kOk;
}

int run_list(const Common& c, bool json, bool all) {
  const auto inv = scan(c);
  const std::int64_t now = std::int64_t(std::time(nullptr));
  if (json) {
    auto out = nlohmann::json::array();
    for (const auto& f : inv.files) {
      if (!all && f.type != CacheFileType::entry) continue;
      nlohmann::json j{{"path", f.path.string()},  {"type", kiln::cache::to_string(f.type)},
                       {"size", f.size},           {"mtime", f.mtime},
                       {"last_used", f.last_used}, {"valid", f.problem.empty()}};
      if (f.key) j["key"] = f.key->hex();
      if (!f.problem.empty()) j["problem"] = f.problem;
      if (f.type == CacheFileType::entry && f.problem.empty()) {
        j["arch"] = f.arch;
        j["kind"] = entry_kind(f);
        j["name"] = entry_name(f);
        j["kernels"] = f.kernels;
      }
      out.push_back(std::move(j));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kOk;
  }
  std::printf("%-32s  %-11s  %-24s  %-6s  %9s  %5s\n", "key", "kind", "name", "arch", "size",
              "age");
  for (const auto& f : inv.files) {
    if (f.type == CacheFileType::entry && f.problem.empty()) {
      std::printf("%-32s  %-11s  %-24s  sm_%-3d  %9s  %5s\n", f.key->hex().c_str(),
                  entry_kind(f).c_str(), entry_name(f).c_str(), f.arch, human_bytes(f.size).c_str(),
                  human_age(now - f.last_used).c_str());
    } else if (all || f.type == CacheFileType::entry || f.type == CacheFileType::stray) {
      std::printf("%-32s  %s: %s\n", f.key ? f.key->hex().c_str() : "-", f.path.c_str(),
                  f.problem.empty() ? kiln::cache::to_string(f.type) : f.problem.c_str());
    }
  }
  return kOk;
}

int run_stats(const Common& c, bool json) {
  const auto inv = scan(c);
  std::map<std::string, std::pair<std::size_t, std::uint64_t>> by_kind, by_arch;
  std::map<std::string, std::size_t> other;
  for (const auto& f : inv.files) {
    if (f.type == CacheFileType::entry && f.problem.empty()) {
      auto& k = by_kind[entry_kind(f)];
      ++k.first, k.second += f.size;
      auto& a = by_arch["sm_" + std::to_string(f.arch)];
      ++a.first, a.second += f.size;
    } else if (f.type == CacheFileType::entry) {
      ++other["bad entries"];
    } else if (f.type == CacheFileType::stray || f.type == CacheFileType::temp ||
               !f.problem.empty()) {
      ++other[f.type == CacheFileType::temp ? "temp files" : "files that are not kiln's"];
    }
  }
  if (json) {
    nlohmann::json j{{"dir", inv.dir.string()},
                     {"exists", inv.exists},
                     {"entries", inv.valid_entries()},
                     {"bytes", inv.entry_bytes()},
                     {"bad_entries", inv.bad_entries()}};
    for (const auto& [k, v] : by_kind)
      j["by_kind"][k] = {{"entries", v.first}, {"bytes", v.second}};
    for (const auto& [k, v] : by_arch)
      j["by_arch"][k] = {{"entries", v.first}, {"bytes", v.second}};
    for (const auto& [k, v] : other) j["other_files"][k] = v;
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  std::printf("cache folder: %s%s\n", inv.dir.c_str(), inv.exists ? "" : " (does not exist yet)");
  std::printf("entries: %zu (%s)\n", inv.valid_entries(), human_bytes(inv.entry_bytes()).c_str());
  for (const auto& [k, v] : by_kind)
    std::printf("  kind %-12s %6zu entries  %10s\n", k.c_str(), v.first,
                human_bytes(v.second).c_str());
  for (const auto& [k, v] : by_arch)
    std::printf("  arch %-12s %6zu entries  %10s\n", k.c_str(), v.first,
                human_bytes(v.second).c_str());
  for (const auto& [k, v] : other)
    std::printf("%s: %zu%s\n", k.c_str(), v,
                k == "bad entries" ? " (kiln-cache verify --fix removes them)" : "");
  return kOk;
}

int run_info(const Common& c) {
  std::string dir;
  try {
    dir = cache_dir(c).string();
  } catch (const BadInput& e) {
    dir = e.what();
  }
  const auto cfg = kiln::cache::CacheConfig::from_env();
  const auto inv = scan(c);
  std::printf("cache folder: %s%s\nentries: %zu (%ju bytes)\nNVRTC: %s (archs %s)\n", dir.c_str(),
              cfg.in_memory_only ? " (KILN_CACHE_IN_MEMORY=1: programs do not use it)" : "",
              inv.valid_entries(), std::uintmax_t(inv.entry_bytes()),
              kiln::cache::nvrtc_version().full.c_str(),
              kiln::cache::supported_archs_text().c_str());
  return kOk;
}

int run_verify(const Common& c, bool fix) {
  const auto inv = scan(c);
  std::size_t bad = 0, stray = 0;
  for (const auto& f : inv.files) {
    if (f.type == CacheFileType::entry && !f.problem.empty()) {
      ++bad;
      std::printf("bad entry %s: %s\n", f.path.c_str(), f.problem.c_str());
    } else if (f.type == CacheFileType::stray) {
      ++stray;
      std::printf("not an entry %s: %s\n", f.path.c_str(), f.problem.c_str());
    }
  }
  std::printf("%zu valid entries, %zu bad, %zu other files not kiln's\n", inv.valid_entries(), bad,
              stray);
  if (!fix) return bad ? kFailed : kOk;
  kiln::cache::PruneResult r;
  try {
    r = kiln::cache::prune_cache(inv.dir, {.bad_entries = true});
  } catch (const kiln::Error& e) {
    throw BadInput(e.what());
  }
  std::printf("removed %zu bad entries, %zu stale lock files, %zu temp files%s\n",
              r.entries_removed, r.locks_removed, r.temps_removed,
              r.busy_skipped ? " (some skipped: in use by another process)" : "");
  for (const auto& e : r.errors) std::printf("error: %s\n", e.c_str());
  return r.entries_removed < bad || !r.errors.empty() ? kFailed : kOk;
}

int run_prune(const Common& c, const kiln::cache::PruneOptions& opts, const char* what) {
  const fs::path dir = cache_dir(c);
  kiln::cache::PruneResult r;
  try {
    r = kiln::cache::prune_cache(dir, opts);
  } catch (const kiln::Error& e) {
    throw BadInput(e.what());
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
  const auto inv = scan(c);
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
  const std::time_t mtime = f.mtime;
  std::printf("key:      %s\npath:     %s\nsize:     %ju bytes\nmodified: %s", f.key->hex().c_str(),
              f.path.c_str(), std::uintmax_t(f.size), std::ctime(&mtime));
  if (!f.problem.empty()) {
    std::printf("status:   BAD: %s\n", f.problem.c_str());
    return kFailed;
  }
  std::printf("status:   valid\nkind:     %s\nname:     %s\narch:     sm_%d\nkernels: ",
              entry_kind(f).c_str(), entry_name(f).c_str(), f.arch);
  for (const auto& k : f.kernels) std::printf(" %s", k.c_str());
  std::printf("\n");
  const fs::path src = kiln::cache::CacheLayout(inv.dir).source_path(*f.key);
  std::ifstream in(src);
  if (!in) {
    std::printf(
        "source:   not saved (KILN_CACHE_SAVE_SOURCE=1 or precompile --save-source keeps it)\n");
    return kOk;
  }
  std::stringstream s;
  s << in.rdbuf();
  std::printf("source (%s):\n%s\n", src.c_str(), kiln::cache::number_lines(s.str()).c_str());
  return kOk;
}

int run_devices() {
  int n = kiln::device_count();
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
  std::vector<int> scalars;
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
  kiln::aot_target t{.dtypes = dtypes, .scalar_inputs = a.scalars};
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
  const auto s = kiln::tools::precompile(jobs, {.dir = dir, .jobs = 1});
  for (const auto& f : s.failures) std::printf("failed: %s\n", f.c_str());
  if (s.failed) return kFailed;
  std::printf("%s %s for sm_%d in %s\n", s.compiled ? "compiled" : "found", a.name.c_str(), arch,
              dir.c_str());
  return kOk;
}

void add_cache_dir(CLI::App* sub, Common& c) {
  sub->add_option("--cache-dir", c.cache_dir,
                  "cache folder (default: $KILN_CACHE_DIR, else ~/.cache/kiln)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kiln-cache: precompile, record, inspect and maintain kiln's kernel cache (no GPU needed)"};
  app.set_version_flag("--version", std::string("kiln-cache ") + KILN_VERSION + " (NVRTC " +
                                        kiln::cache::nvrtc_version().full + ", cache format " +
                                        std::to_string(kiln::cache::kCacheFormatVersion) + ")");
  app.footer(
      "Exit status: 0 ok; 1 some kernels failed (precompile), bad entries remain (verify), no GPU "
      "(devices); 2 bad usage or input (options, manifest, unusable cache folder).\n"
      "Record a manifest from a running program: KILN_CACHE_RECORD=kernels.jsonl ./program\n"
      "Manifest format: docs/manifest.md");
  app.require_subcommand(1);
  Common common;

  auto* pre =
      app.add_subcommand("precompile", "compile every kernel a manifest describes into the cache");
  std::string manifest;
  std::vector<std::string> archs;
  int jobs = 1;
  bool save_source = false;
  pre->add_option("manifest", manifest, "manifest file: JSON object, JSON array or JSON lines")
      ->required();
  pre->add_option(
         "--arch", archs,
         "architectures, e.g. 80,90 (default: the manifest's \"archs\", or the recorded ones)")
      ->delimiter(',');
  pre->add_option("--jobs,-j", jobs, "parallel compiles")->capture_default_str();
  pre->add_flag("--save-source", save_source, "keep each kernel's source beside it (see `show`)");
  add_cache_dir(pre, common);

  bool json = false, all = false, fix = false;
  auto* list = app.add_subcommand("list", "list entries: key, kind, name, arch, size, age");
  list->add_flag("--json", json, "JSON output");
  list->add_flag("--all", all, "also lock, source, metadata and temp files");
  add_cache_dir(list, common);
  auto* stats = app.add_subcommand("stats", "entries and bytes, per kind and per arch");
  stats->add_flag("--json", json, "JSON output");
  add_cache_dir(stats, common);
  auto* verify = app.add_subcommand("verify", "check every entry's header and checksum");
  verify->add_flag("--fix", fix, "remove bad entries (and stale lock / temp files)");
  add_cache_dir(verify, common);
  auto* prune = app.add_subcommand("prune", "remove least recently used entries");
  std::string max_size, older_than;
  auto* max_opt =
      prune->add_option("--max-size", max_size, "keep at most this much, e.g. 500M, 2G");
  auto* age_opt = prune->add_option("--older-than", older_than,
                                    "remove entries unused for this long, e.g. 7d, 12h");
  (void)max_opt, (void)age_opt;
  add_cache_dir(prune, common);
  auto* clear = app.add_subcommand("clear", "remove every entry (and lock, source, temp files)");
  add_cache_dir(clear, common);
  auto* show = app.add_subcommand("show", "one entry's metadata and saved source");
  std::string key;
  show->add_option("key", key, "key (or a unique prefix of 4+ hex digits)")->required();
  add_cache_dir(show, common);
  auto* info = app.add_subcommand("info", "where the cache is, its entries, NVRTC and its archs");
  add_cache_dir(info, common);
  auto* devices = app.add_subcommand("devices", "list GPUs; exit status 1 when there is none");

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
  ew->add_option("--arch", a.arch, "compute capability, e.g. 90 for sm_90")->capture_default_str();
  ew->add_flag("--strided", a.strided, "strided layout (default: contiguous)");
  ew->add_option("--ndim", a.ndim, "strided: collapsed dimensions")->capture_default_str();
  ew->add_option("--index-bits", a.index_bits, "32 or 64");
  ew->add_option("--vector-width", a.vector_width, "contiguous: elements per 16-byte vector");
  ew->add_option("--raw-ndim", a.raw_ndim, "ndim of raw array parameters");
  ew->add_option("--preamble", a.preamble, "code before the kernel");
  ew->add_option("--option", a.options, "an NVRTC option (repeatable)");
  add_cache_dir(ew, common);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int r = app.exit(e);  // prints help, the version, or the error
    return r == 0 ? kOk : kBadInput;
  }
  try {
    if (pre->parsed()) return run_precompile(common, manifest, archs, jobs, save_source);
    if (list->parsed()) return run_list(common, json, all);
    if (stats->parsed()) return run_stats(common, json);
    if (verify->parsed()) return run_verify(common, fix);
    if (prune->parsed()) {
      if (max_size.empty() && older_than.empty())
        throw BadInput(
            "prune: say how much to keep: --max-size SIZE (e.g. 2G) or --older-than AGE (e.g. 7d)");
      kiln::cache::PruneOptions o;
      if (!max_size.empty()) o.max_bytes = parse_size(max_size);
      if (!older_than.empty()) o.older_than_s = parse_age(older_than);
      return run_prune(common, o, "prune");
    }
    if (clear->parsed()) return run_prune(common, {.everything = true}, "clear");
    if (show->parsed()) return run_show(common, key);
    if (info->parsed()) return run_info(common);
    if (devices->parsed()) return run_devices();
    return run_elementwise(common, a);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln-cache: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln-cache: %s\n", e.what());
    return kBadInput;
  }
}
