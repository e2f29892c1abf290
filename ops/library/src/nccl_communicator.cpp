// Communicators: creation (one rank, a local set, the file rendezvous, the launcher's
// environment), the bounded waits on NCCL, abort, and teardown.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>

#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "nccl_member.hpp"
#include "nccl_rendezvous.hpp"

namespace kiln::nccl {
namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// Polls cheaply at first (a collective's hand-off takes microseconds), then backs off to 1 ms.
class Backoff {
 public:
  void pause() {
    if (++polls_ < 200) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, std::chrono::microseconds(1000));
  }

 private:
  int polls_ = 0;
  std::chrono::microseconds sleep_{10};
};

}  // namespace

std::string Member::describe() const {
  return fmt::format("rank {} of {} on device {}", rank, size, device);
}

void Member::rethrow_failure() const {
  Failure f;
  std::string message;
  int code;
  {
    std::lock_guard lk(state_mutex);
    f = failure;
    message = failure_message;
    code = failure_code;
  }
  switch (f) {
    case Failure::timeout:
      throw TimeoutError(message);
    case Failure::nccl:
      throw NcclError(message, code);
    default:
      throw ValueError(message.empty() ? "the communicator was aborted" : message);
  }
}

void abort_locked(Member& m, Failure why, const std::string& message, int code) noexcept {
  {
    std::lock_guard lk(m.state_mutex);
    if (m.failure == Failure::none) {
      m.failure = why;
      m.failure_message = message;
      m.failure_code = code;
    }
    m.outstanding = false;
  }
  m.failed.store(true, std::memory_order_release);
  if (m.comm == nullptr) return;
  try {
    const ncclResult_t r = api().ncclCommAbort(m.comm);
    if (r != ncclSuccess && r != ncclInProgress)
      ::kiln::detail::logger().warn("ncclCommAbort on {} returned {}", m.describe(),
                                    result_name(r));
  } catch (...) {
  }
  m.comm = nullptr;
}

void wait_ready(std::span<Member* const> members, const char* what) {
  const Api& a = api();
  auto timeout = members.front()->timeout;
  for (Member* m : members) timeout = std::min(timeout, m->timeout);
  const auto start = Clock::now();
  std::vector<Member*> pending(members.begin(), members.end());
  Backoff backoff;
  for (;;) {
    for (std::size_t i = 0; i < pending.size();) {
      Member& m = *pending[i];
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = m.comm ? a.ncclCommGetAsyncError(m.comm, &state) : ncclInvalidUsage;
      if (r != ncclSuccess) state = r;
      if (state == ncclInProgress) {
        ++i;
        continue;
      }
      if (state != ncclSuccess) {
        const char* last = m.comm ? a.ncclGetLastError(m.comm) : "";
        const std::string message = fmt::format(
            "{} on {}: NCCL reported {} ({}){}{}; the communicator was aborted", what, m.describe(),
            result_name(state), int(state), last && *last ? ": " : "", last ? last : "");
        for (Member* other : members)
          if (other != &m) abort_locked(*other, Failure::nccl, message, int(state));
        abort_locked(m, Failure::nccl, message, int(state));
        throw NcclError(message, int(state));
      }
      pending.erase(pending.begin() + std::ptrdiff_t(i));
    }
    if (pending.empty()) return;
    if (Clock::now() - start >= timeout) {
      const std::string message = fmt::format(
          "{} on {}: NCCL did not finish within {:.1f} s; the other ranks never joined (is every "
          "rank running, making the same calls in the same order, with the same unique id and "
          "size?); the communicator was aborted",
          what, pending.front()->describe(), seconds(timeout));
      for (Member* m : members) abort_locked(*m, Failure::timeout, message);
      throw TimeoutError(message);
    }
    backoff.pause();
  }
}

void note_enqueued(Member& m, cudaStream_t stream, const char* call) {
  std::lock_guard lk(m.state_mutex);
  KILN_CUDA(cudaEventRecord(m.done, stream));
  m.outstanding = true;
  m.enqueued_at = Clock::now();
  m.last_call = call;
}

bool wait_idle(Member& m, bool raise) {
  Backoff backoff;
  for (;;) {
    Clock::time_point deadline;
    const char* last_call;
    {
      std::lock_guard lk(m.state_mutex);
      if (m.failure != Failure::none) break;
      if (!m.outstanding) return true;
      const cudaError_t q = cudaEventQuery(m.done);
      if (q == cudaSuccess) {
        m.outstanding = false;
        return true;
      }
      if (q != cudaErrorNotReady) {
        cudaGetLastError();
        if (raise)
          ::kiln::detail::throw_cuda_error(q, "cudaEventQuery (a collective's completion)");
        return false;
      }
      deadline = m.enqueued_at + m.timeout;
      last_call = m.last_call;
    }
    if (Clock::now() > deadline) {
      std::lock_guard cl(m.call_mutex);
      abort_locked(m, Failure::timeout,
                   fmt::format("{} on {} did not finish within {:.1f} s of being enqueued: a peer "
                               "died or never made the matching call; the communicator was "
                               "aborted",
                               last_call, m.describe(), seconds(m.timeout)));
      break;
    }
    {
      // A peer that died may also show as NCCL's asynchronous error (e.g. ncclRemoteError).
      std::unique_lock cl(m.call_mutex, std::try_to_lock);
      if (cl && m.comm) {
        ncclResult_t state = ncclSuccess;
        if (api().ncclCommGetAsyncError(m.comm, &state) == ncclSuccess && state != ncclSuccess &&
            state != ncclInProgress) {
          const char* last = api().ncclGetLastError(m.comm);
          abort_locked(m, Failure::nccl,
                       fmt::format("{} on {}: NCCL reported {} ({}){}{}; the communicator was "
                                   "aborted",
                                   last_call, m.describe(), result_name(state), int(state),
                                   last && *last ? ": " : "", last ? last : ""),
                       int(state));
          break;
        }
      }
    }
    backoff.pause();
  }
  if (raise) m.rethrow_failure();
  return false;
}

Clique::~Clique() {
  for (auto& m : members) unwatch(m.get());
  try {
    for (auto& m : members) wait_idle(*m, false);
    std::vector<Member*> alive;
    for (auto& m : members)
      if (m->comm) alive.push_back(m.get());
    const Api& a = api();
    if (!alive.empty() && !alive.front()->blocking) {
      // Nonblocking: finalize every rank (each returns at once), then poll them together.
      std::vector<std::unique_lock<std::mutex>> locks;
      for (Member* m : alive) locks.emplace_back(m->call_mutex);
      for (Member* m : alive) {
        DeviceGuard on(m->device);
        const ncclResult_t r = a.ncclCommFinalize(m->comm);
        if (r != ncclSuccess && r != ncclInProgress)
          abort_locked(
              *m, Failure::nccl,
              fmt::format("ncclCommFinalize failed on {}: {}", m->describe(), result_name(r)));
      }
      std::vector<Member*> finalizing;
      for (Member* m : alive)
        if (m->comm) finalizing.push_back(m);
      if (!finalizing.empty()) {
        try {
          wait_ready(finalizing, "finalizing the communicator");
        } catch (const Error& e) {
          ::kiln::detail::logger().warn("{}", e.what());
        }
      }
      for (Member* m : alive) {
        if (!m->comm) continue;
        DeviceGuard on(m->device);
        const ncclResult_t r = a.ncclCommDestroy(m->comm);
        if (r != ncclSuccess && r != ncclInProgress)
          ::kiln::detail::logger().warn("ncclCommDestroy on {} returned {}", m->describe(),
                                        result_name(r));
        m->comm = nullptr;
      }
    } else if (!alive.empty()) {
      // Blocking: finalize waits for the other ranks, so the ranks of one process finalize on
      // threads of their own.
      auto teardown = [&a](Member* m) {
        std::lock_guard cl(m->call_mutex);
        try {
          DeviceGuard on(m->device);
          a.ncclCommFinalize(m->comm);
          a.ncclCommDestroy(m->comm);
        } catch (...) {
        }
        m->comm = nullptr;
      };
      if (alive.size() == 1) {
        teardown(alive.front());
      } else {
        std::vector<std::thread> threads;
        for (Member* m : alive) threads.emplace_back(teardown, m);
        for (auto& t : threads) t.join();
      }
    }
  } catch (const std::exception& e) {
    ::kiln::detail::logger().warn("tearing down an NCCL communicator: {}", e.what());
  }
  for (auto& m : members)
    if (m->done) cudaEventDestroy(m->done);
}

namespace {

ncclConfig_t make_config(bool blocking) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = blocking ? 1 : 0;
  // An older NCCL reads only the fields its own version knows.
  cfg.version = std::min<unsigned>(cfg.version, unsigned(api().info.version));
  return cfg;
}

std::unique_ptr<Member> new_member(int rank, int size, int device, const CommunicatorOptions& o,
                                   std::chrono::milliseconds timeout) {
  auto m = std::make_unique<Member>();
  m->rank = rank;
  m->size = size;
  m->device = device;
  m->blocking = o.blocking;
  m->timeout = timeout;
  DeviceGuard on(device);
  KILN_CUDA(cudaEventCreateWithFlags(&m->done, cudaEventDisableTiming));
  return m;
}

// Creates the NCCL communicators of `clique` (one group when there are several), bounded.
void init_clique(Clique& clique, const UniqueId& id) {
  const Api& a = api();
  ncclUniqueId raw;
  std::memcpy(raw.internal, id.bytes.data(), sizeof(raw.internal));
  std::vector<Member*> members;
  for (auto& m : clique.members) members.push_back(m.get());
  // NCCL may read the config after returning (nonblocking): one per rank, alive until ready.
  std::vector<ncclConfig_t> configs(members.size(), make_config(members.front()->blocking));
  const bool grouped = members.size() > 1;
  ncclResult_t first_error = ncclSuccess;
  const char* failed_call = "";
  if (grouped) check_nccl(a.ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < members.size(); ++i) {
    Member& m = *members[i];
    DeviceGuard on(m.device);
    const ncclResult_t r = a.ncclCommInitRankConfig(&m.comm, m.size, raw, m.rank, &configs[i]);
    if (r != ncclSuccess && r != ncclInProgress && first_error == ncclSuccess) {
      first_error = r;
      failed_call = "ncclCommInitRankConfig";
    }
  }
  if (grouped) {
    const ncclResult_t r = a.ncclGroupEnd();
    if (r != ncclSuccess && r != ncclInProgress && first_error == ncclSuccess) {
      first_error = r;
      failed_call = "ncclGroupEnd (creating communicators)";
    }
  }
  if (first_error != ncclSuccess) {
    const char* last = a.ncclGetLastError(nullptr);
    const std::string message = fmt::format(
        "{} failed for {}: {} ({}){}{}", failed_call, members.front()->describe(),
        result_name(first_error), int(first_error), last && *last ? ": " : "", last ? last : "");
    for (Member* m : members) {
      std::lock_guard cl(m->call_mutex);
      abort_locked(*m, Failure::nccl, message, int(first_error));
    }
    throw NcclError(message, int(first_error));
  }
  wait_ready(members, "creating the communicator");
  for (Member* m : members) watch(m);
}

void check_rank_size(const char* what, int size, int rank) {
  if (size < 1) throw ValueError(fmt::format("{}: size must be at least 1; got {}", what, size));
  if (rank < 0 || rank >= size)
    throw ValueError(fmt::format("{}: rank {} is not in [0, {})", what, rank, size));
}

}  // namespace
}  // namespace detail

using detail::Clique;
using detail::Member;

Communicator::Communicator(int size, int rank, const UniqueId& id, CommunicatorOptions options) {
  detail::check_rank_size("Communicator", size, rank);
  const auto timeout = detail::timeout_of(options);
  detail::api();
  const int device = current_device();
  auto clique = std::make_shared<Clique>();
  clique->members.push_back(detail::new_member(rank, size, device, options, timeout));
  detail::init_clique(*clique, id);
  Member* m = clique->members.front().get();
  member_ = std::shared_ptr<Member>(std::move(clique), m);
}

std::vector<Communicator> Communicator::local(std::vector<int> devices,
                                              CommunicatorOptions options) {
  const auto timeout = detail::timeout_of(options);
  detail::api();
  require_device();
  const int count = device_count();
  if (devices.empty())
    for (int d = 0; d < count; ++d) devices.push_back(d);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= count)
      throw ValueError(
          fmt::format("Communicator::local: device {} does not exist (this machine "
                      "has {} GPUs)",
                      devices[i], count));
    for (std::size_t j = 0; j < i; ++j)
      if (devices[j] == devices[i])
        throw ValueError(
            fmt::format("Communicator::local: device {} is listed twice; NCCL "
                        "allows one rank per GPU in a communicator",
                        devices[i]));
  }
  const UniqueId id = UniqueId::generate();
  auto clique = std::make_shared<Clique>();
  const int n = int(devices.size());
  for (int r = 0; r < n; ++r)
    clique->members.push_back(detail::new_member(r, n, devices[std::size_t(r)], options, timeout));
  detail::init_clique(*clique, id);
  std::vector<Communicator> out;
  for (auto& m : clique->members)
    out.push_back(Communicator(std::shared_ptr<Member>(clique, m.get())));
  return out;
}

Communicator Communicator::from_file(const std::filesystem::path& file, int size, int rank,
                                     CommunicatorOptions options) {
  detail::check_rank_size("Communicator::from_file", size, rank);
  const auto timeout = detail::timeout_of(options);
  if (rank != 0) {
    const IdFile f = detail::wait_for_id_file(file, timeout);
    if (f.size != size)
      throw ValueError(
          fmt::format("{} is for {} ranks, but this process was told {}; every "
                      "rank must agree on the size",
                      file.string(), f.size, size));
    return Communicator(size, rank, f.id, options);
  }
  const UniqueId id = UniqueId::generate();
  detail::publish_id_file(file, IdFile{size, id});
  // Removed either way: after a success every rank has read it; after a failure it is stale.
  struct Remove {
    const std::filesystem::path& f;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(f, ec);
    }
  } remove{file};
  return Communicator(size, rank, id, options);
}

Communicator Communicator::from_environment(CommunicatorOptions options) {
  const LaunchEnvironment env = launch_environment();
  if (!env.id && !env.id_file)
    throw ValueError(fmt::format(
        "Communicator::from_environment: rank {} of {} (from {}), but no NCCL unique id: set "
        "KILN_NCCL_UNIQUE_ID to rank 0's UniqueId::hex(), or KILN_NCCL_ID_FILE to a path every "
        "rank sees (rank 0 writes the id there)",
        env.rank, env.size, env.source));
  require_device();
  DeviceGuard on(env.local_rank % device_count());
  if (env.id) return Communicator(env.size, env.rank, *env.id, options);
  return from_file(*env.id_file, env.size, env.rank, options);
}

Member& Communicator::member() const {
  if (!member_)
    throw ValueError("this nccl::Communicator is empty (default-constructed or moved from)");
  return *member_;
}

int Communicator::rank() const { return member().rank; }
int Communicator::size() const { return member().size; }
int Communicator::device() const { return member().device; }
std::chrono::milliseconds Communicator::timeout() const { return member().timeout; }

void Communicator::synchronize() const {
  Member& m = member();
  m.check_usable();
  detail::wait_idle(m, true);
}

void Communicator::abort() {
  Member& m = member();
  std::lock_guard cl(m.call_mutex);
  detail::abort_locked(
      m, detail::Failure::aborted,
      fmt::format("the communicator ({}) was aborted by Communicator::abort()", m.describe()));
}

bool Communicator::aborted() const noexcept {
  return member_ && member_->failed.load(std::memory_order_acquire);
}

void* Communicator::handle() const {
  Member& m = member();
  std::lock_guard cl(m.call_mutex);
  return m.comm;
}

}  // namespace kiln::nccl
