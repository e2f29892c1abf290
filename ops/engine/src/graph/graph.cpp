// kiln::graph and kiln::graph_capture: a capture session per thread (the runtime's capture
// state, the pool's graph memory, the kernel recorder), and the instantiated graph it leaves.
#include "kiln/engine/graph.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/capture_record.hpp"
#include "graph/kernel_nodes.hpp"
#include "graph/programmatic_edges.hpp"
#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/detail/driver_api.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/graph_memory.hpp"
#include "kiln/runtime/memory.hpp"

namespace kiln {
namespace detail {

struct GraphState {
  int device = 0;
  Stream stream;  // captured on (kept alive)
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::shared_ptr<GraphMemory> memory;
  KernelNodes kernels;
  std::string no_updates;              // why update() cannot work, "" when it can
  std::size_t programmatic_edges = 0;  // edges made programmatic (programmatic_edges.hpp)
  // Replays and updates of one executable graph, one at a time; the last replay's stream is
  // where the graph's memory waits before going back to the pool.
  mutable std::mutex mutex;
  mutable Stream last_replay;
  mutable bool replayed = false;

  ~GraphState() {
    RelaxedCaptureMode relaxed;  // destroyed during another capture of this thread is fine
    if (exec && cudaGraphExecDestroy(exec) != cudaSuccess) cudaGetLastError();
    if (graph && cudaGraphDestroy(graph) != cudaSuccess) cudaGetLastError();
    if (memory) memory->release_graph(replayed ? &last_replay : nullptr);
  }
};

struct CaptureSession {
  Stream stream;
  int device = 0;
  std::shared_ptr<GraphMemory> memory;
  CaptureRecorder recorder;
  ThreadCapture thread;
  std::optional<ThreadCaptureScope> scope;
  std::optional<StreamGuard> current;
};

namespace {

// Pushes a node's parameter bytes to the executable graph.
void set_node_params(cudaGraphExec_t exec, const KernelNode& node, std::vector<std::byte>& bytes) {
  std::vector<void*> argv = param_pointers(node.params, bytes);
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = static_cast<CUfunction>(node.function);
  p.gridDimX = node.grid[0], p.gridDimY = node.grid[1], p.gridDimZ = node.grid[2];
  p.blockDimX = node.block[0], p.blockDimY = node.block[1], p.blockDimZ = node.block[2];
  p.sharedMemBytes = node.shared_bytes;
  p.kernelParams = argv.data();
  const CUresult r = driver().cuGraphExecKernelNodeSetParams(
      reinterpret_cast<CUgraphExec>(exec), static_cast<CUgraphNode>(node.node), &p);
  if (r != CUDA_SUCCESS) throw_driver_result(r, "cuGraphExecKernelNodeSetParams");
}

// Applies a plan to the executable graph, all of it or (on a failure) none of it.
void apply(GraphState& st, UpdatePlan& plan) {
  std::size_t done = 0;
  try {
    for (; done < plan.changes.size(); ++done) {
      auto& c = plan.changes[done];
      set_node_params(st.exec, st.kernels[c.node], c.bytes);
    }
  } catch (...) {
    for (std::size_t i = 0; i < done; ++i) {  // back to the recorded arguments
      const KernelNode& n = st.kernels[plan.changes[i].node];
      std::vector<std::byte> old = n.bytes;
      try {
        set_node_params(st.exec, n, old);
      } catch (...) {
      }
    }
    throw;
  }
  st.kernels.commit(plan);
}

std::string stream_name(const Stream& s) {
  return fmt::format("{} of device {}", static_cast<const void*>(s.handle()), s.device());
}

}  // namespace
}  // namespace detail

// ---- graph_capture ----

graph_capture::graph_capture(const Stream& s) { begin(s, s); }

graph_capture::graph_capture() {
  if (detail::thread_capture())
    throw CaptureError("kiln::capture inside another capture of this thread: end that one first");
  require_device();
  Stream home = current_stream();
  begin(Stream(/*non_blocking=*/true), std::move(home));
}

void graph_capture::begin(const Stream& s, Stream home) {
  // What the caller passed, before the device.
  if (s.is_null())
    throw CaptureError(
        "kiln::capture: the legacy null stream cannot be captured (CUDA refuses it); capture a "
        "kiln::Stream (kiln::Stream(true) does not wait on the null stream), or call "
        "kiln::capture(fn) to capture on a fresh stream");
  if (detail::thread_capture())
    throw CaptureError("kiln::capture inside another capture of this thread: end that one first");
  require_device();
  if (s.is_capturing())
    throw CaptureError(
        fmt::format("kiln::capture: stream {} is already being captured", detail::stream_name(s)));
  auto session = std::make_unique<detail::CaptureSession>();
  session->stream = s;
  session->device = s.device();
  session->memory = std::make_shared<GraphMemory>(s.device(), std::move(home));
  MemoryPool& pool = get_memory_pool(s.device());
  pool.begin_capture(s.handle(), session->memory);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  cudaError_t e = cudaStreamBeginCapture(s.handle(), cudaStreamCaptureModeThreadLocal);
  if (e == cudaSuccess) e = cudaStreamGetCaptureInfo(s.handle(), &status, &id);
  if (e != cudaSuccess) {
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(s.handle(), &g) == cudaSuccess && g) cudaGraphDestroy(g);
    cudaGetLastError();
    pool.end_capture(s.handle());
    session->memory->release_graph(nullptr);
    detail::throw_cuda_error(e, "cudaStreamBeginCapture");
  }
  session->thread = {s.handle(), s.device(), id, &session->recorder};
  session->scope.emplace(session->thread);
  session->current.emplace(s);
  session_ = std::move(session);
}

graph_capture::~graph_capture() {
  if (!session_) return;
  // Abandoned (an exception in the captured code): end the capture, drop what it recorded.
  auto& s = *session_;
  s.current.reset();
  s.scope.reset();
  cudaGraph_t g = nullptr;
  if (cudaStreamEndCapture(s.stream.handle(), &g) != cudaSuccess) cudaGetLastError();
  if (g) cudaGraphDestroy(g);
  try {
    get_memory_pool(s.device).end_capture(s.stream.handle());
  } catch (...) {
  }
  s.memory->release_graph(nullptr);
}

const Stream& graph_capture::stream() const {
  if (!session_) throw ValueError("graph_capture::stream(): the capture has ended");
  return session_->stream;
}

graph graph_capture::end() {
  if (!session_) throw ValueError("graph_capture::end() was already called");
  std::unique_ptr<detail::CaptureSession> s = std::move(session_);  // over, whatever happens
  s->current.reset();
  s->scope.reset();
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(s->stream.handle(), &g);
  get_memory_pool(s->device).end_capture(s->stream.handle());
  auto st = std::make_shared<detail::GraphState>();
  st->device = s->device;
  st->stream = s->stream;
  st->memory = s->memory;
  st->graph = g;
  if (e != cudaSuccess || !g) {
    cudaGetLastError();
    throw CaptureError(fmt::format(
        "kiln::capture on stream {} was invalidated ({}: {}): a call during it could not be "
        "captured (a CUDA call kiln does not make itself, or work on the legacy null stream by "
        "another thread while a blocking stream captures); nothing was recorded and the stream "
        "is usable again",
        detail::stream_name(s->stream), cudaGetErrorName(e), cudaGetErrorString(e)));
  }
  if (detail::programmatic_edges_enabled())
    st->programmatic_edges = detail::add_programmatic_edges(g, s->recorder.nodes);
  // A graph allocation some library made and did not free (cuBLAS's workspace may be one) is
  // freed by the next replay instead of failing it.
  KILN_CUDA(cudaGraphInstantiateWithFlags(&st->exec, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  st->kernels = std::move(s->recorder.nodes);
  st->no_updates = std::move(s->recorder.unavailable);
  graph out;
  out.state_ = std::move(st);
  return out;
}

// ---- graph ----

const detail::GraphState& graph::state(const char* op) const {
  if (!state_)
    throw ValueError(fmt::format("graph::{}: the graph is empty (default-constructed)", op));
  return *state_;
}
detail::GraphState& graph::state(const char* op) {
  if (!state_)
    throw ValueError(fmt::format("graph::{}: the graph is empty (default-constructed)", op));
  return *state_;
}

void graph::replay(const Stream& s) const {
  const detail::GraphState& st = state("replay");
  if (s.device() != st.device)
    throw ValueError(
        fmt::format("graph::replay: the graph belongs to device {}, the stream to "
                    "device {}",
                    st.device, s.device()));
  detail::refuse_during_capture("graph::replay()",
                                "a replay inside a capture would nest one graph in another");
  std::lock_guard lock(st.mutex);
  KILN_CUDA(cudaGraphLaunch(st.exec, s.handle()));
  if (!st.replayed || !(st.last_replay == s)) {
    st.last_replay = s;
    st.replayed = true;
  }
}

std::size_t graph::update(const ndarray& from, const ndarray& to) {
  const std::pair<ndarray, ndarray> p[] = {{from, to}};
  return update(std::span<const std::pair<ndarray, ndarray>>(p));
}

std::size_t graph::update(std::initializer_list<std::pair<ndarray, ndarray>> pairs) {
  return update(std::span<const std::pair<ndarray, ndarray>>(pairs.begin(), pairs.size()));
}

std::size_t graph::update(std::span<const std::pair<ndarray, ndarray>> pairs) {
  detail::GraphState& st = state("update");
  if (!st.no_updates.empty()) throw ValueError("graph::update: " + st.no_updates);
  for (const auto& [from, to] : pairs)
    if (to.defined() && to.size() > 0 && to.device() != st.device)
      throw ValueError(
          fmt::format("graph::update: the new array is on device {}, the graph on "
                      "device {}",
                      to.device(), st.device));
  std::lock_guard lock(st.mutex);
  detail::UpdatePlan plan = st.kernels.plan_rebind(pairs);
  const std::size_t n = plan.arguments;
  detail::apply(st, plan);
  return n;
}

std::size_t graph::update_scalar(const scalar& from, const scalar& to) {
  detail::GraphState& st = state("update_scalar");
  if (!st.no_updates.empty()) throw ValueError("graph::update_scalar: " + st.no_updates);
  std::lock_guard lock(st.mutex);
  detail::UpdatePlan plan = st.kernels.plan_scalar(from, to);
  const std::size_t n = plan.arguments;
  detail::apply(st, plan);
  return n;
}

std::size_t graph::node_count() const {
  const detail::GraphState& st = state("node_count");
  std::size_t n = 0;
  KILN_CUDA(cudaGraphGetNodes(st.graph, nullptr, &n));
  return n;
}

std::size_t graph::kernel_count() const { return state("kernel_count").kernels.size(); }

std::size_t graph::memory_bytes() const { return state("memory_bytes").memory->bytes(); }

std::size_t graph::programmatic_edge_count() const {
  return state("programmatic_edge_count").programmatic_edges;
}

int graph::device() const { return state("device").device; }

const Stream& graph::capture_stream() const { return state("capture_stream").stream; }

}  // namespace kiln
