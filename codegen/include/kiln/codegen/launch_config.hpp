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
/// a strided loop's vectors running along its last axis,
/// with the grid-stride loop covering only loops past the hardware grid limit. `block` 0
/// means kDefaultBlock capped at `max_block` (the loaded kernel's limit). Not for tiled
/// kernels: see tiled_geometry.
LaunchGeometry elementwise_geometry(const ElementwiseSpec& spec, std::int64_t size, int block,
                                    int max_block);
/// Rows and cols of a tiled kernel's tile.
inline constexpr std::int64_t kTile = 32;
/// A tiled kernel over `batch` rows x cols loops: 32x8 threads (its loops are written for
/// them) per 32x32 tile, a 1-D grid of every tile (blocks loop past 2^31 - 1 of them).
LaunchGeometry tiled_geometry(std::int64_t batch, std::int64_t rows, std::int64_t cols);

struct ReductionGeometry {
  std::uint32_t grid_x = 1, grid_y = 1;
  int block = kDefaultBlock;
  std::uint32_t parts = 1;  // split: blocks per row (inner) or per column tile (outer)
  /// Split workspace: partial slots and zeroed counters the launch needs.
  std::int64_t partials = 0, counters = 0;
};

/// Completes a reduction spec whose strategy family (inner or outer), dims and vector width
/// the planner chose: a warp or a block per row, whether blocks split rows or columns, and the
/// grid, for m outputs of n reduced elements each on a GPU of `sm_count` multiprocessors.
/// Rows are split only when there are too few of them to fill the GPU twice over; a split
/// is what makes a full reduction one launch. `block` 0: kDefaultBlock; otherwise a multiple
/// of 32.
ReductionGeometry reduction_geometry(ReductionSpec& spec, std::int64_t m, std::int64_t n, int block,
                                     int sm_count);

}  // namespace kiln::codegen
