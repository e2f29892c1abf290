// One rank of a multi-process NCCL test, started by tests/ops/collectives_gpu_test.cpp (and
// by nccl_mpirun.sh under mpirun). Prints what it saw; exit 0 when everything matched.
//   kiln_nccl_rank probe                  the NCCL kiln would load ("available 2.28.9 PATH"
//                                         or "unavailable: WHY"); needs no GPU
//   kiln_nccl_rank gpus                   the GPU count
//   kiln_nccl_rank suite (--file PATH --size N --rank R | --env) [--blocking]
//                                         the collective suite (tests/support/nccl_suite.hpp)
//   kiln_nccl_rank dead-peer --file PATH --rank R --how sync|get
//                                         two ranks; after a first all_reduce rank 1 dies
//                                         (sync: SIGKILL) or stays away (get: sleeps), and
//                                         rank 0 checks its next all_reduce ends in a kiln
//                                         error (sync: synchronize() raises; get: x.get()
//                                         returns once the watchdog aborted) within bounds
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.hpp"
#include "support/nccl_suite.hpp"

namespace nc = kiln::nccl;
using Clock = std::chrono::steady_clock;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: kiln_nccl_rank probe | gpus | suite (--file PATH --size N --rank R | "
               "--env) [--blocking] | dead-peer --file PATH --rank R --how sync|get\n");
  return 2;
}

struct Args {
  std::string mode, file, how;
  int size = 2, rank = -1;
  bool env = false, blocking = false;
};

bool parse(int argc, char** argv, Args& a) {
  if (argc < 2) return false;
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (k == "--env") {
      a.env = true;
    } else if (k == "--blocking") {
      a.blocking = true;
    } else if (k == "--file" || k == "--how" || k == "--size" || k == "--rank") {
      const char* v = next();
      if (!v) return false;
      if (k == "--file") a.file = v;
      if (k == "--how") a.how = v;
      if (k == "--size") a.size = std::atoi(v);
      if (k == "--rank") a.rank = std::atoi(v);
    } else {
      return false;
    }
  }
  return true;
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int suite(const Args& a) {
  nc::CommunicatorOptions o;
  o.blocking = a.blocking;
  nc::Communicator comm;
  if (a.env) {
    comm = nc::Communicator::from_environment(o);
  } else {
    kiln::DeviceGuard on(a.rank % kiln::device_count());
    comm = nc::Communicator::from_file(a.file, a.size, a.rank, o);
  }
  const std::vector<nc::Communicator> mine{comm};
  const auto failures = kiln::test::run_collective_suite(mine);
  for (const auto& f : failures) std::printf("FAIL rank %d: %s\n", comm.rank(), f.c_str());
  if (!failures.empty()) return 1;
  std::printf("ok rank %d of %d on device %d: every collective matched\n", comm.rank(), comm.size(),
              comm.device());
  return 0;
}

int dead_peer(const Args& a) {
  kiln::DeviceGuard on(a.rank % kiln::device_count());
  nc::Communicator comm = nc::Communicator::from_file(a.file, 2, a.rank);
  const double timeout = std::chrono::duration<double>(comm.timeout()).count();
  auto x = kiln::full({1 << 20}, 1.0f);
  nc::all_reduce(comm, x, x);
  comm.synchronize();
  if (x.get<float>()[12345] != 2.0f) {
    std::printf("FAIL rank %d: the first all_reduce gave a wrong sum\n", a.rank);
    return 1;
  }
  if (a.rank == 1) {
    std::fflush(stdout);
    if (a.how == "sync") ::kill(::getpid(), SIGKILL);  // dies without a word to NCCL
    std::this_thread::sleep_for(std::chrono::duration<double>(2 * timeout + 2));
    comm.abort();  // stayed away; rank 0 has given up by now
    std::printf("ok rank 1 stayed away\n");
    return 0;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto t0 = Clock::now();
  std::string raised;
  if (a.how == "sync") {
    try {
      nc::all_reduce(comm, x, x);
      comm.synchronize();
      std::printf("FAIL rank 0: synchronize returned although rank 1 is dead\n");
      return 1;
    } catch (const kiln::TimeoutError& e) {
      raised = std::string("TimeoutError: ") + e.what();
    } catch (const kiln::NcclError& e) {
      raised = std::string("NcclError: ") + e.what();
    }
  } else {
    try {
      nc::all_reduce(comm, x, x);
      (void)x.get<float>();  // blocks until the watchdog aborts the communicator
      raised = "get returned";
    } catch (const kiln::Error& e) {
      raised = std::string("an error: ") + e.what();
    }
  }
  const double waited = since(t0);
  if (!comm.aborted()) {
    std::printf("FAIL rank 0: the communicator is not aborted after %.2f s (%s)\n", waited,
                raised.c_str());
    return 1;
  }
  try {
    nc::all_reduce(comm, x, x);
    std::printf("FAIL rank 0: a call on the aborted communicator did not raise\n");
    return 1;
  } catch (const kiln::Error& e) {
    std::printf("ok rank 0: %s after %.2f s (timeout %.1f s); the next call raised: %s\n",
                raised.c_str(), waited, timeout, e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) return usage();
  kiln::test::keep_nvls_off();
  try {
    if (a.mode == "probe") {
      if (nc::available())
        std::printf("available %s %s\n", nc::library().version_string().c_str(),
                    nc::library().path.c_str());
      else
        std::printf("unavailable: %s\n", nc::unavailable_reason().c_str());
      return 0;
    }
    if (a.mode == "gpus") {
      std::printf("%d\n", kiln::device_count());
      return 0;
    }
    if (a.mode == "suite") return suite(a);
    if (a.mode == "dead-peer" && a.rank >= 0 && (a.how == "sync" || a.how == "get"))
      return dead_peer(a);
    return usage();
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 3;
  }
}
