#pragma once
// NCCL collectives on kiln arrays: communicators over the GPUs of one process or over many
// processes (and machines), and all_reduce, broadcast, reduce, all_gather, reduce_scatter,
// send/recv and grouped calls on ndarrays, on the current stream.
//
//   // One process, every local GPU: one communicator per GPU, driven from one thread.
//   auto comms = kiln::nccl::Communicator::local();
//   kiln::nccl::group([&] {
//     for (std::size_t i = 0; i < comms.size(); ++i)
//       kiln::nccl::all_reduce(comms[i], grads[i], grads[i]);        // in place, sum
//   });
//
//   // One GPU per process (started by mpirun, srun, torchrun or any launcher): rank and size
//   // from the launcher's environment, NCCL's unique id from KILN_NCCL_UNIQUE_ID or through
//   // the file KILN_NCCL_ID_FILE names on a shared path.
//   auto comm = kiln::nccl::Communicator::from_environment();
//   kiln::ndarray total = kiln::nccl::all_reduce(comm, partial, kiln::nccl::reduce_op::max);
//   comm.synchronize();   // bounded wait: TimeoutError if a peer died, never a hang
//
// NCCL is loaded at run time (dlopen), never linked: from KILN_NCCL_LIBRARY when set (e.g. the
// libnccl.so.2 of the nvidia-nccl-cu13 wheel), else libnccl.so.2 from the loader's path. Its
// absence, or a version older than kMinimumVersion, is an NcclError raised by the first call
// that needs it; nothing else in kiln needs NCCL.
//
// Semantics (NCCL's, with kiln's checks in front):
// - Every call checks its arguments against the communicator before NCCL sees them (dtype,
//   sizes, device, root or peer, overlap): TypeError, ShapeError, ValueError.
// - Calls enqueue on the current stream of the communicator's device and return; results are
//   there once that stream gets past them (x.get() synchronizes it, as for kernels).
// - Non-contiguous arrays are copied: an input to a contiguous temporary before the call, an
//   output from one after it (in stream order); contiguous arrays go to NCCL as they are.
// - Dtypes: int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32 and float64
//   are NCCL's own types, for every operation. bool reduces with max (any) and min (all);
//   complex64/complex128 with sum and avg (as pairs of floats); int16/uint16 only move (no
//   reductions: NCCL has no 16-bit integers); avg needs a floating or complex dtype.
// - Calls on several communicators of one thread go inside nccl::group (NCCL's
//   ncclGroupStart/End): kiln checks every call of the group first and hands them to NCCL only
//   when the group closes, so an argument error leaves no half-issued group behind.
// - No silent hangs: every wait is bounded by the communicator's timeout
//   (CommunicatorOptions::timeout, default KILN_NCCL_TIMEOUT seconds, else 300). Communicator
//   creation, the hand-off of calls to NCCL and synchronize() raise TimeoutError when the
//   other ranks never arrive; a process-wide watchdog aborts a communicator whose enqueued work
//   has not finished `timeout` after it was enqueued (a peer died mid-collective), so a thread
//   blocked in a stream synchronize returns; the watchdog logs the error and every later call
//   on that communicator raises it. The data of calls that did not finish is undefined.
// - CUDA graph capture of collectives is not supported.
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/runtime/ndarray.hpp"

namespace kiln::nccl {

// ---- the library -------------------------------------------------------------------------

/// The oldest NCCL kiln drives: 2.18.0 (nonblocking communicators, ncclCommFinalize, bfloat16
/// and avg all behave as kiln relies on from there). NCCL's encoding: 2.18.0 is 21800.
inline constexpr int kMinimumVersion = 21800;

struct LibraryInfo {
  std::string path;  ///< the file the loader found (e.g. /usr/lib/x86_64-linux-gnu/libnccl.so.2)
  int version = 0;   ///< NCCL's version code: 22809 for 2.28.9
  /// "2.28.9"
  std::string version_string() const;
};

/// The NCCL kiln uses, loaded on the first call (KILN_NCCL_LIBRARY, else libnccl.so.2 from the
/// loader's path). NcclError when it is missing, is not NCCL or is older than kMinimumVersion.
const LibraryInfo& library();
/// True when library() would succeed. Never throws.
bool available() noexcept;
/// Why NCCL is unavailable ("" when it is available).
std::string unavailable_reason();
/// Loads the NCCL at `path` (a file, or a name for the loader) only to check it: its path and
/// version, or NcclError as library() would raise it. kiln keeps using library().
LibraryInfo check_library(const std::string& path);
/// "2.28.9" from 22809 (and "2.7.8" from the pre-2.9 encoding 2708).
std::string version_string(int version);

// ---- unique ids and rendezvous -------------------------------------------------------------

/// NCCL's 128-byte unique id: rank 0 makes one, every rank passes the same one to its
/// Communicator.
struct UniqueId {
  std::array<std::uint8_t, 128> bytes{};

  /// A fresh id from NCCL (ncclGetUniqueId; needs NCCL, not a GPU).
  static UniqueId generate();
  /// 256 lowercase hex digits, the form KILN_NCCL_UNIQUE_ID and the id file hold.
  std::string hex() const;
  /// The inverse of hex() (either case). ValueError unless `text` is 256 hex digits.
  static UniqueId from_hex(std::string_view text);
  friend bool operator==(const UniqueId&, const UniqueId&) = default;
};

/// The id file of the file rendezvous: what rank 0 writes for the other ranks to read.
///   kiln-nccl-rendezvous 1
///   size 4
///   id 3f00...  (256 hex digits)
struct IdFile {
  int size = 0;
  UniqueId id;
};
/// The file's text (golden-tested: tests/ops/golden/nccl_id_file_v1.txt).
std::string format_id_file(const IdFile& f);
/// Parses that text; ValueError naming the line at fault.
IdFile parse_id_file(std::string_view text);

/// Who this process is, as its launcher says through the environment.
struct LaunchEnvironment {
  int rank = 0, size = 1;
  int local_rank = 0;  ///< rank among the processes of this machine (picks the GPU)
  /// Where rank and size came from: "KILN_RANK/KILN_WORLD_SIZE",
  /// "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE" (Open MPI's mpirun), "PMI_RANK/PMI_SIZE"
  /// (MPICH, Intel MPI), "SLURM_PROCID/SLURM_NTASKS" (srun) or "RANK/WORLD_SIZE" (torchrun),
  /// the first pair found in that order.
  std::string source;
  std::optional<UniqueId> id;                    ///< KILN_NCCL_UNIQUE_ID (256 hex digits)
  std::optional<std::filesystem::path> id_file;  ///< KILN_NCCL_ID_FILE
};
/// Reads the environment (see LaunchEnvironment; the local rank from KILN_LOCAL_RANK,
/// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID or LOCAL_RANK, else the rank).
/// ValueError naming the variable when one is malformed, when rank and size are missing or
/// half-set, or when rank >= size.
LaunchEnvironment launch_environment();

// ---- communicators -------------------------------------------------------------------------

struct CommunicatorOptions {
  /// How long kiln waits for this communicator's other ranks and enqueued work before it
  /// aborts the communicator and raises TimeoutError. Unset: KILN_NCCL_TIMEOUT (seconds,
  /// fractions allowed), else 300 s. It bounds each collective from enqueue to completion,
  /// queueing behind earlier work included.
  std::optional<std::chrono::milliseconds> timeout;
  /// false (default): an NCCL nonblocking communicator, so every host-side wait (creation,
  /// connection set-up at a first call, destruction) is polled and bounded by `timeout`.
  /// true: NCCL's blocking mode, which costs less host time per call (recent NCCL hands each
  /// nonblocking call to a new thread) but waits inside NCCL, unbounded, while the other ranks
  /// have not arrived; the watchdog still bounds enqueued work.
  bool blocking = false;
};

namespace detail {
struct Member;
}

/// One rank of an NCCL communicator, on one GPU. A handle: copies share it; NCCL's
/// communicator is finalized and destroyed when the last handle of every communicator created
/// with it (a local() set) goes away, after a bounded wait for its enqueued work. Not for use
/// from two host threads at once (NCCL's rule); different communicators may be driven from
/// different threads.
class Communicator {
 public:
  /// No communicator; every call on it raises ValueError.
  Communicator() = default;
  /// Rank `rank` of `size` on the current device; every rank passes the same `id`. Returns once
  /// all ranks have joined (TimeoutError after the timeout).
  Communicator(int size, int rank, const UniqueId& id, CommunicatorOptions options = {});
  /// One communicator per GPU of this process: rank i on devices[i] (default: every GPU).
  /// Drive them from one thread inside nccl::group, or from one thread each.
  static std::vector<Communicator> local(std::vector<int> devices = {},
                                         CommunicatorOptions options = {});
  /// The file rendezvous, for processes that share a file system but no launcher: rank 0
  /// makes an id and publishes `file` atomically (ValueError if it already exists: left by an
  /// earlier run that died? remove it); the other ranks wait for it (bounded by the timeout)
  /// and check its size. Rank 0 removes the file once every rank has joined.
  static Communicator from_file(const std::filesystem::path& file, int size, int rank,
                                CommunicatorOptions options = {});
  /// From launch_environment(): rank and size from the launcher, the GPU local_rank modulo the
  /// GPU count, the id from KILN_NCCL_UNIQUE_ID or else through the file KILN_NCCL_ID_FILE.
  static Communicator from_environment(CommunicatorOptions options = {});

  bool defined() const noexcept { return member_ != nullptr; }
  int rank() const;
  int size() const;
  int device() const;
  std::chrono::milliseconds timeout() const;
  /// Waits for every call enqueued on this communicator to finish, bounded by the timeout:
  /// TimeoutError (after aborting it) when it does not, NcclError when NCCL reported an error.
  /// Raises the error that aborted the communicator, if one did.
  void synchronize() const;
  /// Aborts NCCL's communicator now (ncclCommAbort): enqueued work stops, later calls raise.
  /// For a local() set, aborts only this rank's communicator.
  void abort();
  /// True once aborted (by abort(), a timeout or an NCCL error).
  bool aborted() const noexcept;
  /// NCCL's ncclComm_t, for calling NCCL directly (nullptr once aborted).
  void* handle() const;
  /// Identity: copies of one communicator compare equal.
  friend bool operator==(const Communicator& a, const Communicator& b) noexcept {
    return a.member_ == b.member_;
  }

  /// Internal: the shared state (library sources only).
  detail::Member& member() const;

 private:
  explicit Communicator(std::shared_ptr<detail::Member> m) : member_(std::move(m)) {}
  std::shared_ptr<detail::Member> member_;
};

// ---- collectives ---------------------------------------------------------------------------

enum class reduce_op { sum, prod, max, min, avg };

/// recv = op over every rank's send (same dtype and size; any shapes). recv may be send: in
/// place.
void all_reduce(const Communicator& comm, const ndarray& send, const ndarray& recv,
                reduce_op op = reduce_op::sum);
/// The same into a new array of send's shape.
ndarray all_reduce(const Communicator& comm, const ndarray& send, reduce_op op = reduce_op::sum);

/// recv = root's send on every rank. Other ranks' send is not read (pass ndarray{} or recv).
void broadcast(const Communicator& comm, const ndarray& send, const ndarray& recv, int root);
/// In place: x = root's x.
void broadcast(const Communicator& comm, const ndarray& x, int root);

/// root's recv = op over every rank's send. Other ranks' recv is not written (may be
/// ndarray{}).
void reduce(const Communicator& comm, const ndarray& send, const ndarray& recv, int root,
            reduce_op op = reduce_op::sum);

/// recv (size() * send.size() elements, rank r's send at element r * send.size()) on every
/// rank. In place when send is exactly this rank's block of recv.
void all_gather(const Communicator& comm, const ndarray& send, const ndarray& recv);
/// The same into a new array of shape (size(), *send.shape()).
ndarray all_gather(const Communicator& comm, const ndarray& send);

/// Rank r's recv = op over every rank's r-th block of send (send has size() * recv.size()
/// elements, in C order). In place when recv is exactly this rank's block of send.
void reduce_scatter(const Communicator& comm, const ndarray& send, const ndarray& recv,
                    reduce_op op = reduce_op::sum);
/// The same into a new array: send's first axis divided by size() (ShapeError when it does not
/// divide).
ndarray reduce_scatter(const Communicator& comm, const ndarray& send,
                       reduce_op op = reduce_op::sum);

/// Point to point: x goes to rank `peer`, which calls recv with the same dtype and size. Pair
/// sends and receives that must progress together (an exchange) inside nccl::group.
void send(const Communicator& comm, const ndarray& x, int peer);
void recv(const Communicator& comm, const ndarray& x, int peer);

namespace detail {
void group_begin();
void group_end();
void group_cancel() noexcept;
}  // namespace detail

/// Runs `body` as one NCCL group (ncclGroupStart ... ncclGroupEnd): the calls it makes on any
/// communicators are checked, then handed to NCCL together when it returns. If body throws,
/// none of its calls reach NCCL. Groups nest (the outermost one issues).
template <class F>
void group(F&& body) {
  detail::group_begin();
  try {
    std::forward<F>(body)();
  } catch (...) {
    detail::group_cancel();
    throw;
  }
  detail::group_end();
}

}  // namespace kiln::nccl
