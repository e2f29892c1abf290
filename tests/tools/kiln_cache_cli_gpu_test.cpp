// The deployment loop on a GPU: record what a program loads, precompile exactly that for the
// device's arch into a fresh folder (as a CPU build machine would), rerun the program with
// compiling forbidden: zero compiles.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

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
