// NCCL collectives on GPUs: communicators of one rank ([gpu]); two GPUs of one process, two
// processes meeting through a file or their launcher's environment, and peers that die or stay
// away ([multigpu]). Every collective and dtype class is checked against host references by
// tests/support/nccl_suite.cpp, in this process or in the rank processes started here.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <regex>

#include "kiln/kiln.hpp"
#include "support/nccl_suite.hpp"
#include "support/processes.hpp"
#include "support/test_support.hpp"

using namespace kiln;
namespace nc = kiln::nccl;
using Catch::Matchers::Contains;
using kiln::test::ChildSpec;
using kiln::test::ScopedEnv;

namespace {

std::string lines(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

void check_suite(std::span<const nc::Communicator> comms) {
  const auto failures = kiln::test::run_collective_suite(comms);
  INFO(lines(failures));
  CHECK(failures.empty());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ChildSpec rank_process(std::vector<std::string> args,
                       std::vector<std::pair<std::string, std::optional<std::string>>> env) {
  args.insert(args.begin(), kiln::test::nccl_rank_program());
  env.emplace_back("NCCL_NVLS_ENABLE", "0");
  return {std::move(args), std::move(env)};
}

// "... after 3.02 s ..." in a rank's report.
double reported_wait(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("after ([0-9.]+) s"))) return -1;
  return std::stod(m[1]);
}

}  // namespace

// ---- one GPU ------------------------------------------------------------------------------

TEST_CASE("every collective works on a local communicator of one rank", "[ops][gpu][nccl]") {
  kiln::test::keep_nvls_off();
  auto comms = nc::Communicator::local({0});
  REQUIRE(comms.size() == 1);
  CHECK(comms[0].rank() == 0);
  CHECK(comms[0].size() == 1);
  CHECK(comms[0].device() == 0);
  CHECK(comms[0].handle() != nullptr);
  CHECK_FALSE(comms[0].aborted());
  check_suite(comms);
}

TEST_CASE("every collective works on a blocking communicator of one rank", "[ops][gpu][nccl]") {
  kiln::test::keep_nvls_off();
  nc::CommunicatorOptions o;
  o.blocking = true;
  DeviceGuard on(0);
  const nc::Communicator comm(1, 0, nc::UniqueId::generate(), o);
  const std::vector<nc::Communicator> comms{comm};
  check_suite(comms);
}

TEST_CASE("the file and environment rendezvous make communicators of one rank",
          "[ops][gpu][nccl]") {
  kiln::test::keep_nvls_off();
  kiln::test::TempDir dir;
  auto x = full({3}, 2.5);
  {
    const auto comm = nc::Communicator::from_file(dir.path() / "id", 1, 0);
    CHECK(comm.size() == 1);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "id"));  // rank 0 cleans up
    CHECK(nc::all_reduce(comm, x).get<double>() == std::vector<double>{2.5, 2.5, 2.5});
  }
  ScopedEnv r("KILN_RANK", "0"), s("KILN_WORLD_SIZE", "1"), l("KILN_LOCAL_RANK", "0");
  {
    ScopedEnv id("KILN_NCCL_UNIQUE_ID", nc::UniqueId::generate().hex());
    const auto comm = nc::Communicator::from_environment();
    CHECK(comm.rank() == 0);
    CHECK(comm.device() == 0);
    CHECK(nc::all_reduce(comm, x, nc::reduce_op::max).get<double>() ==
          std::vector<double>{2.5, 2.5, 2.5});
  }
  {
    ScopedEnv id("KILN_NCCL_ID_FILE", (dir.path() / "id2").string());
    const auto comm = nc::Communicator::from_environment();
    CHECK(comm.size() == 1);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "id2"));
  }
}

TEST_CASE("a communicator whose other rank never joins times out and is aborted",
          "[ops][gpu][nccl]") {
  kiln::test::keep_nvls_off();
  nc::CommunicatorOptions o;
  o.timeout = std::chrono::milliseconds(1500);
  DeviceGuard on(0);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    nc::Communicator lonely(2, 0, nc::UniqueId::generate(), o);
    FAIL("a communicator of 2 ranks was created with one rank");
  } catch (const TimeoutError& e) {
    CHECK_THAT(std::string(e.what()), Contains("creating the communicator on rank 0 of 2") &&
                                          Contains("within 1.5 s") && Contains("never joined") &&
                                          Contains("aborted"));
  }
  const double waited = seconds_since(t0);
  CHECK(waited >= 1.5);
  CHECK(waited < 15);
}

TEST_CASE("abort stops a communicator and every later call raises", "[ops][gpu][nccl]") {
  kiln::test::keep_nvls_off();
  auto comms = nc::Communicator::local({0});
  const nc::Communicator copy = comms[0];
  auto x = full({4}, 1.0f);
  nc::all_reduce(comms[0], x, x);
  comms[0].abort();
  CHECK(copy.aborted());
  CHECK(copy.handle() == nullptr);
  KILN_CHECK_THROWS(nc::all_reduce(copy, x, x), ValueError,
                    Contains("was aborted by Communicator::abort()"));
  KILN_CHECK_THROWS(copy.synchronize(), ValueError, Contains("aborted"));
  comms[0].abort();  // twice is fine
}

// ---- two GPUs, one process ----------------------------------------------------------------

TEST_CASE("collectives refuse an array on another GPU before NCCL sees it",
          "[ops][multigpu][nccl]") {
  kiln::test::keep_nvls_off();
  auto comms = nc::Communicator::local({0});
  ndarray elsewhere;
  {
    DeviceGuard on(1);
    elsewhere = full({4}, 1.0f);
  }
  KILN_CHECK_THROWS(nc::all_reduce(comms[0], elsewhere), ValueError,
                    Contains("send is on device 1, but the communicator (rank 0 of 1) is on "
                             "device 0"));
}

TEST_CASE("every collective works across two GPUs of one process", "[ops][multigpu][nccl]") {
  kiln::test::keep_nvls_off();
  const auto comms = nc::Communicator::local({0, 1});
  REQUIRE(comms.size() == 2);
  CHECK(comms[1].rank() == 1);
  CHECK(comms[1].device() == 1);
  check_suite(comms);
}

TEST_CASE("every collective works across two GPUs of one process with blocking communicators",
          "[ops][multigpu][nccl]") {
  kiln::test::keep_nvls_off();
  nc::CommunicatorOptions o;
  o.blocking = true;
  const auto comms = nc::Communicator::local({0, 1}, o);
  check_suite(comms);
}

// ---- two processes ------------------------------------------------------------------------

TEST_CASE("every collective works across two processes that meet through a file",
          "[ops][multigpu][nccl]") {
  kiln::test::TempDir dir;
  const std::string file = (dir.path() / "nccl-id").string();
  std::vector<ChildSpec> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(
        rank_process({"suite", "--file", file, "--size", "2", "--rank", std::to_string(r)}, {}));
  const auto results = kiln::test::run_children(ranks, std::chrono::seconds(300));
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << results[r].describe());
    CHECK(results[r].exit_code == 0);
    CHECK_THAT(results[r].output, Contains("ok rank " + std::to_string(r) + " of 2"));
  }
  CHECK_FALSE(std::filesystem::exists(file));
}

TEST_CASE("every collective works across two blocking processes given the id by a launcher",
          "[ops][multigpu][nccl]") {
  const std::string id = nc::UniqueId::generate().hex();
  std::vector<ChildSpec> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(
        rank_process({"suite", "--env", "--blocking"}, {{"KILN_RANK", std::to_string(r)},
                                                        {"KILN_WORLD_SIZE", "2"},
                                                        {"KILN_LOCAL_RANK", std::to_string(r)},
                                                        {"KILN_NCCL_UNIQUE_ID", id}}));
  const auto results = kiln::test::run_children(ranks, std::chrono::seconds(300));
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << results[r].describe());
    CHECK(results[r].exit_code == 0);
    CHECK_THAT(results[r].output,
               Contains("ok rank " + std::to_string(r) + " of 2 on device " + std::to_string(r)));
  }
}

TEST_CASE("a collective whose peer died raises a kiln error within the timeout",
          "[ops][multigpu][nccl]") {
  kiln::test::TempDir dir;
  const std::string file = (dir.path() / "nccl-id").string();
  std::vector<ChildSpec> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(
        rank_process({"dead-peer", "--file", file, "--rank", std::to_string(r), "--how", "sync"},
                     {{"KILN_NCCL_TIMEOUT", "3"}}));
  const auto results = kiln::test::run_children(ranks, std::chrono::seconds(120));
  INFO("rank 0: " << results[0].describe() << "\nrank 1: " << results[1].describe());
  CHECK(results[1].signal == SIGKILL);  // died as planned
  CHECK_FALSE(results[1].timed_out);
  REQUIRE(results[0].exit_code == 0);
  CHECK_THAT(results[0].output, Contains("ok rank 0: ") && Contains("aborted"));
  const double waited = reported_wait(results[0].output);
  CHECK(waited > 0);
  CHECK(waited < 3 + 20);  // the timeout, plus polling and NCCL's abort
}

TEST_CASE("the watchdog releases a thread blocked behind a collective whose peer stays away",
          "[ops][multigpu][nccl]") {
  kiln::test::TempDir dir;
  const std::string file = (dir.path() / "nccl-id").string();
  std::vector<ChildSpec> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(
        rank_process({"dead-peer", "--file", file, "--rank", std::to_string(r), "--how", "get"},
                     {{"KILN_NCCL_TIMEOUT", "3"}}));
  const auto results = kiln::test::run_children(ranks, std::chrono::seconds(120));
  INFO("rank 0: " << results[0].describe() << "\nrank 1: " << results[1].describe());
  REQUIRE(results[0].exit_code == 0);
  CHECK_THAT(results[0].output, Contains("ok rank 0: get returned after") &&
                                    Contains("kiln's NCCL watchdog aborted the communicator"));
  const double waited = reported_wait(results[0].output);
  CHECK(waited >= 3);
  CHECK(waited < 3 + 20);
  CHECK(results[1].exit_code == 0);
}
