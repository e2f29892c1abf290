// The collectives: check (nccl_plan), stage non-contiguous arrays, hand the call to NCCL now
// or at the end of the enclosing nccl::group, wait (bounded) for NCCL to take it, note it for
// the watchdog, copy staged outputs back.
#include <fmt/format.h>

#include <algorithm>

#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/library/copying.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/stream.hpp"
#include "nccl_member.hpp"
#include "nccl_plan.hpp"

namespace kiln::nccl {
namespace detail {
namespace {

static_assert(int(WireType::int8) == ncclInt8 && int(WireType::uint8) == ncclUint8 &&
              int(WireType::int32) == ncclInt32 && int(WireType::uint32) == ncclUint32 &&
              int(WireType::int64) == ncclInt64 && int(WireType::uint64) == ncclUint64 &&
              int(WireType::float16) == ncclFloat16 && int(WireType::float32) == ncclFloat32 &&
              int(WireType::float64) == ncclFloat64 && int(WireType::bfloat16) == ncclBfloat16);
static_assert(int(reduce_op::sum) == ncclSum && int(reduce_op::prod) == ncclProd &&
              int(reduce_op::max) == ncclMax && int(reduce_op::min) == ncclMin &&
              int(reduce_op::avg) == ncclAvg);

// One call, ready for NCCL: the buffers it reads and writes (the user's arrays, or staged
// copies, kept alive here until the call is enqueued) and where a staged output goes after.
struct Pending {
  Member* m = nullptr;
  Plan plan;
  ndarray send, recv;
  ndarray copy_back_to;
  cudaStream_t stream = nullptr;
};

struct GroupState {
  int depth = 0;
  std::vector<std::size_t> marks;  // ops.size() at each open group_begin
  std::vector<Pending> ops;
};

GroupState& group_state() {
  thread_local GroupState g;
  return g;
}

CommFacts facts(const Member& m) { return {m.rank, m.size, m.device}; }

// Runs under a DeviceGuard for m's device: temporaries and copies go on its current stream.
Pending prepare(Member& m, const Plan& p, const ndarray& send, const ndarray& recv) {
  Pending op;
  op.m = &m;
  op.plan = p;
  op.stream = current_stream_handle(m.device);
  if (p.in_place && p.stage_send) {
    op.send = op.recv = kiln::copy(send);
    op.copy_back_to = recv;
    return op;
  }
  if (p.uses_send) op.send = p.stage_send ? kiln::copy(send) : send;
  if (p.uses_recv) {
    if (p.stage_recv) {
      op.recv = empty(recv.shape(), recv.dtype());
      op.copy_back_to = recv;
    } else {
      op.recv = recv;
    }
  }
  return op;
}

ncclResult_t issue(const Api& a, const Pending& op) {
  const Plan& p = op.plan;
  const void* sb = p.uses_send ? op.send.data() : nullptr;
  void* rb = p.uses_recv ? op.recv.data() : nullptr;
  const auto type = static_cast<ncclDataType_t>(p.wire.type);
  const auto red = static_cast<ncclRedOp_t>(p.op);
  ncclComm_t c = op.m->comm;
  switch (p.call) {
    case Call::all_reduce:
      return a.ncclAllReduce(sb, rb, p.count, type, red, c, op.stream);
    case Call::broadcast:
      return a.ncclBroadcast(sb ? sb : rb, rb, p.count, type, p.peer, c, op.stream);
    case Call::reduce:
      return a.ncclReduce(sb, rb, p.count, type, red, p.peer, c, op.stream);
    case Call::all_gather:
      return a.ncclAllGather(sb, rb, p.count, type, c, op.stream);
    case Call::reduce_scatter:
      return a.ncclReduceScatter(sb, rb, p.count, type, red, c, op.stream);
    case Call::send:
      return a.ncclSend(sb, p.count, type, p.peer, c, op.stream);
    case Call::recv:
      return a.ncclRecv(rb, p.count, type, p.peer, c, op.stream);
  }
  return ncclInvalidArgument;
}

// Staged outputs back into the user's arrays, after the call in stream order.
void finish(const Pending& op) {
  if (!op.copy_back_to.defined() || op.recv.size() == 0) return;
  // On the call's own stream: a group may close after the caller's StreamGuard did.
  StreamGuard on(Stream::borrow(op.stream, op.m->device));
  builtin::copy_kernel()(op.recv, op.copy_back_to);
}

void run_now(Pending& op) {
  Member& m = *op.m;
  const char* name = call_name(op.plan.call);
  {
    std::lock_guard cl(m.call_mutex);
    if (m.comm == nullptr) m.rethrow_failure();
    const ncclResult_t r = issue(api(), op);
    if (r != ncclSuccess && r != ncclInProgress) throw_nccl(r, name, m.comm);
    if (r == ncclInProgress) {
      Member* one[] = {&m};
      wait_ready(one, name);
    }
  }
  finish(op);
  // After the copy back (submit's DeviceGuard is still on m's device): synchronize() covers a
  // staged output too.
  note_enqueued(m, op.stream, name);
}

void run_group(std::vector<Pending>& ops) {
  if (ops.empty()) return;
  std::vector<Member*> members;
  for (const auto& op : ops) members.push_back(op.m);
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  for (Member* m : members)
    if (m->blocking != members.front()->blocking)
      throw ValueError(
          "nccl::group: the group mixes blocking and nonblocking communicators "
          "(CommunicatorOptions::blocking); NCCL does not allow that");
  std::vector<std::unique_lock<std::mutex>> locks;  // in address order: no lock-order cycles
  for (Member* m : members) locks.emplace_back(m->call_mutex);
  for (Member* m : members)
    if (m->comm == nullptr) m->rethrow_failure();
  const Api& a = api();
  check_nccl(a.ncclGroupStart(), "ncclGroupStart");
  ncclResult_t first = ncclSuccess;
  const Pending* failed = nullptr;
  for (const auto& op : ops) {
    DeviceGuard on(op.m->device);  // a null stream handle means this device's default stream
    const ncclResult_t r = issue(a, op);
    if (r != ncclSuccess && r != ncclInProgress && first == ncclSuccess) {
      first = r;
      failed = &op;
    }
  }
  const ncclResult_t end = a.ncclGroupEnd();
  if (failed) throw_nccl(first, call_name(failed->plan.call), failed->m->comm);
  if (end != ncclSuccess && end != ncclInProgress) throw_nccl(end, "ncclGroupEnd", nullptr);
  wait_ready(members, "nccl::group");
  locks.clear();
  for (const auto& op : ops) finish(op);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const bool repeat = i > 0 && ops[i - 1].m == ops[i].m && ops[i - 1].stream == ops[i].stream;
    if (repeat) continue;
    DeviceGuard on(ops[i].m->device);
    note_enqueued(*ops[i].m, ops[i].stream, call_name(ops[i].plan.call));
  }
}

// Checked (plan) and staged: to NCCL now, or at the end of the enclosing group.
void submit(Member& m, const Plan& p, const ndarray& send, const ndarray& recv) {
  DeviceGuard on(m.device);
  Pending op = prepare(m, p, send, recv);
  GroupState& g = group_state();
  if (g.depth > 0)
    g.ops.push_back(std::move(op));
  else
    run_now(op);
}

Member& usable(const Communicator& comm) {
  Member& m = comm.member();
  m.check_usable();
  return m;
}

ndarray empty_on(const Member& m, const Shape& shape, dtype t) {
  DeviceGuard on(m.device);
  return empty(shape, t);
}

}  // namespace

void group_begin() {
  GroupState& g = group_state();
  g.marks.push_back(g.ops.size());
  ++g.depth;
}

void group_cancel() noexcept {
  GroupState& g = group_state();
  if (g.depth == 0) return;
  g.ops.erase(g.ops.begin() + std::ptrdiff_t(g.marks.back()), g.ops.end());
  g.marks.pop_back();
  --g.depth;
}

void group_end() {
  GroupState& g = group_state();
  if (g.depth == 0) throw ValueError("nccl::group: group_end without group_begin");
  g.marks.pop_back();
  if (--g.depth > 0) return;
  std::vector<Pending> ops = std::move(g.ops);
  g.ops.clear();
  run_group(ops);
}

}  // namespace detail

using detail::Member;

void all_reduce(const Communicator& comm, const ndarray& send, const ndarray& recv, reduce_op op) {
  Member& m = detail::usable(comm);
  detail::submit(m, detail::plan_all_reduce(detail::facts(m), send, recv, op), send, recv);
}

ndarray all_reduce(const Communicator& comm, const ndarray& send, reduce_op op) {
  Member& m = detail::usable(comm);
  detail::check_input(detail::facts(m), detail::Call::all_reduce, send, op);
  ndarray out = detail::empty_on(m, send.shape(), send.dtype());
  detail::submit(m, detail::plan_all_reduce(detail::facts(m), send, out, op), send, out);
  return out;
}

void broadcast(const Communicator& comm, const ndarray& send, const ndarray& recv, int root) {
  Member& m = detail::usable(comm);
  detail::submit(m, detail::plan_broadcast(detail::facts(m), send, recv, root), send, recv);
}

void broadcast(const Communicator& comm, const ndarray& x, int root) {
  broadcast(comm, x, x, root);
}

void reduce(const Communicator& comm, const ndarray& send, const ndarray& recv, int root,
            reduce_op op) {
  Member& m = detail::usable(comm);
  detail::submit(m, detail::plan_reduce(detail::facts(m), send, recv, root, op), send, recv);
}

void all_gather(const Communicator& comm, const ndarray& send, const ndarray& recv) {
  Member& m = detail::usable(comm);
  detail::submit(m, detail::plan_all_gather(detail::facts(m), send, recv), send, recv);
}

ndarray all_gather(const Communicator& comm, const ndarray& send) {
  Member& m = detail::usable(comm);
  detail::check_input(detail::facts(m), detail::Call::all_gather, send, std::nullopt);
  Shape shape{std::int64_t(m.size)};
  for (auto d : send.shape()) shape.push_back(d);
  ndarray out = detail::empty_on(m, shape, send.dtype());
  detail::submit(m, detail::plan_all_gather(detail::facts(m), send, out), send, out);
  return out;
}

void reduce_scatter(const Communicator& comm, const ndarray& send, const ndarray& recv,
                    reduce_op op) {
  Member& m = detail::usable(comm);
  detail::submit(m, detail::plan_reduce_scatter(detail::facts(m), send, recv, op), send, recv);
}

ndarray reduce_scatter(const Communicator& comm, const ndarray& send, reduce_op op) {
  Member& m = detail::usable(comm);
  detail::check_input(detail::facts(m), detail::Call::reduce_scatter, send, op);
  if (send.ndim() == 0 || send.shape()[0] % m.size != 0)
    throw ShapeError(
        fmt::format("reduce_scatter: send's first axis splits into one block per "
                    "rank; shape {} does not split into {}",
                    send.shape().str(), m.size));
  Shape shape = send.shape();
  shape[0] /= m.size;
  ndarray out = detail::empty_on(m, shape, send.dtype());
  detail::submit(m, detail::plan_reduce_scatter(detail::facts(m), send, out, op), send, out);
  return out;
}

void send(const Communicator& comm, const ndarray& x, int peer) {
  Member& m = detail::usable(comm);
  detail::submit(m, detail::plan_point_to_point(detail::facts(m), detail::Call::send, x, peer), x,
                 ndarray{});
}

void recv(const Communicator& comm, const ndarray& x, int peer) {
  Member& m = detail::usable(comm);
  detail::submit(m, detail::plan_point_to_point(detail::facts(m), detail::Call::recv, x, peer),
                 ndarray{}, x);
}

}  // namespace kiln::nccl
