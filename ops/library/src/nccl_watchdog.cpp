// The watchdog: one thread per process that aborts a communicator whose enqueued work has not
// finished `timeout` after it was enqueued, so a thread blocked in a stream synchronize behind
// a collective whose peer died gets to run again, and the failure is said out loud.
#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <thread>

#include "kiln/runtime/detail/log.hpp"
#include "nccl_member.hpp"

namespace kiln::nccl::detail {
namespace {

class Watchdog {
 public:
  // Never destroyed (a Clique may be torn down during static destruction); its thread is
  // stopped by an atexit handler, which runs before the CUDA runtime's own teardown (registered
  // earlier, at the first CUDA call).
  static Watchdog& get() {
    static Watchdog* w = [] {
      auto* dog = new Watchdog();
      std::atexit([] { get().stop(); });
      existing_.store(dog, std::memory_order_release);
      return dog;
    }();
    return *w;
  }
  /// The watchdog if one was started (teardown must not start one).
  static Watchdog* existing() noexcept { return existing_.load(std::memory_order_acquire); }

  void add(Member* m) {
    std::lock_guard lk(mutex_);
    members_.push_back(m);
    if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { run(); });
    wake_.notify_all();
  }

  void remove(Member* m) noexcept {
    std::lock_guard lk(mutex_);  // waits for a scan in progress, which may be looking at m
    std::erase(members_, m);
  }

 private:
  void stop() {
    {
      std::lock_guard lk(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void run() {
    std::unique_lock lk(mutex_);
    while (!stopping_) {
      auto period = std::chrono::milliseconds(100);
      for (Member* m : members_)
        period = std::max(std::chrono::milliseconds(1), std::min(period, m->timeout / 10));
      wake_.wait_for(lk, period, [this] { return stopping_; });
      if (stopping_) break;
      for (Member* m : members_) check(*m);
    }
  }

  static void check(Member& m) {
    std::string message;
    {
      std::lock_guard lk(m.state_mutex);
      if (m.failure != Failure::none || !m.outstanding) return;
      cudaSetDevice(m.device);
      const cudaError_t q = cudaEventQuery(m.done);
      if (q == cudaSuccess) {
        m.outstanding = false;
        return;
      }
      if (q != cudaErrorNotReady) {
        cudaGetLastError();
        return;
      }
      const auto age = std::chrono::steady_clock::now() - m.enqueued_at;
      if (age <= m.timeout) return;
      message = fmt::format(
          "{} on {} did not finish within {:.1f} s of being enqueued: a peer died or never made "
          "the matching call; kiln's NCCL watchdog aborted the communicator (its results are "
          "undefined, and its next call raises this error)",
          m.last_call, m.describe(), std::chrono::duration<double>(m.timeout).count());
    }
    // A kiln call on this communicator is under way: its own wait is bounded; look again later.
    std::unique_lock cl(m.call_mutex, std::try_to_lock);
    if (!cl) return;
    abort_locked(m, Failure::timeout, message);
    ::kiln::detail::logger().error("{}", message);
  }

  static inline std::atomic<Watchdog*> existing_{nullptr};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Member*> members_;
  std::thread thread_;
  bool stopping_ = false;
};

}  // namespace

void watch(Member* m) { Watchdog::get().add(m); }
void unwatch(Member* m) noexcept {
  if (Watchdog* w = Watchdog::existing()) w->remove(m);
}

}  // namespace kiln::nccl::detail
