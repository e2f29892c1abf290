// The checks in front of every collective: pure functions of the communicator's facts and the
// arrays' descriptions, so each one has a CPU test (tests/ops/collectives_test.cpp).
#include "nccl_plan.hpp"

#include <fmt/format.h>

#include "kiln/runtime/error.hpp"

namespace kiln::nccl::detail {
namespace {

const char* op_name(reduce_op op) {
  switch (op) {
    case reduce_op::sum:
      return "sum";
    case reduce_op::prod:
      return "prod";
    case reduce_op::max:
      return "max";
    case reduce_op::min:
      return "min";
    case reduce_op::avg:
      return "avg";
  }
  return "?";
}

bool reduces(Call c) {
  return c == Call::all_reduce || c == Call::reduce || c == Call::reduce_scatter;
}

void check_op(Call call, reduce_op op) {
  const int v = static_cast<int>(op);
  if (v < 0 || v > static_cast<int>(reduce_op::avg))
    throw ValueError(
        fmt::format("{}: reduce_op {} is not one of sum, prod, max, min, avg", call_name(call), v));
}

// A used array: a real handle, on the communicator's device.
void check_array(const CommFacts& c, Call call, const char* role, const ndarray& a) {
  if (!a.defined())
    throw ValueError(
        fmt::format("{}: {} is an empty ndarray handle; this rank needs a real array "
                    "there",
                    call_name(call), role));
  if (a.buffer() && a.device() != c.device)
    throw ValueError(
        fmt::format("{}: {} is on device {}, but the communicator (rank {} of {}) is "
                    "on device {}; move it with to_device({})",
                    call_name(call), role, a.device(), c.rank, c.size, c.device, c.device));
}

void check_rank(const CommFacts& c, Call call, const char* what, int r) {
  if (r < 0 || r >= c.size)
    throw ValueError(fmt::format("{}: {} {} is not a rank of this communicator (0 to {})",
                                 call_name(call), what, r, c.size - 1));
}

void check_same_dtype(Call call, const ndarray& send, const ndarray& recv) {
  if (send.dtype() != recv.dtype())
    throw TypeError(
        fmt::format("{}: send is {} but recv is {}; NCCL moves one dtype (convert "
                    "with astype first)",
                    call_name(call), send.dtype().name(), recv.dtype().name()));
}

// Absolute byte range [lo, hi) the elements of `a` occupy (empty for an empty array).
std::pair<std::uintptr_t, std::uintptr_t> span_of(const ndarray& a) {
  if (a.size() == 0 || a.data() == nullptr) return {0, 0};
  const auto base = reinterpret_cast<std::uintptr_t>(a.data());
  const auto [first, last] = a.byte_extent();
  return {base + std::uintptr_t(first), base + std::uintptr_t(last)};
}

bool overlap(const ndarray& a, const ndarray& b) {
  const auto [a0, a1] = span_of(a);
  const auto [b0, b1] = span_of(b);
  return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}

bool same_view(const ndarray& a, const ndarray& b) {
  return a.data() == b.data() && a.dtype() == b.dtype() && a.shape() == b.shape() &&
         a.strides() == b.strides();
}

// send and recv of one call: identical (in place, staged once if not contiguous) or disjoint.
void resolve_pair(Plan& p, const ndarray& send, const ndarray& recv) {
  p.stage_send = !send.is_c_contiguous();
  p.stage_recv = !recv.is_c_contiguous();
  // NCCL's rule for contiguous buffers (the same pointer), or the same view of any layout.
  const bool same_memory =
      !p.stage_send && !p.stage_recv && send.data() == recv.data() && send.size() == recv.size();
  if ((same_memory || same_view(send, recv)) && send.size() > 0) {
    p.in_place = true;
    return;
  }
  if (overlap(send, recv))
    throw ValueError(
        fmt::format("{}: recv overlaps send without being the same array; pass the "
                    "same array for in place, or disjoint arrays",
                    call_name(p.call)));
}

std::size_t elements(const ndarray& a) { return static_cast<std::size_t>(a.size()); }

}  // namespace

const char* call_name(Call c) noexcept {
  switch (c) {
    case Call::all_reduce:
      return "all_reduce";
    case Call::broadcast:
      return "broadcast";
    case Call::reduce:
      return "reduce";
    case Call::all_gather:
      return "all_gather";
    case Call::reduce_scatter:
      return "reduce_scatter";
    case Call::send:
      return "send";
    case Call::recv:
      return "recv";
  }
  return "?";
}

Wire wire_type(dtype t, Call call, std::optional<reduce_op> op) {
  const bool reducing = reduces(call);
  auto refuse = [&](const char* why) -> Wire {
    throw TypeError(fmt::format("{} with {} on {}: {}", call_name(call), op ? op_name(*op) : "?",
                                t.name(), why));
  };
  switch (t.id()) {
    case dtype_id::bool_:
      if (reducing && *op != reduce_op::max && *op != reduce_op::min)
        return refuse(
            "NCCL reduces bool only with max (any) and min (all); to count, cast to "
            "an integer dtype");
      return {WireType::uint8, 1};
    case dtype_id::int16:
    case dtype_id::uint16:
      if (reducing)
        return refuse(
            "NCCL has no 16-bit integer type, so int16 and uint16 can be broadcast, "
            "gathered and sent but not reduced; cast to int32");
      return {t.id() == dtype_id::int16 ? WireType::int8 : WireType::uint8, 2};
    case dtype_id::complex64:
    case dtype_id::complex128:
      if (reducing && *op != reduce_op::sum && *op != reduce_op::avg)
        return refuse(
            "complex arrays reduce with sum and avg only (as pairs of floats); prod, "
            "max and min are not elementwise on the pairs");
      return {t.id() == dtype_id::complex64 ? WireType::float32 : WireType::float64, 2};
    default:
      break;
  }
  if (reducing && *op == reduce_op::avg && t.is_integer())
    return refuse(
        "avg needs a floating or complex dtype; for integers reduce with sum and "
        "divide");
  switch (t.id()) {
    case dtype_id::int8:
      return {WireType::int8, 1};
    case dtype_id::uint8:
      return {WireType::uint8, 1};
    case dtype_id::int32:
      return {WireType::int32, 1};
    case dtype_id::uint32:
      return {WireType::uint32, 1};
    case dtype_id::int64:
      return {WireType::int64, 1};
    case dtype_id::uint64:
      return {WireType::uint64, 1};
    case dtype_id::float16:
      return {WireType::float16, 1};
    case dtype_id::bfloat16:
      return {WireType::bfloat16, 1};
    case dtype_id::float32:
      return {WireType::float32, 1};
    case dtype_id::float64:
      return {WireType::float64, 1};
    default:
      return refuse("not a dtype NCCL can move");
  }
}

Wire check_input(const CommFacts& c, Call call, const ndarray& send, std::optional<reduce_op> op) {
  if (op) check_op(call, *op);
  check_array(c, call, "send", send);
  return wire_type(send.dtype(), call, op);
}

Plan plan_all_reduce(const CommFacts& c, const ndarray& send, const ndarray& recv, reduce_op op) {
  Plan p;
  p.call = Call::all_reduce;
  check_op(p.call, op);
  check_array(c, p.call, "send", send);
  check_array(c, p.call, "recv", recv);
  check_same_dtype(p.call, send, recv);
  p.wire = wire_type(send.dtype(), p.call, op);
  if (send.size() != recv.size())
    throw ShapeError(
        fmt::format("all_reduce: send has {} elements (shape {}) but recv has {} "
                    "(shape {}); they must match",
                    send.size(), send.shape().str(), recv.size(), recv.shape().str()));
  p.count = elements(send) * p.wire.per_element;
  p.op = static_cast<int>(op);
  p.uses_send = p.uses_recv = true;
  resolve_pair(p, send, recv);
  return p;
}

Plan plan_broadcast(const CommFacts& c, const ndarray& send, const ndarray& recv, int root) {
  Plan p;
  p.call = Call::broadcast;
  check_rank(c, p.call, "root", root);
  check_array(c, p.call, "recv", recv);
  p.peer = root;
  p.uses_recv = true;
  p.uses_send = c.rank == root;
  if (p.uses_send) {
    check_array(c, p.call, "send (on the root)", send);
    check_same_dtype(p.call, send, recv);
    if (send.size() != recv.size())
      throw ShapeError(
          fmt::format("broadcast: the root's send has {} elements (shape {}) but "
                      "recv has {} (shape {}); they must match",
                      send.size(), send.shape().str(), recv.size(), recv.shape().str()));
  }
  p.wire = wire_type(recv.dtype(), p.call, std::nullopt);
  p.count = elements(recv) * p.wire.per_element;
  if (p.uses_send)
    resolve_pair(p, send, recv);
  else
    p.stage_recv = !recv.is_c_contiguous();
  return p;
}

Plan plan_reduce(const CommFacts& c, const ndarray& send, const ndarray& recv, int root,
                 reduce_op op) {
  Plan p;
  p.call = Call::reduce;
  check_op(p.call, op);
  check_rank(c, p.call, "root", root);
  check_array(c, p.call, "send", send);
  p.peer = root;
  p.op = static_cast<int>(op);
  p.uses_send = true;
  p.uses_recv = c.rank == root;
  p.wire = wire_type(send.dtype(), p.call, op);
  p.count = elements(send) * p.wire.per_element;
  if (p.uses_recv) {
    check_array(c, p.call, "recv (on the root)", recv);
    check_same_dtype(p.call, send, recv);
    if (send.size() != recv.size())
      throw ShapeError(
          fmt::format("reduce: send has {} elements (shape {}) but the root's recv "
                      "has {} (shape {}); they must match",
                      send.size(), send.shape().str(), recv.size(), recv.shape().str()));
    resolve_pair(p, send, recv);
  } else {
    p.stage_send = !send.is_c_contiguous();
  }
  return p;
}

Plan plan_all_gather(const CommFacts& c, const ndarray& send, const ndarray& recv) {
  Plan p;
  p.call = Call::all_gather;
  check_array(c, p.call, "send", send);
  check_array(c, p.call, "recv", recv);
  check_same_dtype(p.call, send, recv);
  p.wire = wire_type(send.dtype(), p.call, std::nullopt);
  if (recv.size() != send.size() * c.size)
    throw ShapeError(
        fmt::format("all_gather: recv needs {} x {} = {} elements (one send of every "
                    "rank); it has {} (shape {})",
                    c.size, send.size(), send.size() * c.size, recv.size(), recv.shape().str()));
  p.count = elements(send) * p.wire.per_element;
  p.uses_send = p.uses_recv = true;
  p.stage_send = !send.is_c_contiguous();
  p.stage_recv = !recv.is_c_contiguous();
  if (!p.stage_send && !p.stage_recv && send.size() > 0 &&
      static_cast<const char*>(send.data()) ==
          static_cast<const char*>(recv.data()) + std::size_t(c.rank) * send.nbytes()) {
    p.in_place = true;  // send is this rank's block of recv: NCCL's in-place all_gather
  } else if (overlap(send, recv)) {
    throw ValueError(
        fmt::format("all_gather: send overlaps recv without being this rank's block "
                    "of it (elements {} to {}, both contiguous), NCCL's in-place form",
                    c.rank * send.size(), (c.rank + 1) * send.size()));
  }
  return p;
}

Plan plan_reduce_scatter(const CommFacts& c, const ndarray& send, const ndarray& recv,
                         reduce_op op) {
  Plan p;
  p.call = Call::reduce_scatter;
  check_op(p.call, op);
  check_array(c, p.call, "send", send);
  check_array(c, p.call, "recv", recv);
  check_same_dtype(p.call, send, recv);
  p.wire = wire_type(send.dtype(), p.call, op);
  if (send.size() != recv.size() * c.size)
    throw ShapeError(
        fmt::format("reduce_scatter: send needs {} x {} = {} elements (one block of "
                    "recv's size per rank); it has {} (shape {})",
                    c.size, recv.size(), recv.size() * c.size, send.size(), send.shape().str()));
  p.count = elements(recv) * p.wire.per_element;
  p.op = static_cast<int>(op);
  p.uses_send = p.uses_recv = true;
  p.stage_send = !send.is_c_contiguous();
  p.stage_recv = !recv.is_c_contiguous();
  if (!p.stage_send && !p.stage_recv && recv.size() > 0 &&
      static_cast<const char*>(recv.data()) ==
          static_cast<const char*>(send.data()) + std::size_t(c.rank) * recv.nbytes()) {
    p.in_place = true;  // recv is this rank's block of send: NCCL's in-place reduce_scatter
  } else if (overlap(send, recv)) {
    throw ValueError(
        fmt::format("reduce_scatter: recv overlaps send without being this rank's "
                    "block of it (elements {} to {}, both contiguous), NCCL's "
                    "in-place form",
                    c.rank * recv.size(), (c.rank + 1) * recv.size()));
  }
  return p;
}

Plan plan_point_to_point(const CommFacts& c, Call call, const ndarray& x, int peer) {
  Plan p;
  p.call = call;
  check_rank(c, call, "peer", peer);
  check_array(c, call, "x", x);
  p.peer = peer;
  p.wire = wire_type(x.dtype(), call, std::nullopt);
  p.count = elements(x) * p.wire.per_element;
  if (call == Call::send) {
    p.uses_send = true;
    p.stage_send = !x.is_c_contiguous();
  } else {
    p.uses_recv = true;
    p.stage_recv = !x.is_c_contiguous();
  }
  return p;
}

}  // namespace kiln::nccl::detail
