// The deployment loop on a GPU: record what a program loads, precompile exactly that for the
// device's arch into a fresh folder (as a CPU build machine would), rerun the program with
// compiling forbidden: zero compiles.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "kiln/cache/cache_inventory.hpp"
#include "kiln/kiln.hpp"
#include "manifest.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;

struct Run {
  int status;
  std::string output;
};

Run run(const std::string& cmd) {
  Run r{0, ""};
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.output += buf;
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST_CASE(
    "record on the GPU, precompile into a fresh folder, rerun with compiling forbidden; zero "
    "compiles",
    "[tools][gpu]") {
  kiln::test::TempDir tmp;
  const fs::path tour = fs::path(KILN_BINARY_DIR) / "samples" / "tour";
  const fs::path record = tmp.path() / "recorded.jsonl", replay = tmp.path() / "replay.jsonl";
  const int arch = kiln::device_properties(0).arch();

  // 1. Record: a cold cache, so every kernel the tour loads is compiled and recorded.
  auto first = run("env KILN_CACHE_DIR=" + q(tmp.path() / "warm") +
                   " KILN_CACHE_RECORD=" + q(record) + " " + q(tour));
  INFO(first.output);
  REQUIRE(first.status == 0);
  const auto recorded = kiln::tools::read_manifest(record);
  REQUIRE(recorded.entries.size() >= 2);  // my_kernel contiguous and strided, plus creation kernels
  for (const auto& e : recorded.entries) CHECK(e.json["cache"] == "compiled");

  // 2. Precompile exactly those for this device's arch into a fresh folder.
  auto pre = run(std::string(KILN_CACHE_CLI) + " precompile " + q(record) + " --arch " +
                 std::to_string(arch) + " --jobs 2 --cache-dir " + q(tmp.path() / "fresh"));
  INFO(pre.output);
  REQUIRE(pre.status == 0);
  CHECK(pre.output.find(" 0 failed") != std::string::npos);

  // 3. Rerun with compiling forbidden (a compile attempt would be a CacheMissError, exit 1),
  //    recording again: every kernel is a disk hit.
  auto second = run("env KILN_CACHE_DIR=" + q(tmp.path() / "fresh") +
                    " KILN_DISALLOW_COMPILE=1 KILN_CACHE_RECORD=" + q(replay) + " " + q(tour));
  INFO(second.output);
  CHECK(second.status == 0);
  const auto replayed = kiln::tools::read_manifest(replay);
  CHECK(replayed.entries.size() == recorded.entries.size());
  for (const auto& e : replayed.entries) CHECK(e.json["cache"] == "hit");
}

// [root]: precompile as root, run as a service user (nobody), the README's deploy recipe.
TEST_CASE("the deploy recipe runs samples/deployed as a service user with zero compiles",
          "[tools][gpu][root]") {
  const passwd* pw = ::getpwnam("nobody");
  if (!pw) {
    WARN("SKIPPED: no 'nobody' user here to run the deployed program as");
    return;
  }
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  kiln::test::TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);
  const fs::path deploy = tmp.path() / "kiln-cache", program = tmp.path() / "deployed";
  const int arch = kiln::device_properties(0).arch();
  // As root, like an image build: the samples' manifest for this device, shared for reading.
  auto pre = run(std::string(KILN_CACHE_CLI) + " precompile " +
                 q(fs::path(KILN_TEST_SOURCE_DIR) / ".." / "samples" / "kernels.json") +
                 " --arch " + std::to_string(arch) + " --jobs 4 --shared --cache-dir " + q(deploy));
  INFO(pre.output);
  REQUIRE(pre.status == 0);
  fs::copy_file(fs::path(KILN_BINARY_DIR) / "samples" / "deployed", program);
  ::chmod(program.c_str(), 0755);
  const auto entries_before = kiln::cache::scan_cache(deploy).valid_entries();

  // As nobody, with the recipe's environment and nothing else of root's.
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    ::close(pipefd[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(3);
    const std::string ro = "KILN_CACHE_READONLY_DIRS=" + deploy.string();
    const char* envp[] = {"HOME=/nonexistent", "PATH=/usr/bin:/bin", ro.c_str(),
                          "KILN_DISALLOW_COMPILE=1", nullptr};
    const char* argv[] = {program.c_str(), nullptr};
    ::execve(program.c_str(), const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    ::_exit(4);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  ::close(pipefd[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  INFO(out);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);  // a compile attempt would be a CacheMissError: exit 1
  CHECK(out.find(" 0 wrong") != std::string::npos);
  // The deployed cache is root's and unchanged.
  struct stat ds {};
  REQUIRE(::stat(deploy.c_str(), &ds) == 0);
  CHECK(ds.st_uid == 0);
  CHECK(kiln::cache::scan_cache(deploy).valid_entries() == entries_before);
}
