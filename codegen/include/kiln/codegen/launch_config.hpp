#pragma once
// Launch geometry of generated kernels, beside the emitters whose loops it must cover.
//
//   ReductionGeometry r = reduction_geometry(rspec, m, n, 0, 132);  // strategy details too
//
//   LaunchGeometry g = elementwise_geometry(spec, n, /*block=*/0);
//   // g.block == 256; g.grid covers n elements (n / vector width / unroll per thread)
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
/// with the grid-stride loop covering only loops past the hardware grid limit. `block` 0
/// means kDefaultBlock capped at `max_block` (the loaded kernel's limit). Not for tiled
/// kernels: see tiled_geometry.
LaunchGeometry elementwise_geometry(const ElementwiseSpec& spec, std::int64_t size, int block,
                                    int max_block);
/// A tiled kernel over a rows x cols loop: 32x8 threads (its loops are written for them) per
/// 32x32 tile, grid (col tiles, row tiles up to 65535; blocks loop over further rows).
LaunchGeometry tiled_geometry(std::int64_t rows, std::int64_t cols);

/// Most threads an outer-strategy reduction block has (its shared combine holds one
/// accumulator per thread).
inline constexpr int kOuterMaxBlock = 256;

struct ReductionGeometry {
  std::uint32_t grid_x = 1, grid_y = 1;
  int block = kDefaultBlock;  // threads per block (block_x * block_y)
  int block_x = kDefaultBlock, block_y = 1;  // inner_warp: lanes per row x rows; outer: column
                                             // groups x threads down the reduced elements
  std::uint32_t parts = 1;  // split: blocks per row (inner) or per column tile (outer)
  /// Split workspace: partial slots and zeroed counters the launch needs.
  std::int64_t partials = 0, counters = 0;
};

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

}  // namespace kiln::codegen
