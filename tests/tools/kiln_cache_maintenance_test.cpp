// kiln-cache maintenance that tells the truth: limits that cannot overflow, a lock wait that
// honours its setting, verify that reports what it cannot check and repairs folder modes,
// compiles counted apart from loads, entries of another NVRTC found, JSON from every command.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_test_support.hpp"
#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/cache_layout.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/cubin_info.hpp"
#include "kiln/cache/entry_file.hpp"
#include "kiln/cache/entry_format.hpp"
#include "kiln/cache/kernel_record.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/runtime/device.hpp"
#include "manifest.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using kiln::test::line_count;
using kiln::test::q;
using kiln::test::run_cli;
using kiln::test::run_cli_stdout;
using kiln::test::write_text;

// Three recorded kernels: fast to compile, enough to count.
std::string small_manifest(const std::string& tag) {
  std::string m;
  for (int i = 0; i < 3; ++i) {
    kiln::cache::CompileRequest r;
    r.kernel_name = "k" + std::to_string(i);
    r.source = "extern \"C\" __global__ void k" + std::to_string(i) +
               "(float* x) { x[0] = " + std::to_string(i) + "; } // " + tag + "\n";
    r.kind = "raw";
    m += kiln::cache::record_line(r, true);
  }
  return m;
}

struct SmallCache {
  kiln::test::TempDir tmp;
  fs::path dir = tmp.path() / "cache";
  fs::path manifest = tmp.path() / "m.jsonl";
  explicit SmallCache(const std::string& tag) {
    write_text(manifest, small_manifest(tag));
    const auto r = run_cli("precompile " + q(manifest) + " --arch 90 --cache-dir " + q(dir));
    INFO(r.output);
    REQUIRE(r.status == 0);
  }
  std::size_t entries() const { return kiln::cache::scan_cache(dir).valid_entries(); }
};

}  // namespace

TEST_CASE("prune limits too large to hold clamp to no limit and nan or inf are refused",
          "[tools]") {
  SmallCache c("clamp");
  REQUIRE(c.entries() == 3);
  for (const char* arg : {"--older-than 1e30s", "--older-than 1e17w", "--older-than 1e999d",
                          "--max-size 1e30", "--max-size 1e999", "--max-size 20000000000T"}) {
    const auto r = run_cli(std::string("prune ") + arg + " --cache-dir " + q(c.dir));
    INFO(arg << ": " << r.output);
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Contains("removed 0 entries"));
    CHECK(c.entries() == 3);
  }
  for (const char* arg : {"--older-than nans", "--older-than infd", "--older-than -1d",
                          "--max-size nan", "--max-size inf", "--max-size -5G"}) {
    const auto r = run_cli(std::string("prune ") + arg + " --cache-dir " + q(c.dir));
    INFO(arg << ": " << r.output);
    CHECK(r.status == 2);
    CHECK(line_count(r.output) == 1);
    CHECK(c.entries() == 3);
  }
}

TEST_CASE(
    "precompile gives up waiting on a held lock after KILN_CACHE_LOCK_TIMEOUT or --lock-timeout",
    "[tools]") {
  kiln::test::TempDir tmp;
  const fs::path dir = tmp.path() / "cache", manifest = tmp.path() / "m.jsonl";
  write_text(manifest, small_manifest("lock"));
  const auto m = kiln::tools::read_manifest(manifest);
  auto job = kiln::tools::expand_entry(m, m.entries[0], 90).front();
  const kiln::cache::CacheLayout layout(dir);
  const auto key = kiln::cache::cache_key(job.request);
  REQUIRE(kiln::cache::writable_folder_problem(dir, true) == std::nullopt);
  fs::create_directories(layout.fanout(key));
  fs::permissions(layout.fanout(key), fs::perms::owner_all);
  // Another "process" compiling the first kernel, stopped: it holds the lock and never ends.
  const int held = ::open(layout.lock_path(key).c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(::flock(held, LOCK_EX) == 0);
  for (const std::string how : {"env", "flag"}) {
    INFO(how);
    fs::remove(layout.entry_path(key));
    const auto start = std::chrono::steady_clock::now();
    const auto r = how == "env"
                       ? run_cli("precompile " + q(manifest) + " --arch 90 --cache-dir " + q(dir),
                                 "KILN_CACHE_LOCK_TIMEOUT=1")
                       : run_cli("precompile " + q(manifest) +
                                     " --arch 90 --lock-timeout 1 --cache-dir " + q(dir),
                                 "KILN_CACHE_LOCK_TIMEOUT=300");
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(s < 20);  // not the default 30 s (nor 300)
    CHECK_THAT(r.output, Contains("gave up after"));
  }
  CHECK(
      run_cli("precompile " + q(manifest) + " --lock-timeout soon --arch 90 --cache-dir " + q(dir))
          .status == 2);
  ::close(held);
}

TEST_CASE("verify says a missing folder is missing and exits 2", "[tools]") {
  kiln::test::TempDir tmp;
  const auto r = run_cli("verify --cache-dir " + q(tmp.path() / "typo"));
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Contains("does not exist"));
  CHECK(!fs::exists(tmp.path() / "typo"));
}

TEST_CASE("verify reports refused folders and --fix repairs their mode so precompile works again",
          "[tools]") {
  SmallCache c("refused");
  const auto fanouts = [&] {
    std::vector<fs::path> v;
    for (const auto& e : fs::directory_iterator(c.dir)) v.push_back(e.path());
    return v;
  }();
  REQUIRE(!fanouts.empty());
  for (const fs::path& folder : {c.dir, fanouts.front()}) {
    INFO(folder);
    fs::permissions(folder, fs::perms::all);  // 0777
    const auto r = run_cli("verify --cache-dir " + q(c.dir));
    CHECK(r.status == 1);
    CHECK_THAT(r.output, Contains("refused folder") && Contains(folder.string()) &&
                             Contains("writable by group or others"));
    const auto fixed = run_cli("verify --fix --cache-dir " + q(c.dir));
    INFO(fixed.output);
    CHECK(fixed.status == 0);
    CHECK_THAT(fixed.output, Contains("repaired 1 folders"));
    CHECK((fs::status(folder).permissions() & (fs::perms::group_write | fs::perms::others_write)) ==
          fs::perms::none);
    CHECK(run_cli("verify --cache-dir " + q(c.dir)).status == 0);
    CHECK(c.entries() == 3);  // the entries were fine: only the folder's mode was wrong
    const auto again =
        run_cli("precompile " + q(c.manifest) + " --arch 90 --cache-dir " + q(c.dir));
    INFO(again.output);
    CHECK(again.status == 0);
    CHECK_THAT(again.output, Contains("3 already cached, 0 failed"));
  }
}

TEST_CASE("concurrent precompiles count NVRTC runs as compiled and the rest as loaded or cached",
          "[tools]") {
  kiln::test::TempDir tmp;
  const fs::path dir = tmp.path() / "cache", manifest = tmp.path() / "m.jsonl";
  write_text(manifest, small_manifest("count"));
  constexpr int kRuns = 6;
  std::vector<std::future<kiln::test::CliResult>> runs;
  for (int i = 0; i < kRuns; ++i)
    runs.push_back(std::async(std::launch::async, [&] {
      return run_cli_stdout("precompile " + q(manifest) +
                            " --arch 80,90 --jobs 2 --json --cache-dir " + q(dir));
    }));
  std::size_t compiled = 0, loaded = 0, cached = 0;
  for (auto& f : runs) {
    const auto r = f.get();
    INFO(r.output);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.output);
    compiled += j["compiled"].get<std::size_t>();
    loaded += j["loaded_compiled_by_another_process"].get<std::size_t>();
    cached += j["already_cached"].get<std::size_t>();
    for (const auto& job : j["jobs"])
      CHECK((job["outcome"] == "compiled" || job["outcome"] == "loaded" ||
             job["outcome"] == "cached"));
  }
  // Each of the 6 kernels compiled by exactly one process; every other report is a load.
  CHECK(compiled == 6);
  CHECK(compiled + loaded + cached == kRuns * 6);
  const auto text = run_cli("precompile " + q(manifest) + " --arch 80,90 --cache-dir " + q(dir));
  CHECK_THAT(text.output,
             Contains("0 compiled, 0 loaded (compiled by another process), 6 already cached"));
}

TEST_CASE("stats and prune find entries made by another NVRTC version", "[tools]") {
  SmallCache c("nvrtc");
  // An entry as another NVRTC would have made it: the same cubin with another version in its
  // toolkit note, stored under a key this kiln never computes.
  const auto inv = kiln::cache::scan_cache(c.dir);
  const auto& first = *std::find_if(inv.files.begin(), inv.files.end(), [](const auto& f) {
    return f.type == kiln::cache::CacheFileType::entry;
  });
  auto bin =
      *kiln::cache::read_entry_file(first.path, *first.key, kiln::cache::EntryUse::look).binary;
  const std::string mine = ", V" + kiln::cache::nvrtc_version().full;
  REQUIRE(kiln::cache::inspect_cubin(bin.cubin).tool_version == kiln::cache::nvrtc_version().full);
  const auto at = bin.cubin.find(mine);
  REQUIRE(at != std::string::npos);
  std::string other = mine;
  other[3] = other[3] == '9' ? '8' : char(other[3] + 1);  // another major version
  bin.cubin.replace(at, mine.size(), other);
  const kiln::cache::Key foreign{0x1234, 0x5678};
  const kiln::cache::CacheLayout layout(c.dir);
  fs::create_directories(layout.fanout(foreign));
  fs::permissions(layout.fanout(foreign), fs::perms::owner_all);
  write_text(layout.entry_path(foreign), kiln::cache::encode_entry(foreign, bin));
  fs::permissions(layout.entry_path(foreign), fs::perms::owner_read | fs::perms::owner_write);

  const auto stats = run_cli_stdout("stats --json --cache-dir " + q(c.dir));
  const auto j = nlohmann::json::parse(stats.output);
  CHECK(j["entries"] == 4);
  CHECK(j["other_nvrtc_entries"] == 1);
  CHECK_THAT(run_cli("stats --cache-dir " + q(c.dir)).output,
             Contains("entries made by another NVRTC") && Contains("prune --other-nvrtc"));
  const auto pruned = run_cli("prune --other-nvrtc --cache-dir " + q(c.dir));
  CHECK(pruned.status == 0);
  CHECK_THAT(pruned.output, Contains("removed 1 entries"));
  CHECK(!fs::exists(layout.entry_path(foreign)));
  CHECK(c.entries() == 3);
}

TEST_CASE("every kiln-cache command writes one JSON document with --json", "[tools]") {
  SmallCache c("json");
  const std::string d = " --cache-dir " + q(c.dir);
  const auto key =
      nlohmann::json::parse(run_cli_stdout("list --json" + d).output)[0]["key"].get<std::string>();
  const char* elementwise =
      "elementwise --in 'float32 x' --out 'float32 z' --op 'z = x * 2' --name twice --dtypes "
      "float32,float32 --arch 90";
  for (const std::string cmd :
       {"precompile " + q(c.manifest) + " --arch 90", std::string("list --all"),
        std::string("stats"), std::string("verify"), std::string("verify --fix"), "show " + key,
        std::string("info"), std::string(elementwise), std::string("prune --max-size 1G"),
        std::string("prune --other-nvrtc"), std::string("devices"), std::string("clear")}) {
    INFO(cmd);
    const auto r = run_cli_stdout(cmd + " --json" + d);
    INFO(r.output);
    CHECK(r.status == (cmd == "devices" && kiln::device_count() == 0 ? 1 : 0));
    nlohmann::json j;
    CHECK_NOTHROW(j = nlohmann::json::parse(r.output));
    CHECK((j.is_object() || j.is_array()));
  }
  // --json before the command's name works too.
  CHECK_NOTHROW(
      nlohmann::json::parse(run_cli_stdout("--json --cache-dir " + q(c.dir) + " info").output));
}

TEST_CASE("precompile --keep-going compiles the valid entries of a manifest with bad ones",
          "[tools]") {
  kiln::test::TempDir tmp;
  const fs::path dir = tmp.path() / "cache", manifest = tmp.path() / "m.jsonl";
  std::string text = small_manifest("keep");
  const auto nl = text.find('\n');
  text.insert(nl + 1,
              "{\"kind\": \"source\", torn line\n{\"kind\": \"elementwise\", \"name\": \"x\"}\n");
  write_text(manifest, text);
  const auto strict = run_cli("precompile " + q(manifest) + " --arch 90 --cache-dir " + q(dir));
  CHECK(strict.status == 2);
  CHECK(!fs::exists(dir));
  const auto r =
      run_cli("precompile " + q(manifest) + " --arch 90 --keep-going --cache-dir " + q(dir));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Contains("m.jsonl:2:") && Contains("entry 3") && Contains("missing field") &&
                           Contains("3 compiled") &&
                           Contains("2 invalid manifest entries skipped"));
  CHECK(kiln::cache::scan_cache(dir).valid_entries() == 3);
}

TEST_CASE("precompile reads a manifest from standard input with -", "[tools]") {
  kiln::test::TempDir tmp;
  write_text(tmp.path() / "m.jsonl", small_manifest("stdin"));
  const auto r =
      kiln::test::run_shell("cat " + q(tmp.path() / "m.jsonl") + " | " + KILN_CACHE_CLI +
                            " precompile - --arch 90 --cache-dir " + q(tmp.path() / "c") + " 2>&1");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Contains("3 compiled"));
}

TEST_CASE("--cache-dir works before the command and an unknown command is named", "[tools]") {
  SmallCache c("global");
  const auto r = run_cli("--cache-dir " + q(c.dir) + " stats");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Contains("entries: 3"));
  const auto bad = run_cli("no-such-command --cache-dir " + q(c.dir));
  CHECK(bad.status == 2);
  CHECK(line_count(bad.output) == 1);
  CHECK_THAT(bad.output, Contains("unknown command 'no-such-command'") && Contains("precompile"));
  CHECK_THAT(run_cli("--cache-dir " + q(c.dir) + " statz").output,
             Contains("unknown command 'statz'"));
}

TEST_CASE("precompile --shared leaves a cache every user can read and only its owner write",
          "[tools]") {
  kiln::test::TempDir tmp;
  write_text(tmp.path() / "m.jsonl", small_manifest("shared"));
  const fs::path dir = tmp.path() / "deploy";
  const auto r = run_cli("precompile " + q(tmp.path() / "m.jsonl") +
                         " --arch 90 --shared --save-source --cache-dir " + q(dir));
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("KILN_CACHE_READONLY_DIRS=" + dir.string()));
  auto mode = [](const fs::path& p) {
    struct stat st {};
    ::lstat(p.c_str(), &st);
    return st.st_mode & 07777;
  };
  CHECK(mode(dir) == 0755);
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    INFO(e.path());
    if (e.is_directory())
      CHECK(mode(e.path()) == 0755);
    else if (e.path().extension() != ".lock")
      CHECK(mode(e.path()) == 0644);
  }
  CHECK(run_cli("verify --cache-dir " + q(dir)).status == 0);
}

TEST_CASE("KILN_LOG set to an unknown level is reported even when nothing is logged", "[tools]") {
  const auto r = run_cli("--version", "KILN_LOG=bogus");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Contains("KILN_LOG='bogus'") && Contains("using warn"));
  CHECK(run_cli("--version", "KILN_LOG=debug").output.find("KILN_LOG") == std::string::npos);
}
