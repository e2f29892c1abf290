#pragma once
// Internal: one rank's NCCL communicator and the bounded waits around it. A Member belongs to a
// Clique (the communicators created together, destroyed together); Communicator handles share
// the Clique and point at their Member.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "nccl_library.hpp"

namespace kiln::nccl::detail {

enum class Failure { none, timeout, nccl, aborted };

struct Member {
  int rank = 0, size = 1, device = 0;
  bool blocking = false;
  std::chrono::milliseconds timeout{0};

  /// Held while kiln calls NCCL with `comm` and while aborting it: NCCL allows one caller per
  /// communicator, and the watchdog must not abort under a call in progress.
  std::mutex call_mutex;
  ncclComm_t comm = nullptr;   ///< nullptr once aborted or destroyed (under call_mutex)
  cudaEvent_t done = nullptr;  ///< recorded after each enqueue

  /// Guards what follows (the enqueue record, read by the watchdog).
  mutable std::mutex state_mutex;
  bool outstanding = false;  ///< work enqueued that `done` has not yet shown finished
  std::chrono::steady_clock::time_point enqueued_at;
  const char* last_call = "";
  Failure failure = Failure::none;
  std::string failure_message;
  int failure_code = -1;  ///< NCCL's result for Failure::nccl
  std::atomic<bool> failed{false};

  /// "rank 0 of 2 on device 0"
  std::string describe() const;
  /// Raises the error that ended this communicator (TimeoutError, NcclError or ValueError).
  [[noreturn]] void rethrow_failure() const;
  void check_usable() const {
    if (failed.load(std::memory_order_acquire)) rethrow_failure();
  }
};

/// Aborts m's NCCL communicator and records why (first reason wins). Caller holds
/// m.call_mutex. Never throws.
void abort_locked(Member& m, Failure why, const std::string& message, int code = -1) noexcept;

/// After calls were handed to NCCL (callers hold every member's call_mutex): polls until no
/// member reports ncclInProgress. On NCCL's asynchronous error aborts those members and raises
/// NcclError; past the timeout aborts them all and raises TimeoutError naming `what`.
void wait_ready(std::span<Member* const> members, const char* what);

/// Records that `call` was enqueued on `stream` (for synchronize() and the watchdog).
void note_enqueued(Member& m, cudaStream_t stream, const char* call);

/// Waits for m's enqueued work (synchronize()). `raise`: throw on failure; otherwise (teardown)
/// abort quietly and return false.
bool wait_idle(Member& m, bool raise);

/// The communicators created together: finalized and destroyed together when the last handle
/// to any of them goes away (NCCL's teardown is collective across the ranks of one process).
struct Clique {
  std::vector<std::unique_ptr<Member>> members;
  Clique() = default;
  Clique(const Clique&) = delete;
  Clique& operator=(const Clique&) = delete;
  ~Clique();
};

/// The watchdog: a process-wide thread that aborts members whose enqueued work outlives their
/// timeout. Members are registered when created and removed by ~Clique.
void watch(Member* m);
void unwatch(Member* m) noexcept;

}  // namespace kiln::nccl::detail
