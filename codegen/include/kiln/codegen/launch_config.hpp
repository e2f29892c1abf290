#pragma once
// Launch geometry of generated kernels, beside the emitters whose loops it must cover.
//
//   ReductionGeometry r = reduction_geometry(rspec, m, n, 0, 132);  // strategy details too
//
//   LaunchGeometry g = elementwise_geometry(spec, n, /*block=*/0);
//   // g.block == 256; g.grid covers n elements (n / vector width / unroll per thread)
#include <cstddef>
#include <cstdint>

#include "kiln/codegen/elementwise_spec.hpp"
#include "kiln/codegen/reduction_spec.hpp"

namespace kiln::codegen {

inline constexpr int kDefaultBlock = 256;

struct LaunchGeometry {
  std::uint32_t grid = 1, grid_y = 1;
  int block = kDefaultBlock;  // threads per block (block_x * block_y)
  int block_x = kDefaultBlock, block_y = 1;
};

/// One thread per item of the emitted loop (a group of `unroll` vectors, or one element),
/// a strided loop's vectors running along its last axis,
/// with the grid-stride loop covering only loops past the hardware grid limit. `block` 0
/// means kDefaultBlock capped at `max_block` (the loaded kernel's limit). Not for tiled
/// kernels: see tiled_geometry.
LaunchGeometry elementwise_geometry(const ElementwiseSpec& spec, std::int64_t size, int block,
                                    int max_block);
// ---- tiled kernels: 256 threads per tile of 256 x K elements ----
inline constexpr int kTiledThreads = 256;
/// The shortest side a tile takes (a shorter axis than this does not tile).
inline constexpr std::int64_t kMinTileSide = 4;
/// K, the elements each thread moves per tile (compile time): 4, or 8 for 1- and 2-byte
/// dtypes (more bytes in flight), 16 for 2-byte dtypes moved by 16-byte units on both sides
/// (two units a thread each way). More would cost registers, and so occupancy: a tile of 8
/// float32 per thread took 56 registers, of 16 float16 one by one 184.
int tiled_elements_per_thread(const ElementwiseSpec& spec);
/// Shared elements per staged operand: the largest [tc][tr + 1] tile (tc <= 256).
int tiled_shared_elements(const ElementwiseSpec& spec);
/// The most elements one global access of a tiled loop moves (a power of two): K (8) for 1- and
/// 2-byte dtypes (int8 8 bytes, float16 16 bytes), pairs for 4-byte ones (16 bytes measured no
/// faster than 8), 1 for wider dtypes (8 bytes and more already).
int max_tiled_unit(const ElementwiseSpec& spec);
/// The units a tiled loop takes, given the largest each side could take (cols: direct operands;
/// rows: staged ones, 1 when nothing is staged): each side its own where the other moves one
/// element (an odd axis or a misaligned view on one side no longer costs the other its units),
/// else one unit for both (the smaller). Ahead-of-time kernel lists enumerate exactly these.
struct TileUnits {
  int cols = 1, rows = 1;
};
TileUnits tiled_units(int largest_cols, int largest_rows);

/// A tile's rows and cols (powers of two between K and 256, rows x cols = 256 K): square-ish,
/// narrowed to a short axis, or (transposed tiles of 1- to 4-byte dtypes) where that still pads
/// the loop by a tenth or more, the shape (sides of a 32-byte sector or more) that pads it least.
/// A spec whose staged operands move as runs takes every row where the cols still cover 128
/// bytes of the widest dtype (so each run is 128 bytes or more).
struct TileShape {
  std::int64_t rows = 32, cols = 32;
  int log2_cols = 5;
  std::int64_t tiles(std::int64_t batch, std::int64_t loop_rows, std::int64_t loop_cols) const {
    return batch * ((loop_rows + rows - 1) / rows) * ((loop_cols + cols - 1) / cols);
  }
};
TileShape tile_shape(const ElementwiseSpec& spec, std::int64_t rows, std::int64_t cols);
/// Whether staged operand k of a tiled spec may move as a run (OperandSpec::tiled_run): at
/// most 8-byte elements, one element a unit down the rows, the tile's sides one axis each. The planner also needs the run's strides and a tile that holds every row.
bool tiled_run_operand(const ElementwiseSpec& spec, int k);
/// A tiled kernel: 256 threads per tile, a 1-D grid of every tile (blocks loop past 2^31 - 1).
/// Packed kernels take the same geometry, a box per tile.
LaunchGeometry tiled_geometry(std::int64_t tiles);

// ---- packed kernels: 256 threads per box of (2^log2_a of A, all of B, all of C) ----
/// A packed loop's box. In shared memory, rows of C are padded to an odd pitch and so are
/// B's planes, so that a staged operand walking the box along any axis keeps consecutive
/// threads on different banks. The kernel computes the same pitches from the loop's extents.
struct PackedBox {
  int log2_a = 0;
  std::int64_t b = 1, c = 1;
  std::int64_t a() const { return std::int64_t(1) << log2_a; }
  std::int64_t elements() const { return a() * b * c; }
  std::int64_t pitch_b() const { return c | 1; }
  std::int64_t pitch_a() const { return (b * pitch_b()) | 1; }
  /// Shared elements per staged operand (whole 16-element blocks: every box stays aligned).
  std::int64_t shared_elements() const { return (a() * pitch_a() + 15) / 16 * 16; }
  /// Shared bytes for staged operands whose itemsizes sum to `staged_itemsizes`.
  std::size_t shared_bytes(std::size_t staged_itemsizes) const {
    return std::size_t(shared_elements()) * staged_itemsizes;
  }
};
/// Elements a packed kernel's thread loads before it uses any (per walk of the box). Measured
/// on an H200, (288, 320, 39, 19) float32 permuted two ways, fraction of the copy rate: 1 a
/// thread 0.37, 2 0.41, 4 0.46, 8 0.22 (64 registers: spills), 8 with 3 blocks an SM 0.24.
inline constexpr int kPackedUnroll = 4;
/// Dynamic shared bytes of a packed launch: one padded box per staged operand.
std::size_t packed_shared_bytes(const ElementwiseSpec& spec, const PackedBox& box);
/// At most this many (no opt-in above the default per-block limit).
inline constexpr std::size_t kMaxPackedSharedBytes = 48 * 1024;

/// Most threads an outer-strategy reduction block has (its shared combine holds one
/// accumulator per thread).
inline constexpr int kOuterMaxBlock = 256;

struct ReductionGeometry {
  std::uint32_t grid_x = 1, grid_y = 1;
  int block = kDefaultBlock;                 // threads per block (block_x * block_y)
  int block_x = kDefaultBlock, block_y = 1;  // inner_warp: lanes per row x rows; outer: column
                                             // groups x threads down the reduced elements
  std::uint32_t parts = 1;      // split: blocks per row (inner) or per column tile (outer)
  std::uint32_t max_parts = 1;  // split: the most parts that keep every block's work whole
  /// Split workspace: partial slots and zeroed counters the launch needs.
  std::int64_t partials = 0, counters = 0;
  /// folded: the grid is a multiple of this many blocks (so that the grid's threads step a
  /// whole number of periods).
  std::int64_t fold_unit = 0;
};

/// Positions of the period one folded block holds (blockDim.x * vector_width).
inline constexpr int kFoldPositions = 512;

/// Blocks whose partials one block of a folded reduction merges before the last merge of all
/// groups: the smallest s with s * s >= blocks (the kernel's kiln_fold_group, the same rule).
std::int64_t fold_group(std::int64_t blocks);

/// The blocks of a folded reduction (spec.strategy == folded, spec.vector_width chosen): m
/// outputs whose elements repeat with `period` (<= kFoldPositions) along a flat input of
/// `total` elements; 0 blocks (fold_unit 0) when the fold unit is past a wave of full SMs or
/// would leave a thread under four vectors. Always split: blocks' partials, then groups'
/// partials (fold_group), and one counter per group and one for the last merge.
ReductionGeometry folded_geometry(ReductionSpec& spec, std::int64_t m, std::int64_t period,
                                  std::int64_t total, int sm_count);

/// Completes a reduction spec whose strategy family (inner or outer), dims and vector width
/// the planner chose: a group of lanes or a block per row, whether blocks split rows or
/// columns, the block's shape and the grid, for m outputs of n reduced elements each on a GPU
/// of `sm_count` multiprocessors. Rows are split only when there are too few of them to fill
/// the GPU twice over; a split is what makes a full reduction one launch. Outer blocks are as
/// wide as the columns need (up to 32 column groups) and as tall as the rest (at least 16
/// reduced elements per thread before a block is taller). `block` 0: kDefaultBlock; otherwise
/// a multiple of 32 (outer blocks use at most kOuterMaxBlock threads of it).
ReductionGeometry reduction_geometry(ReductionSpec& spec, std::int64_t m, std::int64_t n, int block,
                                     int sm_count);

/// A split geometry's parts chosen again once the kernel is compiled and its occupancy known
/// (`blocks_per_sm` of its blocks at once; 0: unknown, the geometry stays): about two waves of
/// the blocks that really fit, where reduction_geometry assumed full SMs, or one, three or four
/// where their last wave is fuller; grid and partials follow. `state_bytes` is the size of the
/// compiled kernel's partial (its reduction state with the emptiness flag; 0: unknown): states
/// past kLightStateBytes (moments, fused reductions) take one wave at most, since each block's
/// tree of them costs as much as many elements.
///   g = reduction_geometry(spec, m, n, 0, sms);  /* compile */  balance_parts(g, spec, m, 5, sms);
void balance_parts(ReductionGeometry& g, const ReductionSpec& spec, std::int64_t m,
                   int blocks_per_sm, int sm_count, std::size_t state_bytes = 0);

/// The largest reduction partial (state and emptiness flag) balance_parts treats as cheap to
/// merge: a sum's (up to a float64's or a complex64's) and argmax's float32 pair.
inline constexpr std::size_t kLightStateBytes = 16;

}  // namespace kiln::codegen
