// Data-parallel work with NCCL: x is cut into one shard per GPU; each GPU computes a fused
// expression over its shard, y = exp(-x*x) * 3 + x (one kernel), and reductions of it (the sum
// of y, its column sums over rows of 256, the largest |x|); all_reduce combines the partial
// results, so every GPU ends with the totals. Checked against one GPU doing all of x.
//   nccl_data_parallel                 one process driving every GPU, then the same as two
//                                      processes with one GPU each (started here, the way a
//                                      launcher would start them); needs two GPUs
//   nccl_data_parallel --one-process   the first part only (runs on one GPU too)
// Exits 77 (SKIPPED) without a GPU, without NCCL, or, for the default, without two GPUs.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sample_util.hpp"

extern char** environ;

namespace nc = kiln::nccl;

namespace {

constexpr std::int64_t kN = std::int64_t(1) << 22;  // elements of x
constexpr std::int64_t kCols = 256;

// x_i, the same formula on every rank (no data has to travel to start).
kiln::ndarray x_part(std::int64_t first, std::int64_t count) {
  auto i = kiln::arange(first, first + count, 1, kiln::float64);
  return kiln::sin(i * 0.001) * 2.5 + kiln::cos(i * 0.37);
}

struct Partial {
  kiln::ndarray sum, columns, max_abs;  // 0-d, (kCols,), 0-d
};

// One shard's contribution, on the current device.
Partial compute(std::int64_t first, std::int64_t count) {
  auto x = x_part(first, count);
  kiln::ndarray y = kiln::exp(-x * x) * 3 + x;  // one fused kernel
  return {kiln::sum(y), y.reshape({count / kCols, kCols}).sum(0), kiln::max(kiln::abs(x))};
}

bool close(double got, double want) { return std::abs(got - want) <= 1e-9 * (1 + std::abs(want)); }

// Compares a rank's totals with the single-GPU reference; prints what differs.
bool check(const char* who, const Partial& got, const Partial& ref) {
  bool ok = close(got.sum.get<double>()[0], ref.sum.get<double>()[0]) &&
            got.max_abs.get<double>()[0] == ref.max_abs.get<double>()[0];
  const auto gc = got.columns.get<double>(), rc = ref.columns.get<double>();
  for (std::size_t j = 0; j < gc.size(); ++j) ok = ok && close(gc[j], rc[j]);
  std::printf("  %s: sum(y) = %.10g, max|x| = %.6g, column sums %s\n", who,
              got.sum.get<double>()[0], got.max_abs.get<double>()[0], ok ? "match" : "DIFFER");
  return ok;
}

Partial reference() {
  kiln::DeviceGuard on(0);
  return compute(0, kN);
}

// The three all_reduces of one rank: sums add, the largest |x| wins.
void combine(const nc::Communicator& c, const Partial& p) {
  nc::all_reduce(c, p.sum, p.sum);
  nc::all_reduce(c, p.columns, p.columns);
  nc::all_reduce(c, p.max_abs, p.max_abs, nc::reduce_op::max);
}

int one_process() {
  const auto comms = nc::Communicator::local();
  const int n = int(comms.size());
  std::printf("one process, %d GPU(s), NCCL %s\n", n, nc::library().version_string().c_str());
  const std::int64_t shard = kN / n / kCols * kCols;  // whole rows of kCols
  std::vector<Partial> parts;
  for (int r = 0; r < n; ++r) {
    kiln::DeviceGuard on(comms[r].device());
    parts.push_back(compute(r * shard, r + 1 == n ? kN - r * shard : shard));
  }
  const double ms = sample::wall_ms([&] {
    nc::group([&] {
      for (int r = 0; r < n; ++r) combine(comms[r], parts[r]);
    });
    for (const auto& c : comms) c.synchronize();
  });
  std::printf("  all_reduce of the partial results: %.3f ms (first call: NCCL connects)\n", ms);
  const Partial ref = reference();
  bool ok = true;
  for (int r = 0; r < n; ++r) {
    kiln::DeviceGuard on(comms[r].device());
    ok = check(("GPU " + std::to_string(r)).c_str(), parts[r], ref) && ok;
  }
  return ok ? 0 : 1;
}

// A rank process (started by two_processes): rank and id from the environment.
int rank_process() {
  const auto comm = nc::Communicator::from_environment();
  const std::int64_t shard = kN / comm.size() / kCols * kCols;
  const std::int64_t first = comm.rank() * shard;
  const Partial p = compute(first, comm.rank() + 1 == comm.size() ? kN - first : shard);
  combine(comm, p);
  comm.synchronize();
  const Partial ref = reference();
  return check(("rank " + std::to_string(comm.rank()) + " (process " + std::to_string(::getpid()) +
                ", GPU " + std::to_string(comm.device()) + ")")
                   .c_str(),
               p, ref)
             ? 0
             : 1;
}

// Starts two copies of this program as ranks 0 and 1, the unique id in their environment.
int two_processes() {
  const char* self = "/proc/self/exe";
  std::printf("two processes, one GPU each\n");
  std::fflush(stdout);
  const std::string id = nc::UniqueId::generate().hex();
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "KILN_RANK=", 10) && std::strncmp(*e, "KILN_WORLD_SIZE=", 16) &&
          std::strncmp(*e, "KILN_LOCAL_RANK=", 16) && std::strncmp(*e, "KILN_NCCL_UNIQUE_ID=", 20))
        env.emplace_back(*e);
    env.push_back("KILN_RANK=" + std::to_string(r));
    env.push_back("KILN_WORLD_SIZE=2");
    env.push_back("KILN_LOCAL_RANK=" + std::to_string(r));
    env.push_back("KILN_NCCL_UNIQUE_ID=" + id);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string prog = self, flag = "--rank";
    char* argv[] = {prog.data(), flag.data(), nullptr};
    pid_t pid;
    if (posix_spawn(&pid, self, nullptr, nullptr, argv, envp.data()) != 0) {
      std::printf("cannot start rank %d\n", r);
      return 1;
    }
    pids.push_back(pid);
  }
  // Bounded: each rank's own NCCL waits are bounded by KILN_NCCL_TIMEOUT; this is the backstop.
  bool ok = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  for (pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // kiln's samples keep NVLink multicast off (the shared GPU machines need that); unset
  // NCCL_NVLS_ENABLE and drop this line to let NCCL decide.
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  bool one = false, rank = false;
  for (int i = 1; i < argc; ++i) {
    one = one || std::strcmp(argv[i], "--one-process") == 0;
    rank = rank || std::strcmp(argv[i], "--rank") == 0;
  }
  if (sample::no_gpu("nccl_data_parallel")) return sample::kSkipped;
  if (!nc::available()) {
    std::printf("SKIPPED: nccl_data_parallel needs NCCL: %s\n", nc::unavailable_reason().c_str());
    return sample::kSkipped;
  }
  try {
    if (rank) return rank_process();
    if (!one && kiln::device_count() < 2) {
      std::printf(
          "SKIPPED: nccl_data_parallel needs two GPUs (this machine has %d); "
          "--one-process runs on one\n",
          kiln::device_count());
      return sample::kSkipped;
    }
    int status = one_process();
    if (!one && status == 0) status = two_processes();
    std::printf("%s\n",
                status == 0 ? "OK: every GPU and process holds the single-GPU results" : "FAILED");
    return status;
  } catch (const kiln::Error& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
