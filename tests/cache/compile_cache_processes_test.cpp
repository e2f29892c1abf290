// compile_cached across processes: forked children race for the same missing kernel in one
// fresh folder; exactly one runs NVRTC. Different kernels do not wait for each other. A lock
// holder that dies or is stopped blocks nobody for long.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "cache_test_support.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/disk_cache.hpp"

using namespace kiln::cache;
using namespace kiln::cache::testing;

namespace {

// What a child reports through its exit code (no Catch2 in children).
constexpr int kCompiled = 10, kLoaded = 11, kCompiledAfterWait = 12, kFailed = 20;

struct Child {
  pid_t pid;
  int result;
};

// Forks one child per request; all block on a pipe until every child exists, then race.
std::vector<int> race(const std::vector<CompileRequest>& reqs, const CacheConfig& cfg) {
  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> pids;
  for (const auto& req : reqs) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      char c;
      (void)!::read(go[0], &c, 1);  // returns 0 when the parent closes the write end
      int code = kFailed;
      try {
        const auto compiles = stats().nvrtc_compiles.load();
        const auto waits = stats().lock_waits.load();
        const Binary bin = compile_cached(req, cfg);
        const bool compiled = stats().nvrtc_compiles.load() > compiles;
        const bool waited = stats().lock_waits.load() > waits;
        if (bin.cubin.size() > 64)
          code = compiled ? (waited ? kCompiledAfterWait : kCompiled) : kLoaded;
      } catch (...) {
      }
      ::_exit(code);
    }
    REQUIRE(pid > 0);  // only the parent may use Catch2
    pids.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);  // start the race
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

}  // namespace

TEST_CASE("compile_cached from 6 processes at once runs NVRTC once for one kernel", "[cache]") {
  TempDir tmp;
  LogCapture quiet;
  const std::vector<CompileRequest> reqs(6, tiny_request("21"));
  const auto codes = race(reqs, disk_config(tmp.path()));
  int compiled = 0, loaded = 0;
  for (int c : codes) {
    compiled += c == kCompiled || c == kCompiledAfterWait;
    loaded += c == kLoaded;
  }
  INFO("child exit codes: " << Catch::Detail::stringify(codes));
  CHECK(compiled == 1);
  CHECK(loaded == 5);
  // And the parent now finds it on disk.
  const auto before = stats().nvrtc_compiles.load();
  compile_cached(tiny_request("21"), disk_config(tmp.path()));
  CHECK(stats().nvrtc_compiles.load() == before);
}

TEST_CASE("compile_cached from processes compiles different kernels in parallel", "[cache]") {
  TempDir tmp;
  LogCapture quiet;
  const auto codes =
      race({tiny_request("22"), tiny_request("23"), tiny_request("24"), tiny_request("25")},
           disk_config(tmp.path()));
  INFO("child exit codes: " << Catch::Detail::stringify(codes));
  // Each compiled its own kernel and none waited on another's lock.
  for (int c : codes) CHECK(c == kCompiled);
}

TEST_CASE("compile_cached waits for a lock holder and proceeds once it is killed", "[cache]") {
  TempDir tmp;
  const auto req = tiny_request("26");
  DiskCache disk(tmp.path());
  REQUIRE(disk.prepare_folder(cache_key(req)));
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A "compiler" that takes the key's lock and dies holding it, without unlocking.
    const int fd = ::open(disk.lock_path(cache_key(req)).c_str(), O_RDWR | O_CREAT, 0600);
    ::flock(fd, LOCK_EX);
    (void)!::write(ready[1], "x", 1);
    ::usleep(300 * 1000);
    ::raise(SIGKILL);
  }
  REQUIRE(pid > 0);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  const auto waits = stats().lock_waits.load();
  const auto compiles = stats().nvrtc_compiles.load();
  CHECK(compile_cached(req, disk_config(tmp.path())).cubin.size() > 64);
  CHECK(stats().lock_waits.load() == waits + 1);
  CHECK(stats().nvrtc_compiles.load() == compiles + 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status));
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_CASE("compile_cached writes its pid into the lock file it holds", "[cache]") {
  TempDir tmp;
  const auto req = tiny_request("27");
  compile_cached(req, disk_config(tmp.path()));
  const std::string holder = read_file(DiskCache(tmp.path()).lock_path(cache_key(req)));
  CHECK(holder.rfind(std::to_string(::getpid()) + " ", 0) == 0);
}

TEST_CASE("compile_cached stops waiting for a stopped lock holder, says who, and compiles",
          "[cache]") {
  TempDir tmp;
  ScopedEnv dir("KILN_CACHE_DIR", tmp.path().string());
  ScopedEnv timeout("KILN_CACHE_LOCK_TIMEOUT", "1.5");
  const auto cfg = CacheConfig::from_env();
  REQUIRE(cfg.lock_timeout_s == 1.5);
  const auto req = tiny_request("28");
  DiskCache disk(tmp.path());
  REQUIRE(disk.prepare_folder(cache_key(req)));
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A "compiler" that takes the key's lock, names itself in it as kiln does, then is
    // stopped (as by Ctrl-Z) holding it.
    const int fd = ::open(disk.lock_path(cache_key(req)).c_str(), O_RDWR | O_CREAT, 0600);
    ::flock(fd, LOCK_EX);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string id = std::to_string(::getpid()) + " " + host + "\n";
    (void)!::write(fd, id.data(), id.size());
    (void)!::write(ready[1], "x", 1);
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  REQUIRE(pid > 0);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);

  LogCapture log;
  const auto compiles = stats().nvrtc_compiles.load();
  const auto start = std::chrono::steady_clock::now();
  // In a thread with a deadline: a regression must fail this test, not hang the suite.
  auto result = std::async(std::launch::async, [&] { return compile_cached(req, cfg); });
  const bool finished = result.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  ::kill(pid, SIGKILL);  // releases the lock, so a hung waiter finishes too
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  REQUIRE(finished);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(result.get().cubin.size() > 64);
  CHECK(seconds >= 1.4);
  CHECK(seconds < 10);
  CHECK(stats().nvrtc_compiles.load() == compiles + 1);
  // Said out loud at warn level: whom it waits for, then that it gave up.
  const std::string who =
      "process " + std::to_string(pid) + " (pid in lock file), which is stopped";
  INFO(log.text());
  CHECK(log.contains("waiting for " + who));
  CHECK(log.contains("kernel 'k' (key " + cache_key(req).hex() + ")"));
  CHECK(log.contains("gave up after"));
  // The entry it wrote without the lock is valid.
  CHECK(disk.load(cache_key(req)));
}
