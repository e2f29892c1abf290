#pragma once
// Child processes for tests that need several (NCCL ranks): started together with posix_spawn
// (never fork: the test process may hold a CUDA context), each with its own environment
// changes and its output captured, all waited for within a time limit.
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::test {

struct ChildSpec {
  std::vector<std::string> argv;
  /// Changes to this process's environment: a value sets, nullopt unsets.
  std::vector<std::pair<std::string, std::optional<std::string>>> env;
};

struct ChildResult {
  int exit_code = -1;      ///< -1 unless the child exited
  int signal = 0;          ///< the signal that ended it, 0 if none
  bool timed_out = false;  ///< killed (SIGKILL) at the time limit
  double seconds = 0;      ///< from the start to its end
  std::string output;      ///< stdout and stderr together
  /// "exit 0", "signal 9", "killed at the time limit", and the output.
  std::string describe() const;
};

/// Starts every child, waits for all of them (killing those still running after `limit`).
std::vector<ChildResult> run_children(const std::vector<ChildSpec>& children,
                                      std::chrono::seconds limit);

/// The kiln_nccl_rank program: KILN_NCCL_RANK_PROGRAM from the environment (when the build
/// folder moved, e.g. on a GPU machine), else the path it was built at.
std::string nccl_rank_program();

}  // namespace kiln::test
