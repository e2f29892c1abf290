#include "kiln/codegen/launch_config.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::codegen {
namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t pow2_floor(std::int64_t v) {
  std::int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}
std::int64_t pow2_ceil(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}
}  // namespace

LaunchGeometry elementwise_geometry(const ElementwiseSpec& s, std::int64_t size, int block,
                                    int max_block) {
  LaunchGeometry g;
  g.block = block ? block : std::min(kDefaultBlock, max_block);
  g.block_x = g.block;
  std::int64_t items = size;
  if (s.layout == Layout::contiguous && contiguous_vector_loop(s)) {
    const std::int64_t nvec = size / s.vector_width;
    items = std::max(ceil_div(nvec, s.unroll), size - nvec * s.vector_width);
  } else if (s.layout == Layout::strided) {
    items = ceil_div(size / s.vector_width, s.unroll);  // the last axis holds whole vectors
  } else if (s.layout == Layout::gathered) {
    // Whole vectors of the flat loop; the rest (fewer than a vector) takes the first threads.
    items = std::max<std::int64_t>(ceil_div(size / s.vector_width, s.unroll), 1);
  } else if (s.layout == Layout::interleaved) {
    // One group (vector_width elements along L for each of the S rows) a thread; the rows'
    // ends past the last whole group take the same threads. Whole warps exchange their runs
    // through the kernel's shared memory, sized for kTiledThreads: that block, always.
    items = std::max<std::int64_t>(ceil_div(size, std::int64_t(s.vector_width) * s.unroll), 1);
    g.block = g.block_x = kTiledThreads;
  }
  // Capping the grid at the resident blocks (SMs x blocks per SM) and striding measured
  // slower on an H200: my_kernel 4.10 vs 4.37 TB/s, x *= 5 3.92 vs 4.17, x.T + y 1.40 vs 1.66
  // (caps of 4, 16 and 64 waves fell in between, in order).
  constexpr std::int64_t kMaxGrid = 0x7fffffff;
  g.grid = std::uint32_t(std::clamp<std::int64_t>(ceil_div(items, g.block), 1, kMaxGrid));
  return g;
}

int tiled_elements_per_thread(const ElementwiseSpec& s) {
  const auto widest = s.widest_array_item();
  if (widest >= 4) return 4;
  // 2-byte dtypes moved by 16-byte units on both sides of the tile: two units a thread each way.
  // Measured on an H200 (layout sweep, fraction of the copy rate, 8 -> 16): float16 x.T - y of
  // 8192^2 0.81 -> 0.91, (59072, 1136) transposed 0.78 -> 0.92, (2176, 2080, 15) permuted 0.78
  // -> 0.88, bfloat16 (64, 288, 20, 182) 0.80 -> 0.86; bfloat16 (128, 10148, 52) 0.86 -> 0.82.
  // With smaller units 16 elements lost up to 0.36 (float16 (64, 12, 266, 329) 0.62 -> 0.26).
  if (widest == 2 && s.log2_unit_cols == 3 && s.log2_unit_rows == 3) return 16;
  return 8;
}

int max_tiled_unit(const ElementwiseSpec& s) {
  const auto widest = s.widest_array_item();
  if (widest > 4) return 1;
  if (widest == 4) return 2;  // 16 bytes per access measured no faster than 8
  return std::min(tiled_elements_per_thread(s), int(16 / widest));
}

TileUnits tiled_units(int largest_cols, int largest_rows) {
  if (largest_cols > 1 && largest_rows > 1) {
    const int u = std::min(largest_cols, largest_rows);
    return {u, u};
  }
  return {largest_cols, largest_rows};
}

int tiled_shared_elements(const ElementwiseSpec& s) {
  return kTiledThreads * tiled_elements_per_thread(s) + kTiledThreads;  // tc <= 256 pads
}

TileShape tile_shape(const ElementwiseSpec& s, std::int64_t rows, std::int64_t cols) {
  const std::int64_t tile = std::int64_t(kTiledThreads) * tiled_elements_per_thread(s);
  auto pow2_at_least = [](std::int64_t v) {
    std::int64_t p = 1;
    while (p < v) p *= 2;
    return p;
  };
  // Each side between K and 256: every thread's K elements lie on one line of the tile.
  const std::int64_t lo = tile / kTiledThreads, hi = kTiledThreads;
  TileShape t;
  t.cols = 32;
  while (t.cols * t.cols < tile) t.cols *= 2;  // 32 x 32, 64 x 32, 64 x 64
  t.cols = std::clamp(std::min(t.cols, pow2_at_least(cols)), lo, hi);
  t.rows = tile / t.cols;
  if (rows < t.rows) {
    t.rows = std::clamp(pow2_at_least(rows), lo, hi);
    t.cols = tile / t.rows;
  }
  // Transposed tiles of 1- to 4-byte dtypes over axes that fit the square-ish tile badly (35 x
  // 97 in 32 x 32 tiles: 41% of the threads busy) take the shape with the least padding instead
  // (8 x 128: 66%), when it saves at least a tenth of the padded area; its sides stay a 32-byte
  // sector or longer. Measured on an H200 (layout sweep, bench/README.md): float32 and int32
  // +0.10 to +0.12 of the copy rate, float16 +0.07; float64 lost 0.19 to 0.31 (a tile 4 rows
  // high, one sector, reads 32 bytes of each 80-byte line of a staged operand and the next row
  // tile the rest, a whole pass over the array later), so 8-byte and wider dtypes keep the
  // square-ish shape (sides of 8 or 16 float64 lost too, H200: (113182, 17, 35) transposed
  // 0.51 -> 0.39 and 0.46). Row tiles (nothing staged) keep it too: their planner's rule was
  // measured with it.
  bool staged = false;
  for (int k = 0; k < s.nparams; ++k) staged |= s.staged(k);
  const auto widest = std::int64_t(s.widest_array_item());
  // Runs: every row in one tile, so that each staged operand's tile is one run of memory.
  // Measured on an H100 (layout sweep, fraction of the copy rate, bench/README.md): float32
  // (n, 21).T - y 0.60 -> 0.88 (8 x 128 tiles by elements -> 32 x 32 by runs).
  bool every_row = false;
  if (s.tiled_runs()) {
    const std::int64_t whole = std::clamp(pow2_at_least(rows), lo, hi);
    every_row = whole >= rows && tile / whole >= std::max(lo, 128 / widest) && tile / whole <= hi;
    if (every_row) {
      t.rows = whole;
      t.cols = tile / whole;
    }
  }
  if (staged && widest <= 4 && !every_row) {
    auto padded = [&](std::int64_t r, std::int64_t c) {
      return (rows + r - 1) / r * r * ((cols + c - 1) / c * c);
    };
    const std::int64_t sector = std::max<std::int64_t>(lo, 32 / widest);
    std::int64_t best = padded(t.rows, t.cols);
    const std::int64_t limit = best - best / 10;
    for (std::int64_t c = sector; c <= hi; c *= 2) {
      const std::int64_t r = tile / c;
      if (r < sector || r > hi) continue;
      const std::int64_t p = padded(r, c);
      if (p <= limit && p < best) {
        best = p;
        t.rows = r;
        t.cols = c;
      }
    }
  }
  t.log2_cols = 0;
  while ((std::int64_t(1) << t.log2_cols) < t.cols) ++t.log2_cols;
  return t;
}

bool tiled_run_operand(const ElementwiseSpec& s, int k) {
  if (s.layout != Layout::tiled || !s.staged(k) || s.two_axis_sides != 0 ||
      s.kind(k) != OperandKind::array)
    return false;
  // A run places one element at a time in the tile; where the element path already moves
  // several elements down the rows as one unit, it moves them in fewer shared-memory accesses
  // than the run would (float16 rows by 4 lost to it on an H100, bench/README.md, thirty-seventh
  // round), so runs take single elements only.
  return s.param_dtype(k).itemsize() <= 8 && s.unit_rows() == 1;
}

LaunchGeometry tiled_geometry(std::int64_t tiles) {
  LaunchGeometry g;
  g.block = g.block_x = kTiledThreads;
  g.block_y = 1;
  g.grid = std::uint32_t(std::clamp<std::int64_t>(tiles, 1, 0x7fffffff));
  return g;
}

std::size_t packed_shared_bytes(const ElementwiseSpec& s, const PackedBox& box) {
  std::size_t itemsizes = 0;
  for (int k = 0; k < s.nparams; ++k)
    if (s.kind(k) == OperandKind::array && s.staged(k)) itemsizes += s.param_dtype(k).itemsize();
  return box.shared_bytes(itemsizes);
}

ReductionGeometry reduction_geometry(ReductionSpec& s, std::int64_t m, std::int64_t n, int block,
                                     int sm_count) {
  ReductionGeometry g;
  g.block = g.block_x = block ? block : kDefaultBlock;
  constexpr std::int64_t kMaxGrid = 0x7fffffff;
  // Two waves of full-occupancy blocks keep enough loads in flight to reach copy bandwidth.
  const std::int64_t target = std::int64_t(std::max(sm_count, 1)) * std::max(1, 2048 / g.block) * 2;
  s.split = 0;
  if (s.strategy == ReductionStrategy::outer) {
    const std::int64_t threads = pow2_floor(std::min(g.block, kOuterMaxBlock));
    const std::int64_t groups = std::max<std::int64_t>(1, ceil_div(m, s.vector_width));
    const std::int64_t narrowest = std::min<std::int64_t>(32, pow2_ceil(groups));
    const std::int64_t tallest = pow2_floor(std::max<std::int64_t>(1, n / 16));
    std::int64_t by = std::clamp<std::int64_t>(tallest, 1, threads / narrowest);
    std::int64_t bx = threads / by;
    std::int64_t tiles = ceil_div(groups, bx);
    // Few column tiles (a short kept extent, a long reduced one): narrower tiles, down to a
    // warp's row covering 128 bytes, so more tiles share the reduced extent in fewer parts
    // each; the last block of a tile combines all its parts' partials, and two tiles of
    // 1056 parts each made that combine the launch's tail (H200, mean over (0, 1) of
    // (192, 1255, 256) float32: 2 tiles 0.62 of the copy rate, 8 tiles of 8 x 32 threads 0.81).
    constexpr std::int64_t kFewTiles = 8;
    const std::int64_t segment = std::max<std::int64_t>(
        1, 128 / (std::int64_t(s.vector_width) * std::int64_t(s.widest_array_item())));
    while (tiles < kFewTiles && bx > segment && by * 2 <= tallest) {
      bx /= 2;
      by *= 2;
      tiles = ceil_div(groups, bx);
    }
    // Each part keeps at least 8 reduced elements per thread so partials stay small.
    const std::int64_t parts = std::clamp<std::int64_t>(
        ceil_div(target, tiles), 1, std::clamp<std::int64_t>(ceil_div(n, by * 8), 1, 65535));
    g.block = int(threads);
    g.block_x = int(bx);
    g.block_y = int(by);
    g.grid_x = std::uint32_t(std::min(tiles, kMaxGrid));
    g.parts = g.grid_y = std::uint32_t(parts);
    g.max_parts = std::uint32_t(std::clamp<std::int64_t>(ceil_div(n, by * 8), 1, 65535));
    if (parts > 1) {
      s.split = 1;
      g.partials = parts * m;
      g.counters = tiles;
    }
    return g;
  }
  const int vw = s.red_contiguous ? s.vector_width : 1;
  const std::int64_t per_pass = std::int64_t(g.block) * vw * 4;
  // Lanes per row: enough that each runs about 32 vectors (so the row's combine, which may
  // cost a division per level for moments, is small beside its loads), doubled while the rows
  // would leave the GPU's threads idle. Up to 32 lanes: a group per row, rows filling the
  // block; more: a block of that many threads per row (or the block_size asked for).
  const std::int64_t wave = std::int64_t(std::max(sm_count, 1)) * 2048;
  std::int64_t lanes =
      std::clamp<std::int64_t>(pow2_ceil(ceil_div(ceil_div(n, vw), 32)), 1, g.block);
  while (m * lanes < wave && lanes < g.block) lanes *= 2;
  if (m > 1 && lanes <= 32 && !block) {
    s.strategy = ReductionStrategy::inner_warp;
    g.block_x = int(lanes);
    g.block_y = g.block / int(lanes);
    g.grid_x = std::uint32_t(std::clamp<std::int64_t>(ceil_div(m, g.block_y), 1, kMaxGrid));
    return g;
  }
  if (m > 1 && n <= 32 * std::int64_t(vw) * 16 &&
      block) {  // a block size was asked for: short rows as before
    s.strategy = ReductionStrategy::inner_warp;
    g.block_x = 32;
    g.block_y = g.block / 32;
    g.grid_x = std::uint32_t(std::clamp<std::int64_t>(ceil_div(m, g.block_y), 1, kMaxGrid));
    return g;
  }
  if (!block && m >= target) g.block = g.block_x = int(std::max<std::int64_t>(lanes, 64));
  s.strategy = ReductionStrategy::inner_block;
  // Whole waves: rounding the parts down keeps the last wave from running a sliver of blocks.
  const std::int64_t max_parts = std::max<std::int64_t>(1, ceil_div(n, per_pass));
  const std::int64_t parts = m >= target ? 1 : std::clamp<std::int64_t>(target / m, 1, max_parts);
  if (parts > 1) {
    s.split = 1;
    g.parts = std::uint32_t(parts);
    g.max_parts =
        std::uint32_t(std::min<std::int64_t>(max_parts, 0x7fffffff / std::max<std::int64_t>(m, 1)));
    g.grid_x = std::uint32_t(m * parts);
    g.partials = m * parts;
    g.counters = m;
  } else {
    g.grid_x = std::uint32_t(std::clamp<std::int64_t>(m, 1, kMaxGrid));
  }
  return g;
}

namespace {

// A folded grid of as many whole fold units as `blocks` holds (at least one, at most
// max_parts): partials of every block then of every group, counters of every group then the
// last merge's.
void set_folded_grid(ReductionGeometry& g, std::int64_t m, std::int64_t blocks) {
  const std::int64_t units =
      std::clamp<std::int64_t>(blocks / g.fold_unit, 1, std::int64_t(g.max_parts));
  g.parts = std::uint32_t(units);
  g.grid_x = std::uint32_t(units * g.fold_unit);
  const std::int64_t group = fold_group(g.grid_x);
  const std::int64_t groups = (std::int64_t(g.grid_x) + group - 1) / group;
  g.partials = (std::int64_t(g.grid_x) + groups) * m;
  g.counters = groups + 1;
}

}  // namespace

std::int64_t fold_group(std::int64_t blocks) {
  std::int64_t s = 1;
  while (s * s < blocks) ++s;
  return s;
}

ReductionGeometry folded_geometry(ReductionSpec& s, std::int64_t m, std::int64_t period,
                                  std::int64_t total, int sm_count) {
  ReductionGeometry g;
  const std::int64_t vw = std::max<int>(s.vector_width, 1);
  g.block = g.block_x = int(kFoldPositions / vw);
  if (period <= 0 || period > kFoldPositions || m <= 0) return g;
  // The grid's threads step vw * threads elements: a whole number of periods when the block
  // count is a multiple of period / gcd(period, kFoldPositions).
  g.fold_unit = period / std::gcd(period, std::int64_t(kFoldPositions));
  // Half the blocks of full SMs (balance_parts sizes the grid again once occupancy is known).
  const std::int64_t resident = std::int64_t(std::max(sm_count, 1)) * (1024 / g.block);
  // At least four vectors a thread; a fold unit of at most twice the half wave.
  g.max_parts = std::uint32_t(std::clamp<std::int64_t>(
      total / (std::int64_t(kFoldPositions) * 4 * g.fold_unit), 0, 0x7fffffff / 64));
  if (g.max_parts == 0 || g.fold_unit > 2 * resident) {
    g.fold_unit = 0;
    return g;
  }
  s.split = 1;
  set_folded_grid(g, m, resident);
  return g;
}

void balance_parts(ReductionGeometry& g, const ReductionSpec& s, std::int64_t m, int blocks_per_sm,
                   int sm_count, std::size_t state_bytes) {
  if (!s.split || blocks_per_sm <= 0 || sm_count <= 0) return;
  if (s.strategy == ReductionStrategy::folded) {
    // Half the blocks that fit, in whole fold units: the loads of a thread's four vectors keep
    // the memory busy from there, and fewer blocks leave fewer partials to merge. H200, sum
    // over axis 0 of (1101277, 61) float32 and over (0, 1, 3) of (354, 480, 8, 49) float16,
    // fractions of the copy rate, all that fit / half / a quarter: 0.80 / 0.81 / 0.65-0.73
    // and 0.61 / 0.63-0.65 / 0.56.
    if (g.fold_unit <= 0) return;
    set_folded_grid(g, m, std::int64_t(blocks_per_sm) * sm_count / 2);
    return;
  }
  const bool outer = s.strategy == ReductionStrategy::outer;
  // Two waves of the blocks that really fit, where reduction_geometry assumed a full SM
  // (2048 threads). Measured on an H200, var over (0, 2, 3) of (64, 256, 56, 56): 5 blocks of
  // 256 threads fit an SM, so 8 parts made 3.1 waves (0.064 ms) where 5 make 1.94 (0.060);
  // 13 parts (5.04 waves) took 0.066 and 3 (1.16) 0.074. Parts round down: no sliver of a
  // last wave (argmax along axis 0 of 8192 x 8192: 17 parts, 2.06 waves, 0.50 of the copy rate;
  // 8 parts, 0.97 waves, 0.61).
  // Where two waves end in a sliver, one, three or four waves whose last is fuller: argmax over
  // axis 1 of (480, 768, 15, 12) has 675 column tiles and 4 blocks of them fit an SM (H100, 528
  // at once), so two waves' one part made 1.28 waves (0.64 of the copy rate); three parts make
  // 3.84. A wave away from two costs a little (var over (0, 2, 3) above: 5.04 waves, fuller
  // than 3.1, still took longer).
  const std::int64_t resident = std::int64_t(blocks_per_sm) * sm_count;
  const std::int64_t units = outer ? std::int64_t(g.grid_x) : std::max<std::int64_t>(m, 1);
  std::int64_t parts = 1;
  if (state_bytes > kLightStateBytes) {
    // Heavy states merge in many instructions (the moments: divisions, five words a shuffle; a
    // fused mean and var: six words), and every block runs a tree of them: at most one wave, each
    // thread folding more elements before its tree. H200, the same binary either way, medians
    // of three: var_mean over (0, 2, 3) of (64, 256, 56, 56) float32 0.0637 -> 0.0587 ms (512
    // blocks, 0.78 of a wave, against 1280), var over axis 0 of 8192 x 8192 float32 3024 -> 3403
    // GB/s, argmax over axis 0 of (8192, 4096) float64 (24 bytes) 3437 -> 3684, a sum of
    // complex128 (24 bytes) unchanged. Light states gained nothing that held at one wave
    // (argmax over (0,) of (1239, 54164) float32 lost 0.71 -> 0.63 of the copy rate).
    parts = std::clamp<std::int64_t>(resident / units, 1, std::int64_t(g.max_parts));
  } else {
    double best = -1;
    for (const std::int64_t waves : {2, 1, 3, 4}) {
      const std::int64_t p =
          std::clamp<std::int64_t>(waves * resident / units, 1, std::int64_t(g.max_parts));
      const double w = double(units * p) / double(resident);
      const double fill = w / std::ceil(w) - 0.02 * std::abs(std::ceil(w) - 2);
      if (fill > best + 1e-9) {
        best = fill;
        parts = p;
      }
    }
  }
  g.parts = std::uint32_t(parts);
  if (outer) {
    g.grid_y = g.parts;
    g.partials = parts * m;
  } else {
    g.grid_x = std::uint32_t(m * parts);
    g.partials = m * parts;
  }
}

}  // namespace kiln::codegen
