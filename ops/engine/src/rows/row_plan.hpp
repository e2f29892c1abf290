#pragma once
// The row kind's plan: from the loop shape, the reduced-axes mask and the arrays to a
// RowSpec (output dims collapsed, the row as one dim, vector width, lanes and vectors per
// thread) and its launch geometry, or "does not fit" (the planner then runs the reductions
// as reduction kernels instead). The same function decides both, so they always agree.
#include <array>
#include <cstdint>
#include <span>

#include "call/kernel_args.hpp"
#include "call/stack_vector.hpp"
#include "kiln/codegen/row_definition.hpp"
#include "kiln/codegen/row_spec.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln::detail {

using codegen::kMaxParams;

struct RowPlan {
  codegen::RowSpec spec;
  Shape dims;                              // collapsed output dims, then the row
  StackVector<Shape, kMaxParams> strides;  // per array operand, over dims
  std::array<std::int8_t, kMaxParams> slot;
  std::int64_t m = 0, n = 0;  // rows, row length
  int lanes = 1, rows_per_block = 1;
  std::uint32_t grid = 1;
  std::uint32_t shared_bytes = 0;  // dynamic shared memory of a block (spec.shared)
};

/// Vectors a thread of a held row (spec.shared) keeps in registers, at most: 8 (as rows of
/// registers alone take) spilled layer norm's kernel under the wide blocks' bound of 64.
inline constexpr int kHeldRowItems = 4;

/// The most elements a lane of a column plan (codegen::kRowColumns) holds: rows of up to 16
/// elements a lane, up to 4 lanes for float32 (64), 8 for float64 (128), 2 for float16 (32).
inline constexpr int kColumnItems = 16;
/// Most elements a lane for column rows taken across (vector_width adjacent rows a lane
/// group, row_plan.cpp): 8 vectors of 16 bytes a thread at most.
inline constexpr int kAcrossItems = 8;

/// The most blocks of a cluster one row splits over (sm_90 on; 8 is every sm_90 part's
/// portable cluster size).
inline constexpr int kMaxRowCluster = 8;

/// What the row planner needs to know of the GPU.
struct RowDevice {
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t shared_per_sm = 0;     // shared memory of one multiprocessor
  std::int64_t shared_per_block = 0;  // the most one block may take (opted in)
  int cluster_blocks = 1;             // the most blocks a row may split over (a cluster)
  static RowDevice of(const DeviceProperties& p) {
    return {p.multiprocessor_count, std::int64_t(p.l2_cache_bytes),
            std::int64_t(p.shared_memory_per_multiprocessor),
            std::int64_t(p.shared_memory_per_block_optin), p.major >= 9 ? kMaxRowCluster : 1};
  }
};

/// What a row kernel keeps in registers per element and per row, for a call's arrays and
/// dtypes: the bytes of one element of every leaf it keeps (an array read in two phases or
/// more, as the emitter decides), and the 32-bit registers of every reduction's accumulator.
struct RowRegisters {
  int cached_bytes = 0;
  int state_words = 0;
};

/// Plans a row kernel over `loop` whose reduced axes are `mask`, for the parameters' arrays
/// (nullptr: a scalar) and dtypes; `regs`: what it keeps in registers (row_registers);
/// `gpu`: its multiprocessors, L2 and shared memory. False when the layout does not fit: the
/// reduced axes do not collapse to one dim (along which outputs move), the row is longer than
/// a block holds in registers and shared memory and cannot be streamed (too few rows, or too
/// long for L2 to keep the rows in flight), or the row is strided (columns) and longer than
/// kColumnItems a lane or read with gaps across rows.
bool plan_rows(const Shape& loop, std::uint64_t mask, std::span<const ndarray* const> arrays,
               std::span<const dtype> types, int nin, RowRegisters regs, const RowDevice& gpu,
               RowPlan& plan);
RowRegisters row_registers(const codegen::RowDefinition& def,
                           std::span<const ndarray* const> arrays, std::span<const dtype> types);
/// Packs the kernel arguments (codegen::row_arg order).
void pack_rows(std::span<const ndarray* const> arrays,
               std::span<const std::array<std::byte, 16>> values, std::span<const dtype> types,
               const RowPlan& plan, KernelArgs& args);

}  // namespace kiln::detail
