#pragma once
// Internal: every check a collective makes before NCCL sees it, as pure functions of the
// communicator's rank, size and device and the arrays (no CUDA, no NCCL: CPU-testable with
// arrays that only describe memory). A Plan says what to hand NCCL and what to stage.
#include <cstddef>
#include <optional>

#include "kiln/library/collectives.hpp"

namespace kiln::nccl::detail {

enum class Call { all_reduce, broadcast, reduce, all_gather, reduce_scatter, send, recv };
/// "all_reduce", ... (the public function's name, for messages).
const char* call_name(Call c) noexcept;

/// What the checks need to know of a communicator.
struct CommFacts {
  int rank = 0, size = 1, device = 0;
};

/// NCCL's ncclDataType_t numbers (nccl_collectives.cpp checks them against nccl.h).
enum class WireType : int {
  int8 = 0,
  uint8 = 1,
  int32 = 2,
  uint32 = 3,
  int64 = 4,
  uint64 = 5,
  float16 = 6,
  float32 = 7,
  float64 = 8,
  bfloat16 = 9,
};

/// How a dtype travels: NCCL's type and how many of its elements make one array element
/// (2 for complex as float pairs, the itemsize for int16/uint16 moved as bytes).
struct Wire {
  WireType type = WireType::uint8;
  std::size_t per_element = 1;
};
/// The wire form of `t` for `call`; `op` for the reducing calls. TypeError when NCCL cannot do
/// that (a reduction of bool other than max/min, any of int16/uint16, prod/max/min of
/// complex, avg of integers).
Wire wire_type(dtype t, Call call, std::optional<reduce_op> op);

/// A checked call.
struct Plan {
  Call call = Call::all_reduce;
  Wire wire;
  std::size_t count = 0;  ///< NCCL's count (per rank's block for all_gather and reduce_scatter)
  int op = 0;             ///< ncclRedOp_t (reduce_op's order is NCCL's)
  int peer = -1;          ///< root, or the peer of send/recv
  bool uses_send = false, uses_recv = false;  ///< buffers this rank hands NCCL
  bool stage_send = false;  ///< send is not contiguous: NCCL reads a contiguous copy
  bool stage_recv = false;  ///< recv is not contiguous: NCCL writes a temporary, copied back
  bool in_place = false;    ///< NCCL's in-place form (send and recv share their memory)
};

Plan plan_all_reduce(const CommFacts& c, const ndarray& send, const ndarray& recv, reduce_op op);
Plan plan_broadcast(const CommFacts& c, const ndarray& send, const ndarray& recv, int root);
Plan plan_reduce(const CommFacts& c, const ndarray& send, const ndarray& recv, int root,
                 reduce_op op);
Plan plan_all_gather(const CommFacts& c, const ndarray& send, const ndarray& recv);
Plan plan_reduce_scatter(const CommFacts& c, const ndarray& send, const ndarray& recv,
                         reduce_op op);
/// The checks of `send` alone (a real handle, on the communicator's device, a dtype `call` can
/// take with `op`): what the allocating forms check before they allocate the output.
Wire check_input(const CommFacts& c, Call call, const ndarray& send, std::optional<reduce_op> op);
/// call is Call::send or Call::recv.
Plan plan_point_to_point(const CommFacts& c, Call call, const ndarray& x, int peer);

}  // namespace kiln::nccl::detail
