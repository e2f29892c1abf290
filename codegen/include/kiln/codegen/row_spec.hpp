#pragma once
// RowSpec: what one row kernel binary (row_emitter.hpp) is specialised for beyond its
// definition: parameter dtypes and kinds, the collapsed output dims, index and vector widths,
// how many vectors of a row each thread holds, and whether a row is a group of up to 32 lanes
// (several rows per block, shuffles) or a whole block. A fixed-size POD, hashed by bytes on
// the call path like the other kinds' specs.
//
// The loop of a row kernel is (output dims..., the row): the row is ONE dim (the reduced axes
// collapsed) along which every array operand has unit steps or none (a broadcast operand), or,
// for kRowColumns, any steps.
//
//   RowSpec s;
//   s.vector_width = 4;   // float4 loads and stores along the row
//   s.items = 4;          // each thread holds 4 vectors: a row of up to lanes * 16 elements
//   s.group = kRowBlock;  // a block per row (lanes = blockDim.x, up to kMaxRowLanes)
//   s.wide = 1;           // ... of kMaxRowLanes lanes: two such blocks share an SM
//   s.shared = 1;         // ... and the rest of the row past lanes * items vectors in shared
//                         // memory (the launch's dynamic bytes), for rows too long for registers
//   s.items = 0;          // streamed: no registers hold the row; each phase reads it again
//                         // (from L2, which holds the rows in flight), for rows too long for both
//   s.shifted = 1;        // rows of any length and start, read in aligned 16-byte windows
//   s.cluster = 4;        // a wide block's row split over a cluster of 4 blocks (sm_90):
//                         // rows up to 4x longer held in registers (and shared memory)
#include <array>
#include <cstddef>
#include <cstdint>

#include "kiln/codegen/elementwise_spec.hpp"  // OperandSpec, OperandKind

namespace kiln::codegen {

/// Most lanes (threads) of one row: its block's bound (__launch_bounds__), so the registers
/// the row holds never make the block too large to launch.
inline constexpr int kMaxRowLanes = 512;

/// RowSpec::group: how threads take rows.
/// A block (blockDim.x lanes, up to kMaxRowLanes) per row.
inline constexpr std::uint8_t kRowBlock = 0;
/// blockDim.x (<= 32) lanes per row, blockDim.y rows per block (256 threads).
inline constexpr std::uint8_t kRowLaneGroup = 1;
/// As kRowLaneGroup (blockDim.x lanes a group, here up to 8), rows strided along memory (a
/// reduction along an outer axis, rows on adjacent groups), read and written with the row's
/// step: vector_width 1, one row a group, each element alone; vector_width > 1 (rows taken
/// across), that many adjacent rows a group, one access of a vector holding an element of each
/// (the plan's kept innermost dim counts groups, its steps a group's vector).
inline constexpr std::uint8_t kRowColumns = 2;

struct RowSpec {
  std::uint8_t out_ndim = 1;      // collapsed output (kept) dims, >= 1
  std::uint8_t index_bits = 32;   // 32 or 64
  std::uint8_t vector_width = 1;  // elements per load and store along the row (kRowColumns:
                                  // across adjacent rows)
  std::uint8_t items = 1;         // vectors per thread: 1, 2, 4 or 8; 0: streamed, a row of
                                  // any length, re-read by each phase (wide blocks only)
  std::uint8_t group = 1;         // kRowLaneGroup, kRowBlock or kRowColumns (below)
  std::uint8_t nparams = 0;
  std::uint8_t wide = 0;     // group 0 with kMaxRowLanes lanes: the launch bounds ask for two
                             // resident blocks (at most 64 registers a thread), where the
                             // registers a row takes would otherwise leave one block per SM
  std::uint8_t shared = 0;   // wide blocks holding items vectors a thread: the row's vectors past
                             // lanes * items go to dynamic shared memory, ceil(rest / lanes) a
                             // thread (a run-time count), of every leaf read in several phases
  std::uint8_t shifted = 0;  // rows off their vectors (a length or a start off 16 bytes), read
                             // in the aligned windows that hold them: vector_width elements a
                             // window, the row's first window starting up to vector_width - 1
                             // elements before it (the first output's shift, found per row);
                             // elements outside the row are skipped, stores that would pass
                             // its ends go element by element (kiln_window_load/_store)
  std::uint8_t cluster = 1;  // wide blocks: a row split over this many blocks of one cluster
                             // (1, 2, 4 or 8; sm_90 on), its vectors dealt over all their
                             // threads; each reduction's block totals merge through the
                             // blocks' shared memory (kiln_cluster_peer) in rank order
  std::array<OperandSpec, kMaxParams> params{};  // kinds: scalar, array

  dtype param_dtype(int k) const {
    return dtype(static_cast<dtype_id>(params[std::size_t(k)].dtype));
  }
  OperandKind kind(int k) const { return params[std::size_t(k)].kind; }
  void set_param(int k, dtype t, OperandKind kind, int raw_ndim = 0, bool raw_contiguous = true) {
    params[std::size_t(k)] = {static_cast<std::uint8_t>(t.id()), kind,
                              static_cast<std::uint8_t>(raw_ndim), std::uint8_t(raw_contiguous)};
  }
  std::size_t key_size() const { return offsetof(RowSpec, params) + sizeof(OperandSpec) * nparams; }
};
static_assert(offsetof(RowSpec, params) == 10);

}  // namespace kiln::codegen
