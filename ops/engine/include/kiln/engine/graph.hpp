#pragma once
// CUDA graphs of kiln work: capture a sequence of kiln calls once, then replay it on any
// stream of the same device for a fraction of a launch per kernel.
//
//   kiln::Stream s(true);                                   // a non-blocking stream
//   kiln::ElementwiseKernel axpy("float32 a, float32 x", "float32 y", "y = a * x + y", "axpy");
//   kiln::ndarray total;
//   kiln::graph g = kiln::capture(s, [&] {                  // recorded, not run
//     axpy(0.5f, x, y);                                     // y and x made before the capture
//     y *= 2;
//     total = kiln::sum(y * y);                             // a 0-d array born in the capture
//   });
//   for (int step = 0; step < 1000; ++step) g.replay(s);  // three kernels per replay
//   float t = total.get<float>()[0];                      // on s, after the last replay
//   g.update(x, x2);                                      // later replays read x2 instead of x
//   g.update_scalar(0.5f, 0.25f);                         // ... and use a = 0.25
//
// Capture. kiln::capture(stream, fn) (or a kiln::graph_capture scope) makes `stream` this
// thread's current stream, begins CUDA stream capture in thread-local mode, runs fn, ends the
// capture and instantiates the graph, once. What kiln runs on that stream is recorded:
// ElementwiseKernel, ReductionKernel, RawKernel and RawModule launches, expressions, the
// reductions (sum, mean, ..., linalg::norm) and fused reductions, creation (empty, zeros,
// full, arange, ...), copies, linalg::matmul / dot (cuBLAS) and sort / argsort of up to 300
// rows (CUB). A kernel first seen during the capture is compiled (or loaded from the disk
// cache) then; replays never compile. kiln::capture(fn) captures on a fresh non-blocking
// stream instead, so that other threads' work on the legacy null stream cannot break it.
//
// Refused during a capture, with a CaptureError naming the call, raised before the device is
// touched (the capture goes on, the stream stays usable): whatever waits for the device or
// moves data through the host (ndarray::get / copy_to_host, asarray / copy_from_host, Stream
// and Event synchronize / query, synchronize_device, MemoryPool::free_all_blocks, copies
// between devices, profiler::benchmark), kernels on the legacy null stream, the cuSOLVER-based
// linalg functions (svd, qr, eigh, solve, inv, det: each reads cuSOLVER's status on the host),
// random numbers (cuRAND resets its generator for each call and waits for the device), sort /
// argsort of more than 300 rows (CUB's segmented sort reads segment counts on the host),
// replaying a graph, a capture on the legacy null stream or inside another capture. Should a
// CUDA call invalidate the capture anyway (another library's, or another thread's work on the
// null stream while a blocking stream captures), the capture's end throws CaptureError and the
// stream is usable again.
//
// Memory. An array created inside the capture (an output kiln allocates, a temporary, a
// reduction's workspace) gets real device memory when it is created, never an allocation the
// graph would replay, and the graph holds that memory until the graph is destroyed: every
// replay reads and writes the same addresses. An array kept from the capture (`total` above)
// is therefore valid before, during and after the graph's life; it holds the result of the
// last replay once that replay finished (and undefined values before the first replay). When
// both it and the graph are gone, its memory goes back to the pool, ordered after the graph's
// last replay. Blocks freed on the capturing stream during the capture are held by the graph
// too. Arrays made before the capture and used by it (inputs, in-place targets) are not: keep
// them alive while you replay, as with CuPy's and PyTorch's graphs.
//
// Replay. replay(s) launches the graph on any stream of its device (by default the current
// stream). Several threads may replay one graph on their own streams: CUDA runs one replay of
// a graph at a time, in launch order. Order the work that produces the inputs before a replay
// yourself (replay on the stream that produced them, or wait for it). Within a replay, a kiln
// kernel that follows another kernel is launched as soon as that kernel's blocks have all
// started and waits on the device for its results (a programmatic edge; every kernel kiln
// generates begins with that wait), so consecutive small kernels do not pay a full launch
// each; KILN_GRAPH_PROGRAMMATIC_EDGES=0 gives plain edges.
//
// Updates, without a new capture. The arguments of the captured kiln kernels (ElementwiseKernel,
// ReductionKernel, expressions, fused reductions, RawKernel) can be changed through kernel-node
// parameter updates, which apply to later replays (one already queued keeps its arguments):
//   - update(from, to): every argument pointing at an element of `from` now points at the same
//     element of `to`, which must have the same shape, dtype and strides, be on the graph's
//     device and be aligned at least as `from` (kiln picked its vector loads for `from`);
//     update({{a, b}, {b, a}}) swaps two arrays (the pairs apply together).
//   - update_scalar(from, to): every scalar argument equal to `from` converted to the
//     argument's dtype (as the call converted it) becomes `to` converted the same way. Scalars
//     are matched by value, so change values that nothing else in the capture uses (`x * 2` and
//     `y + 2` both hold a 2). A RawKernel scalar matches when its C++ type is a kiln scalar
//     type (float, double, int32_t, size_t, ...).
// Both throw ValueError, changing nothing, when something matches nothing. Kernels of the
// libraries (cuBLAS, CUB) keep their arguments: capture again to change them.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>

#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/scalar.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln {

namespace detail {
struct GraphState;
struct CaptureSession;
}  // namespace detail

/// An instantiated CUDA graph of kiln work. A handle: copies share the graph.
class graph {
 public:
  /// An empty handle (no graph); replay() and update() raise ValueError.
  graph() = default;
  explicit operator bool() const noexcept { return state_ != nullptr; }

  /// Launches the graph on `s`, a stream of the graph's device.
  void replay(const Stream& s = current_stream()) const;

  /// Rebinds captured kiln kernel arguments from `from` to `to` (see above); returns how many
  /// arguments changed.
  std::size_t update(const ndarray& from, const ndarray& to);
  /// Several rebindings at once, each pair against the arguments as they were before the call.
  std::size_t update(std::initializer_list<std::pair<ndarray, ndarray>> pairs);
  std::size_t update(std::span<const std::pair<ndarray, ndarray>> pairs);
  /// Replaces captured kiln kernel scalar arguments equal to `from` by `to`; returns how many.
  std::size_t update_scalar(const scalar& from, const scalar& to);

  /// Nodes of the graph (kernels, memsets, copies, ...).
  std::size_t node_count() const;
  /// Captured kiln kernels, whose arguments update() and update_scalar() can change.
  std::size_t kernel_count() const;
  /// Device memory the graph holds (arrays and temporaries created during the capture).
  std::size_t memory_bytes() const;
  /// Edges on which a kiln kernel is launched as soon as the kernel before it has all its
  /// blocks running, and waits on the device for its results (see "Replay" above).
  std::size_t programmatic_edge_count() const;
  int device() const;
  /// The stream the graph was captured on.
  const Stream& capture_stream() const;

 private:
  friend class graph_capture;
  const detail::GraphState& state(const char* op) const;
  detail::GraphState& state(const char* op);
  std::shared_ptr<detail::GraphState> state_;
};

/// A capture in progress, for a scope: begins on construction, end() ends it and returns the
/// instantiated graph. Destroyed without end() (an exception in the captured code), it ends
/// the capture and drops what was recorded. Lives on one thread.
class graph_capture {
 public:
  /// Captures `s` (not the legacy null stream), which becomes this thread's current stream.
  explicit graph_capture(const Stream& s);
  /// Captures a fresh non-blocking stream of the current device; arrays born in the capture
  /// belong to the stream that was current here (where they go back to the pool).
  graph_capture();
  ~graph_capture();
  graph_capture(const graph_capture&) = delete;
  graph_capture& operator=(const graph_capture&) = delete;

  /// Ends the capture and instantiates the graph. Throws CaptureError when CUDA invalidated
  /// the capture, ValueError when called twice.
  graph end();
  /// The stream being captured.
  const Stream& stream() const;

 private:
  void begin(const Stream& s, Stream home);
  std::unique_ptr<detail::CaptureSession> session_;
};

/// Captures what fn runs on `s` into a graph (see the top of this file).
template <class F>
graph capture(const Stream& s, F&& fn) {
  graph_capture c(s);
  std::forward<F>(fn)();
  return c.end();
}

/// Captures what fn runs into a graph, on a fresh non-blocking stream of the current device.
template <class F>
graph capture(F&& fn) {
  graph_capture c;
  std::forward<F>(fn)();
  return c.end();
}

}  // namespace kiln
