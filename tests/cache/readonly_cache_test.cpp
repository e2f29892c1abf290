// Deployed caches: KILN_CACHE_READONLY_DIRS is searched before the user's own cache and never
// written, locked or touched; a folder owned by root and writable by nobody else is trusted
// for reading; the README's deploy recipe works for a service user ([root]: run as `nobody`).
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cache_test_support.hpp"
#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/disk_cache.hpp"
#include "kiln/cache/kernel_record.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln::cache;
using namespace kiln::cache::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

struct Snapshot {
  std::vector<std::string> files;  // path, size, mode, mtime (and atime) of everything under a dir
  // Another user's reads move a file's access time (the kernel's relatime, O_NOATIME needs the
  // owner): that is not kiln writing, so those comparisons leave it out.
  static Snapshot of(const fs::path& dir, bool with_atime = true) {
    Snapshot s;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      struct stat st {};
      REQUIRE(::lstat(e.path().c_str(), &st) == 0);
      s.files.push_back(e.path().string() + " " + std::to_string(st.st_size) + " " +
                        std::to_string(st.st_mode) + " " + std::to_string(st.st_mtim.tv_nsec) +
                        (with_atime ? " " + std::to_string(st.st_atim.tv_sec) + "." +
                                          std::to_string(st.st_atim.tv_nsec)
                                    : std::string()));
    }
    std::sort(s.files.begin(), s.files.end());
    return s;
  }
};

// A cache folder holding `req`, made readable by all as a deployed one.
fs::path deployed_cache(const fs::path& dir, const CompileRequest& req) {
  compile_cached(req, disk_config(dir));
  REQUIRE(share_for_reading(dir).empty());
  return dir;
}

}  // namespace

TEST_CASE("read-only caches are searched first and never written, locked or touched", "[cache]") {
  TempDir tmp;
  const auto req = tiny_request("9101");
  const fs::path ro = deployed_cache(tmp.path() / "deployed", req);
  const auto before = Snapshot::of(ro);

  CacheConfig cfg = disk_config(tmp.path() / "mine");
  cfg.readonly_dirs = {tmp.path() / "missing", ro};
  BinarySource source = BinarySource::compiled;
  const auto hits = stats().disk_hits.load(), compiles = stats().nvrtc_compiles.load();
  const Binary bin = compile_cached(req, cfg, &source);
  CHECK(source == BinarySource::readonly_disk);
  CHECK(stats().disk_hits.load() == hits + 1);
  CHECK(stats().nvrtc_compiles.load() == compiles);
  CHECK(bin.cubin.substr(0, 4) ==
        "\x7f"
        "ELF");
  CHECK(Snapshot::of(ro).files == before.files);  // not even an access time or a lock file
  CHECK_FALSE(fs::exists(tmp.path() / "mine"));   // a hit creates nothing in the own cache
}

TEST_CASE("a miss in the read-only caches compiles into the user's own cache", "[cache]") {
  TempDir tmp;
  const fs::path ro = deployed_cache(tmp.path() / "deployed", tiny_request("9102"));
  const auto before = Snapshot::of(ro);
  CacheConfig cfg = disk_config(tmp.path() / "mine");
  cfg.readonly_dirs = {ro};
  const auto other = tiny_request("9103");
  BinarySource source = BinarySource::disk;
  compile_cached(other, cfg, &source);
  CHECK(source == BinarySource::compiled);
  CHECK(Snapshot::of(ro).files == before.files);
  CHECK(DiskCache(tmp.path() / "mine").load(cache_key(other)));
  compile_cached(other, cfg, &source);
  CHECK(source == BinarySource::disk);
}

TEST_CASE("KILN_DISALLOW_COMPILE names the read-only caches it searched", "[cache]") {
  TempDir tmp;
  const fs::path ro = deployed_cache(tmp.path() / "deployed", tiny_request("9104"));
  CacheConfig cfg = disk_config(tmp.path() / "mine");
  cfg.readonly_dirs = {ro};
  cfg.disallow_compile = true;
  CHECK(compile_cached(tiny_request("9104"), cfg).cubin.size() > 64);
  KILN_CHECK_THROWS(compile_cached(tiny_request("9105"), cfg), kiln::CacheMissError,
                    Contains("at " + (tmp.path() / "mine").string()) &&
                        Contains("nor in the read-only caches " + ro.string()) &&
                        Contains("KILN_CACHE_READONLY_DIRS"));
}

TEST_CASE("a read-only cache writable by others is refused and its entries are never loaded",
          "[cache]") {
  TempDir tmp;
  const auto req = tiny_request("9106");
  const fs::path ro = deployed_cache(tmp.path() / "deployed", req);
  ::chmod(ro.c_str(), 0777);
  LogCapture log;
  CacheConfig cfg = disk_config(tmp.path() / "mine");
  cfg.readonly_dirs = {ro};
  BinarySource source = BinarySource::disk;
  compile_cached(req, cfg, &source);
  CHECK(source == BinarySource::compiled);
  CHECK(log.contains("writable by group or others"));
}

TEST_CASE("cache config reads KILN_CACHE_READONLY_DIRS as a colon-separated list", "[cache]") {
  ScopedEnv ro("KILN_CACHE_READONLY_DIRS", "/opt/app/kiln::/srv/kiln:");
  CHECK(CacheConfig::from_env().readonly_dirs ==
        std::vector<fs::path>{"/opt/app/kiln", "/srv/kiln"});
  ScopedEnv none("KILN_CACHE_READONLY_DIRS", std::nullopt);
  CHECK(CacheConfig::from_env().readonly_dirs.empty());
}

// ---- as another user: needs root to create files for and switch to a service user ----

namespace {

// The service user the deployed program runs as: nobody, or a user made for the test.
std::optional<std::pair<uid_t, gid_t>> service_user() {
  if (const passwd* pw = ::getpwnam("nobody")) return std::pair{pw->pw_uid, pw->pw_gid};
  if (std::system("useradd --system --no-create-home kiln-test-user >/dev/null 2>&1") == 0)
    if (const passwd* pw = ::getpwnam("kiln-test-user")) return std::pair{pw->pw_uid, pw->pw_gid};
  return std::nullopt;
}

// Runs `body` in a child process as uid/gid; its exit status (0 when body returned true).
template <class F>
int as_user(std::pair<uid_t, gid_t> who, F&& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int status = 3;
    if (::setgroups(0, nullptr) == 0 && ::setgid(who.second) == 0 && ::setuid(who.first) == 0) {
      try {
        status = body() ? 0 : 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "as another user: %s\n", e.what());
        status = 2;
      }
    }
    std::fflush(nullptr);
    ::_exit(status);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The README's deploy recipe: the shell lines between its markers.
std::vector<std::string> readme_recipe() {
  const std::string readme = read_text(fs::path(KILN_TEST_SOURCE_DIR) / ".." / "README.md");
  const std::string begin = "<!-- snippet: deploy-recipe -->\n```sh\n";
  const auto b = readme.find(begin);
  REQUIRE(b != std::string::npos);
  const auto e = readme.find("```", b + begin.size());
  REQUIRE(e != std::string::npos);
  std::vector<std::string> lines;
  std::istringstream in(readme.substr(b + begin.size(), e - b - begin.size()));
  for (std::string line; std::getline(in, line);) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace

TEST_CASE("the README deploy recipe serves a service user from a cache precompiled as root",
          "[cache][root]") {
  const auto user = service_user();
  if (!user) {
    WARN("SKIPPED: no 'nobody' user and useradd failed; cannot run as a second user here");
    return;
  }
  TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);  // the service user must reach the deployed folder
  const fs::path deploy = tmp.path() / "opt-myapp-kiln-cache";
  const fs::path manifest = tmp.path() / "kernels.jsonl";
  const auto req = tiny_request("9201");
  { std::ofstream(manifest) << record_line(req, true); }
  // The recipe as written, with this test's paths: precompile as root, then the program's
  // environment for the service user.
  const auto recipe = readme_recipe();
  REQUIRE(recipe.size() == 2);
  auto substitute = [&](std::string line) {
    line = std::regex_replace(line, std::regex("/opt/myapp/kiln-cache"), deploy.string());
    line = std::regex_replace(line, std::regex("kernels\\.jsonl"), manifest.string());
    line = std::regex_replace(line, std::regex("^kiln-cache "), std::string(KILN_CACHE_CLI) + " ");
    return line;
  };
  const std::string precompile = substitute(recipe[0]);
  CHECK_THAT(precompile, Contains("precompile") && Contains("--shared"));
  REQUIRE(std::system((precompile + " > /dev/null").c_str()) == 0);
  // The second line: VAR=value ... ./my_program. The program here is this test's child, which
  // loads the kernel the way a program does (compile_cached with its environment).
  const std::string run = substitute(recipe[1]);
  CHECK_THAT(run, Contains("KILN_CACHE_READONLY_DIRS=" + deploy.string()) &&
                      Contains("KILN_DISALLOW_COMPILE=1"));
  std::vector<std::pair<std::string, std::string>> env;
  std::istringstream words(run);
  for (std::string w; words >> w;)
    if (std::smatch m; std::regex_match(w, m, std::regex("([A-Z_][A-Z0-9_]*)=(.*)")))
      env.emplace_back(m[1], m[2]);
  REQUIRE(env.size() == 2);

  const int status = as_user(*user, [&] {
    // A service user's environment: its own (unusable) home, none of the test's cache folder.
    ::setenv("HOME", "/nonexistent", 1);
    ::unsetenv("KILN_CACHE_DIR");
    ::unsetenv("XDG_CACHE_HOME");
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    BinarySource source = BinarySource::compiled;
    const auto compiles = stats().nvrtc_compiles.load();
    const Binary bin = compile_cached(req, CacheConfig::from_env(), &source);
    return source == BinarySource::readonly_disk && bin.cubin.size() > 64 &&
           stats().nvrtc_compiles.load() == compiles;
  });
  CHECK(status == 0);

  // The deployed folder is root's and stays as it was: the service user wrote nothing there.
  struct stat st {};
  REQUIRE(::stat(deploy.c_str(), &st) == 0);
  CHECK(st.st_uid == 0);
  CHECK((st.st_mode & 0777) == 0755);
  for (const auto& e : fs::recursive_directory_iterator(deploy)) {
    REQUIRE(::lstat(e.path().c_str(), &st) == 0);
    CHECK(st.st_uid == 0);
  }
  CHECK(scan_cache(deploy).valid_entries() == 1);

  // Without the recipe's read-only variable the service user misses (nothing to compile into).
  const int without = as_user(*user, [&] {
    ::setenv("HOME", "/nonexistent", 1);
    ::unsetenv("KILN_CACHE_READONLY_DIRS");
    ::setenv("KILN_CACHE_DIR", deploy.c_str(), 1);  // trusted for reading: root's, 0755
    ::setenv("KILN_DISALLOW_COMPILE", "1", 1);
    BinarySource source = BinarySource::compiled;
    compile_cached(req, CacheConfig::from_env(), &source);
    return source == BinarySource::disk;  // root's folder as KILN_CACHE_DIR is read too
  });
  CHECK(without == 0);
}

TEST_CASE("a cache folder owned by root is read but never written by another user",
          "[cache][root]") {
  const auto user = service_user();
  if (!user) {
    WARN("SKIPPED: no 'nobody' user and useradd failed; cannot run as a second user here");
    return;
  }
  TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);
  const fs::path root_cache = deployed_cache(tmp.path() / "root-cache", tiny_request("9202"));
  const auto before = Snapshot::of(root_cache, /*with_atime=*/false);
  const int status = as_user(*user, [&] {
    CacheConfig cfg = disk_config(root_cache);
    BinarySource hit = BinarySource::compiled, miss = BinarySource::disk;
    compile_cached(tiny_request("9202"), cfg, &hit);
    compile_cached(tiny_request("9203"), cfg, &miss);  // compiled in memory, not stored
    return hit == BinarySource::disk && miss == BinarySource::compiled;
  });
  CHECK(status == 0);
  CHECK(Snapshot::of(root_cache, false).files == before.files);
  // Another (non-root) user's folder is never trusted.
  const fs::path theirs = tmp.path() / "theirs";
  fs::copy(root_cache, theirs, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(theirs))
    REQUIRE(::lchown(e.path().c_str(), user->first, user->second) == 0);
  REQUIRE(::chown(theirs.c_str(), user->first, user->second) == 0);
  LogCapture log;
  BinarySource source = BinarySource::disk;
  CacheConfig cfg = disk_config(tmp.path() / "mine");
  cfg.readonly_dirs = {theirs};
  compile_cached(tiny_request("9202"), cfg, &source);
  CHECK(source == BinarySource::compiled);
  CHECK(log.contains("owned by uid " + std::to_string(user->first)));
}
