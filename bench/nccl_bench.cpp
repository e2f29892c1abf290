// kiln_nccl_bench: all_reduce of float32 through kiln (nonblocking and blocking communicators)
// and through NCCL called directly (the same libnccl, dlopen'ed here), in one process driving
// two GPUs and in two processes with one GPU each (started here). Prints one JSON object; see
// bench/README.md. bench/compare_nccl.py runs it beside CuPy's NCCL.
//   kiln_nccl_bench                      everything (needs two GPUs; prints an error object
//                                        and exits 0 otherwise)
//   kiln_nccl_bench --rank R --ids A,B,C a rank of the two-process part (internal)
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <nccl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.hpp"

extern char** environ;

namespace nc = kiln::nccl;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;
constexpr std::size_t kSizes[] = {kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB, 1024 * kMiB};
constexpr const char* kImpls[] = {"kiln", "kiln_blocking", "nccl_direct"};

std::vector<std::string> g_cases, g_errors;

std::string quoted(const std::string& s) { return fmt::format("{:?}", s); }

void add_case(const std::string& name, const char* metric, double value, const char* mode,
              const char* impl, std::size_t bytes) {
  g_cases.push_back(fmt::format(
      "{{\"name\": {}, \"metric\": \"{}\", \"value\": {:.4f}, \"mode\": \"{}\", \"impl\": \"{}\", "
      "\"bytes\": {}}}",
      quoted(name), metric, value, mode, impl, bytes));
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// What one implementation does on this process's GPUs: one all_reduce (sum, out of place) of
// the first `count` floats of every local rank's buffers, and the wait for all of them.
struct Runner {
  std::function<void(std::size_t count)> op;
  std::function<void()> sync;
};

// Host time of `op` then a stream synchronize, per call (what a caller waits for).
double latency_us(const Runner& r, std::size_t count) {
  for (int i = 0; i < 200; ++i) {
    r.op(count);
    r.sync();
  }
  std::vector<double> us;
  for (int i = 0; i < 2000; ++i) {
    const auto t0 = Clock::now();
    r.op(count);
    r.sync();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return median(us);
}

// Host time per call of 100 calls then one synchronize.
double pipelined_us(const Runner& r, std::size_t count) {
  std::vector<double> us;
  for (int round = 0; round < 21; ++round) {
    const auto t0 = Clock::now();
    for (int i = 0; i < 100; ++i) r.op(count);
    r.sync();
    if (round > 0)
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 100);
  }
  return median(us);
}

// nccl-tests' bus bandwidth of an all_reduce: bytes / time * 2 (n - 1) / n.
double busbw_gbs(const Runner& r, std::size_t bytes, int nranks) {
  const std::size_t count = bytes / 4;
  const int iters = int(std::clamp<std::size_t>((std::size_t(4) << 30) / bytes, 5, 200));
  for (int i = 0; i < 3; ++i) r.op(count);
  r.sync();
  std::vector<double> per_call;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) r.op(count);
    r.sync();
    per_call.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / iters);
  }
  return double(bytes) / median(per_call) * 2.0 * (nranks - 1) / nranks / 1e9;
}

// The local ranks' buffers: send (ones) and recv of 1 GiB of float32 each, on each device.
struct Buffers {
  std::vector<kiln::ndarray> send, recv;
  // Per size, views of the first bytes (made once, outside the timing).
  std::vector<std::vector<kiln::ndarray>> send_at, recv_at;
  explicit Buffers(const std::vector<int>& devices) {
    const std::int64_t n = std::int64_t(kSizes[std::size(kSizes) - 1] / 4);
    for (int d : devices) {
      kiln::DeviceGuard on(d);
      send.push_back(kiln::full({n}, 1.0f));
      recv.push_back(kiln::empty({n}, kiln::float32));
    }
  }
  const kiln::ndarray& send_view(std::size_t i, std::size_t count) {
    return view(send, send_at, i, count);
  }
  const kiln::ndarray& recv_view(std::size_t i, std::size_t count) {
    return view(recv, recv_at, i, count);
  }

 private:
  // Views are cached per (count, rank) so that kiln's calls get ready-made arrays, as a
  // training loop would hand it.
  std::vector<std::size_t> counts_;
  const kiln::ndarray& view(std::vector<kiln::ndarray>& whole,
                            std::vector<std::vector<kiln::ndarray>>& at, std::size_t i,
                            std::size_t count) {
    std::size_t k = 0;
    for (; k < counts_.size() && counts_[k] != count; ++k) {
    }
    if (k == counts_.size()) counts_.push_back(count);
    if (at.size() <= k) at.resize(k + 1);
    if (at[k].empty())
      for (auto& w : whole) at[k].push_back(w(kiln::slice(0, std::int64_t(count))));
    return at[k][i];
  }
};

void sync_devices(const std::vector<int>& devices) {
  for (int d : devices) {
    kiln::DeviceGuard on(d);
    kiln::Stream::null().synchronize();
  }
}

// ---- NCCL called directly ---------------------------------------------------------------------

struct Direct {
#define KILN_DIRECT_FN(name) decltype(&::name) name = nullptr;
  KILN_DIRECT_FN(ncclCommInitAll)
  KILN_DIRECT_FN(ncclCommInitRank)
  KILN_DIRECT_FN(ncclAllReduce)
  KILN_DIRECT_FN(ncclGroupStart)
  KILN_DIRECT_FN(ncclGroupEnd)
#undef KILN_DIRECT_FN
  Direct() {
    void* h = ::dlopen(nc::library().path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw kiln::Error("dlopen " + nc::library().path);
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      if (!fn) throw kiln::Error(std::string("no ") + name);
    };
    get(ncclCommInitAll, "ncclCommInitAll");
    get(ncclCommInitRank, "ncclCommInitRank");
    get(ncclAllReduce, "ncclAllReduce");
    get(ncclGroupStart, "ncclGroupStart");
    get(ncclGroupEnd, "ncclGroupEnd");
  }
};

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw kiln::Error(fmt::format("{} returned {}", what, int(r)));
}

// ---- one implementation on this process's ranks ----------------------------------------------

// Runs every measurement of `impl` with this process's ranks (`devices`, ranks `first_rank`...
// of `nranks`); `id` joins the other process's ranks (two-process mode).
void measure(const char* impl, const char* mode, const std::vector<int>& devices, int first_rank,
             int nranks, const nc::UniqueId& id, bool report) {
  Buffers buf(devices);
  Runner run;
  run.sync = [&] { sync_devices(devices); };
  std::vector<nc::Communicator> comms;
  std::vector<ncclComm_t> direct_comms(devices.size());
  std::unique_ptr<Direct> direct;
  const bool one_process = int(devices.size()) == nranks;
  if (std::strcmp(impl, "nccl_direct") == 0) {
    direct = std::make_unique<Direct>();
    if (one_process) {
      check(direct->ncclCommInitAll(direct_comms.data(), nranks, devices.data()),
            "ncclCommInitAll");
    } else {
      kiln::DeviceGuard on(devices[0]);
      ncclUniqueId raw;
      std::memcpy(raw.internal, id.bytes.data(), sizeof raw.internal);
      check(direct->ncclCommInitRank(&direct_comms[0], nranks, raw, first_rank),
            "ncclCommInitRank");
    }
    run.op = [&](std::size_t count) {
      if (one_process) direct->ncclGroupStart();
      for (std::size_t i = 0; i < devices.size(); ++i)
        direct->ncclAllReduce(buf.send_view(i, count).data(), buf.recv_view(i, count).data(), count,
                              ncclFloat32, ncclSum, direct_comms[i], nullptr);
      if (one_process) direct->ncclGroupEnd();
    };
  } else {
    nc::CommunicatorOptions o;
    o.blocking = std::strcmp(impl, "kiln_blocking") == 0;
    if (one_process) {
      comms = nc::Communicator::local(devices, o);
    } else {
      kiln::DeviceGuard on(devices[0]);
      comms.emplace_back(nranks, first_rank, id, o);
    }
    run.op = [&](std::size_t count) {
      if (comms.size() == 1) {
        nc::all_reduce(comms[0], buf.send_view(0, count), buf.recv_view(0, count));
        return;
      }
      nc::group([&] {
        for (std::size_t i = 0; i < comms.size(); ++i)
          nc::all_reduce(comms[i], buf.send_view(i, count), buf.recv_view(i, count));
      });
    };
  }
  // Right answers first (every rank sent ones: the sum is nranks everywhere).
  run.op(1024);
  run.sync();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto got = buf.recv_view(i, 1024).get<float>();
    if (got.front() != float(nranks) || got.back() != float(nranks))
      g_errors.push_back(quoted(
          fmt::format("{} {}: all_reduce gave {}, expected {}", impl, mode, got.front(), nranks)));
  }
  const double lat = latency_us(run, 2);
  const double pipe = pipelined_us(run, 2);
  if (report) {
    add_case(fmt::format("all_reduce_8B_latency_us_{}_{}", mode, impl), "us", lat, mode, impl, 8);
    add_case(fmt::format("all_reduce_8B_pipelined_us_{}_{}", mode, impl), "us", pipe, mode, impl,
             8);
  }
  for (std::size_t bytes : kSizes) {
    const double bw = busbw_gbs(run, bytes, nranks);
    if (report)
      add_case(fmt::format("all_reduce_f32_busbw_{}MiB_{}_{}", bytes / kMiB, mode, impl), "GB/s",
               bw, mode, impl, bytes);
  }
  run.sync();
  // NCCL's own communicators are left to the end of the process (a one-thread clique's destroy
  // is a collective across its ranks: NCCL called directly would need them grouped).
}

// ---- the two-process part -----------------------------------------------------------------------

int rank_main(int rank, const std::string& ids) {
  std::vector<nc::UniqueId> id;
  std::stringstream in(ids);
  for (std::string hex; std::getline(in, hex, ',');) id.push_back(nc::UniqueId::from_hex(hex));
  for (std::size_t k = 0; k < std::size(kImpls); ++k) {
    measure(kImpls[k], "2proc", {rank}, rank, 2, id.at(k), rank == 0);
    for (int d : {rank}) kiln::get_memory_pool(d).free_all_blocks();
  }
  if (rank == 0) {
    for (const auto& c : g_cases) std::printf("CASE %s\n", c.c_str());
    for (const auto& e : g_errors) std::printf("ERROR %s\n", e.c_str());
  }
  return 0;
}

void two_processes() {
  std::string ids;
  for (std::size_t k = 0; k < std::size(kImpls); ++k) {
    if (k) ids += ',';
    ids += nc::UniqueId::generate().hex();
  }
  char out_template[] = "/tmp/kiln-nccl-bench-XXXXXX";
  const int fd = ::mkstemp(out_template);
  ::close(fd);
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::string self = "/proc/self/exe", flag = "--rank", rank = std::to_string(r), f2 = "--ids";
    char* argv[] = {self.data(), flag.data(), rank.data(), f2.data(), ids.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (r == 0)
      posix_spawn_file_actions_addopen(&actions, 1, out_template, O_WRONLY | O_TRUNC, 0600);
    pid_t pid;
    if (posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, environ) != 0) {
      g_errors.push_back(quoted("cannot start the rank processes"));
      posix_spawn_file_actions_destroy(&actions);
      return;
    }
    posix_spawn_file_actions_destroy(&actions);
    pids.push_back(pid);
  }
  const auto deadline = Clock::now() + std::chrono::minutes(8);
  for (pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        g_errors.push_back(quoted("a rank process ran past 8 minutes and was killed"));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      g_errors.push_back(quoted(fmt::format("a rank process ended with status {}", status)));
  }
  std::ifstream in(out_template);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("CASE ", 0) == 0) g_cases.push_back(line.substr(5));
    if (line.rfind("ERROR ", 0) == 0) g_errors.push_back(line.substr(6));
  }
  ::unlink(out_template);
}

}  // namespace

int main(int argc, char** argv) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);  // kiln's benchmarks keep NVLink multicast off
  try {
    if (argc == 5 && std::strcmp(argv[1], "--rank") == 0)
      return rank_main(std::atoi(argv[2]), argv[4]);
    if (kiln::device_count() < 2) {
      std::printf("{\"device\": null, \"error\": %s, \"cases\": []}\n",
                  quoted(fmt::format("needs two GPUs; this machine has {} ({})",
                                     kiln::device_count(), kiln::no_device_reason()))
                      .c_str());
      return 0;
    }
    if (!nc::available()) {
      std::printf("{\"device\": null, \"error\": %s, \"cases\": []}\n",
                  quoted(nc::unavailable_reason()).c_str());
      return 0;
    }
    const auto t0 = Clock::now();
    for (const char* impl : kImpls) {
      try {
        measure(impl, "1proc", {0, 1}, 0, 2, nc::UniqueId{}, true);
      } catch (const std::exception& e) {
        g_errors.push_back(quoted(fmt::format("{} 1proc: {}", impl, e.what())));
      }
      for (int d : {0, 1}) kiln::get_memory_pool(d).free_all_blocks();
    }
    two_processes();
    std::string out = fmt::format(
        "{{\"device\": {}, \"gpus\": {}, \"nccl\": {{\"version\": \"{}\", \"path\": {}}}, "
        "\"nvls\": {}, \"wall_s\": {:.1f}, \"cases\": [",
        quoted(kiln::device_properties(0).name), kiln::device_count(),
        nc::library().version_string(), quoted(nc::library().path),
        quoted(std::getenv("NCCL_NVLS_ENABLE")),
        std::chrono::duration<double>(Clock::now() - t0).count());
    for (std::size_t i = 0; i < g_cases.size(); ++i) out += (i ? ",\n  " : "\n  ") + g_cases[i];
    out += "],\n \"errors\": [";
    for (std::size_t i = 0; i < g_errors.size(); ++i) out += (i ? ", " : "") + g_errors[i];
    out += "]}";
    std::printf("%s\n", out.c_str());
  } catch (const std::exception& e) {
    std::printf("{\"device\": null, \"error\": %s, \"cases\": []}\n", quoted(e.what()).c_str());
  }
  return 0;
}
