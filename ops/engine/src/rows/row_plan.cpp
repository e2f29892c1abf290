#include "rows/row_plan.hpp"

#include <algorithm>
#include <cstdlib>

#include "call/buffer_granules.hpp"
#include "call/kernel_call.hpp"
#include "kiln/codegen/loop_layout.hpp"

namespace kiln::detail {
namespace {

using codegen::OperandKind;

constexpr int kMaxLanes = codegen::kMaxRowLanes;
constexpr int kMaxItems = 8;
// Vectors per thread, preferred: a block holds its row in registers across the phases, so the
// bytes one SM has in flight are its resident threads times these. 8 measured against 4 on an
// H200, (16384, 4096) float32: layer norm 0.146 -> 0.137 ms, softmax 0.151 -> 0.148 (6 blocks
// of 128 threads per SM against 4 of 256); NVRTC takes about 15% longer.
constexpr int kItems = 8;
constexpr int kGroupThreads = 256;       // a block of lane groups: 256 / lanes rows
constexpr int kMaxCachedRegisters = 64;  // 32-bit registers a thread spends on cached leaves
// Shared memory of a held row's block kept for the runtime (1 KiB a block on sm_90) and the
// reductions' static slots (33 states each).
constexpr std::int64_t kSharedReserve = 4096;

std::int64_t pow2_ceil(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// Columns: rows strided along memory (reduced along an outer axis: softmax over the channels
// of NCHW) in lane groups, rows on adjacent groups, each lane reading every lanes-th element
// of its row with the row's step: a warp's access reads 32 / lanes neighbouring rows' elements,
// a run of a sector or more (lanes up to the itemsize), where lanes along a row read a sector an
// element. The fewest lanes whose rows fit kColumnItems elements a lane; longer rows, and rows
// whose neighbours are not adjacent in memory (the kept dims' innermost not contiguous), run
// as passes. Measured on an H200 (layout sweep), fraction of the copy rate, passes -> columns:
// softmax over 21 channels of (32, 21, 256, 256) float32 0.41 -> 0.56 (2 lanes of 16; 4 lanes
// of 8: 0.49; 1 lane of 32: 0.48), standardizing over 48 channels of (32, 48, 128, 128)
// 0.29 -> 0.56, float64 log-softmax over 8 channels of (16, 8, 384, 384) 0.37 -> 0.55.
//
// Both column plans end here: lane groups of `lanes` threads, `rows` adjacent rows a group.
void set_columns(std::int64_t rows, std::int64_t items, std::int64_t lanes, RowPlan& plan) {
  auto& spec = plan.spec;
  spec.shared = 0;
  spec.vector_width = std::uint8_t(rows);
  spec.items = std::uint8_t(items);
  spec.group = codegen::kRowColumns;
  spec.wide = 0;
  plan.shared_bytes = 0;
  plan.lanes = int(lanes);
  plan.rows_per_block = kGroupThreads / int(lanes);
}

// Rows taken across: where every operand moves along the kept innermost dim with unit steps
// and the rows' vectors (16 bytes down to 2 rows) are aligned, a lane group takes that many
// adjacent rows, one access of a vector holding an element of each: a quarter of the
// accesses, index arithmetic and loop steps per element for float32. The widest vectors on
// the fewest lanes (up to 4) that hold a row in kAcrossItems elements a lane. Measured on an
// H200, softmax over the channels of (32, C, 256, 256) float32, fraction of the copy rate, one
// row a lane group -> four: 21 channels 0.58 -> 0.76 (the kernel alone; 0.86 for a prototype
// without NumPy's NaN-propagating max), 32 0.74 -> 0.92 and 8 0.72 -> 0.80 (prototypes).
// Dropped: 16 elements a lane (standardizing over 48 channels spilled: 0.56 -> 0.51 as pairs,
// 0.48 as four rows at 128 registers), 4 rows on 8 lanes of 4 (21 channels 0.59), 8-byte
// dtypes (float64 log-softmax over 8 channels spilled at 64 registers: 0.54 -> 0.51).
//
// Fewer rows a group where a lane's rows would not fit its registers: kAcrossWords 32-bit
// words of cached elements, accumulators and results across its rows (codegen::
// row_state_words). Under the 64 registers the emitter's bound gives (ptxas, sm_90), float16
// standardizing (mean and var: 8 words a row) over 8 or more channels, 8 rows of 8 elements
// (96 words), spilled 264 bytes and 4 rows (48) none; float16 softmax, 8 rows of 8 (64),
// none. Measured on an H200 (layout sweep), fraction of the copy rate: float16 standardizing over
// 16 channels of (64, 16, 256, 256), 8 rows -> 4, 0.25 -> 0.39. A budget of 40 words measured
// worse: float32 softmax over 21 channels 4 rows -> 2, 0.71 -> 0.56 (float32 standardizing
// over 32 channels, which spills 144 bytes at 4 rows, would gain: 0.58 -> 0.72).
constexpr std::int64_t kAcrossWords = 64;
bool plan_across(int nops, const std::array<int, kMaxParams>& ops,
                 std::span<const ndarray* const> arrays, std::span<const dtype> types, Shape& kept,
                 StackVector<Shape, kMaxParams>& ks, const StackVector<Shape, kMaxParams>& rs,
                 RowRegisters regs, RowPlan& plan) {
  std::int64_t widest = 1;
  for (int j = 0; j < nops; ++j) {
    const dtype t = types[std::size_t(ops[std::size_t(j)])];
    if (t.is_complex() || ks[std::size_t(j)].back() != std::int64_t(t.itemsize())) return false;
    widest = std::max(widest, std::int64_t(t.itemsize()));
  }
  if (widest > 4) return false;
  auto aligned = [&](std::int64_t rows) {
    if (kept.back() % rows) return false;
    for (int j = 0; j < nops; ++j) {
      const int k = ops[std::size_t(j)];
      const auto bytes = rows * std::int64_t(types[std::size_t(k)].itemsize());
      if (reinterpret_cast<std::uintptr_t>(arrays[std::size_t(k)]->data()) % std::uint64_t(bytes) ||
          rs[std::size_t(j)][0] % bytes)
        return false;
      const Shape& st = ks[std::size_t(j)];
      for (int d = 0; d + 1 < st.size(); ++d)
        if (st[d] % bytes) return false;
    }
    return true;
  };
  std::int64_t lanes = 1;
  auto items = [&] { return pow2_ceil((plan.n + lanes - 1) / lanes); };
  std::int64_t rows = 16 / widest;
  while (rows >= 2 && !aligned(rows)) rows /= 2;
  while (items() > kAcrossItems && lanes < 4) lanes *= 2;
  // Each row a lane takes holds its cached elements and every accumulator in registers.
  auto words = [&] { return rows * (items() * regs.cached_bytes / 4 + regs.state_words); };
  while (rows > 2 && words() > kAcrossWords) rows /= 2;
  if (rows < 2 || items() > kAcrossItems || words() > kAcrossWords) return false;
  kept[kept.size() - 1] /= rows;
  for (int j = 0; j < nops; ++j) {
    Shape& st = ks[std::size_t(j)];
    st[st.size() - 1] *= rows;
  }
  plan.m /= rows;
  set_columns(rows, items(), lanes, plan);
  return true;
}

bool plan_columns(int nops, const std::array<int, kMaxParams>& ops, std::span<const dtype> types,
                  const StackVector<Shape, kMaxParams>& ks, int cached_bytes, RowPlan& plan) {
  std::int64_t most_lanes = 8;
  for (int j = 0; j < nops; ++j) {
    const std::int64_t inner = ks[std::size_t(j)].back();
    const auto isz = std::int64_t(types[std::size_t(ops[std::size_t(j)])].itemsize());
    if (inner != 0 && inner != isz) return false;
    if (inner != 0) most_lanes = std::min(most_lanes, isz);
  }
  std::int64_t lanes = 1;
  auto items = [&] { return pow2_ceil((plan.n + lanes - 1) / lanes); };
  while (items() > kColumnItems && lanes < most_lanes) lanes *= 2;
  if (items() > kColumnItems || items() * cached_bytes / 4 > kMaxCachedRegisters) return false;
  set_columns(1, items(), lanes, plan);
  return true;
}

// What every row plan ends with: output dims, geometry, the operands' strides, index width.
void finish_plan(const Shape& kept, int nops, const std::array<int, kMaxParams>& ops,
                 std::span<const dtype> types, const StackVector<Shape, kMaxParams>& ks,
                 const StackVector<Shape, kMaxParams>& rs, RowPlan& plan) {
  auto& spec = plan.spec;
  spec.out_ndim = std::uint8_t(kept.size());
  // A cluster a row where a row is split: the grid a whole number of clusters.
  const std::int64_t c = spec.cluster;
  plan.grid = std::uint32_t(
      std::clamp<std::int64_t>((plan.m + plan.rows_per_block - 1) / plan.rows_per_block, 1,
                               0x7fffffff / c) *
      c);
  plan.dims = kept;
  plan.dims.push_back(plan.n);
  plan.strides.clear();
  std::int64_t span = 0;
  for (int j = 0; j < nops; ++j) {
    const int k = ops[std::size_t(j)];
    plan.slot[std::size_t(k)] = std::int8_t(j);
    Shape& st = plan.strides.push_back(ks[std::size_t(j)]);
    st.push_back(rs[std::size_t(j)][0]);
    // Rows taken across: a group's access reaches vector_width elements past its first.
    const auto isz = std::int64_t(types[std::size_t(k)].itemsize());
    span =
        std::max(span, codegen::byte_span(plan.dims, st, isz) +
                           (spec.group == codegen::kRowColumns ? spec.vector_width - 1 : 0) * isz);
  }
  spec.index_bits = std::uint8_t(codegen::choose_index_bits(plan.m * plan.n, span));
}

}  // namespace

bool plan_rows(const Shape& loop, std::uint64_t mask, std::span<const ndarray* const> arrays,
               std::span<const dtype> types, int nin, RowRegisters regs, const RowDevice& gpu,
               RowPlan& plan) {
  const int cached_bytes = regs.cached_bytes;
  auto& spec = plan.spec;
  spec = {};
  spec.nparams = std::uint8_t(arrays.size());
  std::array<int, kMaxParams> ops;
  int nops = 0;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    spec.set_param(int(k), types[k], arrays[k] ? OperandKind::array : OperandKind::scalar);
    if (arrays[k]) ops[std::size_t(nops++)] = int(k);
  }
  // Every operand's strides over the kept dims and over the row.
  Shape kept, row;
  StackVector<Shape, kMaxParams> ks, rs, full;
  for (int j = 0; j < nops; ++j) {
    ks.push_back(Shape{});
    rs.push_back(Shape{});
    full.push_back(loop_strides(*arrays[std::size_t(ops[std::size_t(j)])], loop));
  }
  for (int d = 0; d < loop.size(); ++d) {
    const bool reduced = mask >> d & 1;
    (reduced ? row : kept).push_back(loop[d]);
    for (int j = 0; j < nops; ++j)
      (reduced ? rs : ks)[std::size_t(j)].push_back(full[std::size_t(j)][d]);
  }
  if (shape_size(loop) == 0) return false;  // nothing to run (the caller has no work either)
  codegen::collapse_dims(row, rs.span());
  codegen::collapse_dims(kept, ks.span());
  if (row.size() > 1) return false;
  if (row.empty()) {
    row = Shape{1};
    for (auto& s : rs.span()) s = Shape{0};
  }
  if (kept.empty()) {
    kept = Shape{1};
    for (auto& s : ks.span()) s = Shape{0};
  }
  plan.n = row[0];
  plan.m = shape_size(kept);
  // Along the row: unit steps, or none (a broadcast input); outputs move along it. A step of
  // more than one element anywhere makes the rows columns (below).
  std::int64_t widest = 1;
  bool strided = false;
  for (int j = 0; j < nops; ++j) {
    const int k = ops[std::size_t(j)];
    const auto isz = std::int64_t(types[std::size_t(k)].itemsize());
    const std::int64_t step = rs[std::size_t(j)][0];
    if (step == 0 && k >= nin && plan.n > 1) return false;
    strided |= step != 0 && step != isz;
    if (step) widest = std::max(widest, isz);
  }
  if (strided) {
    if (!plan_across(nops, ops, arrays, types, kept, ks, rs, regs, plan) &&
        !plan_columns(nops, ops, types, ks, cached_bytes, plan))
      return false;
    finish_plan(kept, nops, ops, types, ks, rs, plan);
    return true;
  }
  int vw = widest < 16 ? int(16 / widest) : 1;
  auto fits = [&](int w) {
    if (plan.n % w) return false;
    for (int j = 0; j < nops; ++j) {
      const int k = ops[std::size_t(j)];
      if (rs[std::size_t(j)][0] == 0) continue;  // read one element at a time
      const auto bytes = std::uint64_t(w) * types[std::size_t(k)].itemsize();
      if (reinterpret_cast<std::uintptr_t>(arrays[std::size_t(k)]->data()) % bytes) return false;
      for (auto s : ks[std::size_t(j)])
        if (std::uint64_t(std::abs(s)) % bytes) return false;
    }
    return true;
  };
  while (vw > 1 && !fits(vw)) vw /= 2;
  // Shifted windows: rows whose length or start (or a row's stride) is off the widest vectors
  // are read in the aligned 16-byte windows that hold them, rather than in narrower vectors
  // (one element at a time for an odd length). Where every operand that moves along the row
  // has one real itemsize of at most 4 bytes (8-byte windows lost for reductions), its
  // elements aligned to it, and every such input's windows inside its buffer. An operand that
  // sits otherwise against 16 bytes than the first output (layer norm's weights against odd
  // rows, a view starting inside a vector) is read element by element: worth it only where
  // unshifted rows would not fit a block's registers. Rows shorter than 64 windows keep
  // element loads: a row's first and last windows are partial, a large share of a short row.
  // Measured on an H100 (fraction of the copy rate, unshifted -> shifted): softmax of
  // (16384, 4097) 0.70 -> 0.93, (8192, 7777) 0.74 -> 0.95, (2048, 32001) 0.39 -> 0.86,
  // (131072, 511) 0.85 -> 0.94; layer norm of (4096, 16383) 0.40 -> 0.77, (2048, 32001) 0.55 ->
  // 0.76. Without the two conditions: softmax of (262144, 255) 0.95 -> 0.90, layer norm of
  // (16384, 4095) 0.69 -> 0.55 and (524288, 127) 0.87 -> 0.70.
  const int widest_vw = int(16 / widest);
  const int ref = nin < int(arrays.size()) && arrays[std::size_t(nin)] ? nin : -1;
  bool gathers = false;
  auto shiftable = [&] {
    if (ref < 0) return false;
    const auto jref = std::size_t(std::find(ops.begin(), ops.begin() + nops, ref) - ops.begin());
    const auto ref_at = reinterpret_cast<std::uintptr_t>(arrays[std::size_t(ref)]->data());
    for (int j = 0; j < nops; ++j) {
      const int k = ops[std::size_t(j)];
      if (rs[std::size_t(j)][0] == 0) continue;  // one element a row
      const dtype t = types[std::size_t(k)];
      const auto isz = std::int64_t(t.itemsize());
      if (isz != widest || t.is_complex()) return false;
      const auto at = reinterpret_cast<std::uintptr_t>(arrays[std::size_t(k)]->data());
      if (at % std::uintptr_t(isz)) return false;
      for (auto st : ks[std::size_t(j)])
        if (st % isz) return false;
      if (k < nin && !granules_inside_buffer(*arrays[std::size_t(k)])) return false;
      bool same = (at - ref_at) % 16 == 0;
      for (int d = 0; d < int(ks[std::size_t(j)].size()); ++d)
        same = same && (ks[std::size_t(j)][d] - ks[jref][d]) % 16 == 0;
      gathers = gathers || !same;
    }
    return true;
  };
  const bool shifted = widest <= 4 && vw < widest_vw && plan.n >= 64 * widest_vw && shiftable() &&
                       (!gathers || plan.n / vw > std::int64_t(kMaxLanes) * kMaxItems);
  if (shifted) vw = widest_vw;
  // Lanes and vectors per thread: four vectors each (8 past 512 lanes), more lanes while the
  // rows would leave the GPU's threads idle or the registers held would spill. A group of up
  // to 32 lanes per row (several rows per block) or a block.
  // Windows of a shifted row: for its widest shift (the kernel counts held ones the same).
  const std::int64_t nvec = shifted ? (plan.n + 2 * vw - 2) / vw : plan.n / vw;
  const std::int64_t wave = std::int64_t(gpu.sm_count) * 2048;
  std::int64_t lanes =
      std::clamp<std::int64_t>(pow2_ceil((nvec + kItems - 1) / kItems), 1, kMaxLanes);
  while (plan.m * lanes < wave && lanes < kMaxLanes && lanes * 2 * 4 <= nvec) lanes *= 2;
  if (lanes > 32) lanes = std::max<std::int64_t>(lanes, 64);
  std::int64_t items = pow2_ceil((nvec + lanes - 1) / lanes);
  auto registers = [&] { return items * vw * cached_bytes / 4; };
  while ((items > kMaxItems || registers() > kMaxCachedRegisters) && lanes < kMaxLanes) {
    lanes = std::max<std::int64_t>(lanes * 2, 64);
    items = pow2_ceil((nvec + lanes - 1) / lanes);
  }
  std::int64_t shared_bytes = 0;
  if (items > kMaxItems || registers() > kMaxCachedRegisters) {
    // Too long for registers: wide blocks, two per SM, that need rows for both (a row split
    // over a cluster of c blocks counts c); otherwise the reductions run as their own
    // kernels, each spread over the whole GPU.
    const std::int64_t resident = 2 * std::int64_t(gpu.sm_count);
    // Held: kHeldRowItems vectors a thread in registers, the rest of the row in shared memory,
    // half an SM's a block (less the reductions' slots and the runtime's reserve). Measured
    // on an H100 against streamed, fraction of the copy rate: softmax of (2048, 32000) float32
    // 0.72 -> 0.88, layer norm 0.60 -> 0.78, log_softmax of (2097, 32000) 0.77 -> 0.91 (8
    // vectors a thread in registers: 0.80, 0.66, 0.89).
    // One block per SM with all its shared memory ran slower than the passes (H100, (2048,
    // 50257) float32, one element per access: softmax 0.44 against 0.47 of the copy rate,
    // layer norm 0.22 against 0.55).
    items = kHeldRowItems;
    while (items > 1 && registers() > kMaxCachedRegisters) items /= 2;
    const std::int64_t budget =
        std::min(gpu.shared_per_block, gpu.shared_per_sm / 2 - kSharedReserve);
    auto held_bytes = [&](std::int64_t c) {  // a block's, the row over c blocks
      const std::int64_t all = kMaxLanes * c;
      return std::max<std::int64_t>((nvec - all * items + all - 1) / all, 0) * kMaxLanes * vw *
             cached_bytes;
    };
    auto holds = [&](std::int64_t c) {
      return plan.m * c >= resident && cached_bytes > 0 && registers() <= kMaxCachedRegisters &&
             held_bytes(c) <= budget;
    };
    // Streamed, each phase reading the row again, from L2 while the rows two blocks per SM
    // work on fit in three quarters of it (the rest for the outputs' writes). Measured on an
    // H200, rows of 32000 float32 (2048 rows), fraction of the copy rate as passes ->
    // streamed: softmax 0.39 -> 0.59, log_softmax 0.40 -> 0.65, layer norm 0.43 -> 0.43.
    // Inputs every row shares (layer norm's weights) count per row too: counted once,
    // layer norm of (2048, 36000) float32 streamed at 0.54 of the copy rate against 0.58 as
    // passes (H200).
    std::int64_t row_bytes = 0;
    for (int j = 0; j < nops; ++j)
      if (ops[std::size_t(j)] < nin && rs[std::size_t(j)][0] != 0)
        row_bytes += plan.n * std::int64_t(types[std::size_t(ops[std::size_t(j)])].itemsize());
    const bool streams = plan.m >= resident && row_bytes * resident <= gpu.l2_bytes / 4 * 3;
    // Held by one block, else streamed, else held by the fewest blocks of a cluster (sm_90
    // on), else passes. Measured on an H200 (layout sweep, fraction of the copy rate, two
    // runs each), passes -> held by a cluster: softmax of (2048, 50257) float32 0.557, 0.557
    // -> 0.620, 0.643 (2 blocks), layer norm 0.481, 0.479 -> 0.586, 0.597, log_softmax of
    // (1024, 128256) 0.618, 0.618 -> 0.668, 0.681 (4), layer norm of (2048, 36000) 0.581,
    // 0.581 -> 0.603, 0.615 (2). Streamed rows split over a cluster (L2 holding a block's
    // share) measured no better than held: 0.601, 0.588; 0.416, 0.401; 0.681, 0.670; 0.399,
    // 0.398; and softmax of (2048, 36000) streamed by one block beat a cluster's held row
    // (0.705, 0.709 against 0.604, 0.618). The fewest blocks: twice and four times as many
    // ran slower (softmax of (2048, 50257) 0.63 -> 0.49 -> 0.36, layer norm of (2048, 36000)
    // 0.61 -> 0.45 -> 0.27).
    std::int64_t c = 0;
    if (holds(1)) {
      c = 1;
      shared_bytes = held_bytes(1);
    } else if (streams) {
      c = 1;
      items = 0;
    }
    for (std::int64_t k = 2; !c && k <= gpu.cluster_blocks; k *= 2)
      if (holds(k)) c = k, shared_bytes = held_bytes(k);
    if (!c) return false;
    lanes = kMaxLanes * c;
  }
  plan.shared_bytes = std::uint32_t(shared_bytes);
  spec.shared = std::uint8_t(shared_bytes > 0);
  spec.vector_width = std::uint8_t(vw);
  spec.shifted = std::uint8_t(shifted);
  spec.items = std::uint8_t(items);
  spec.group = lanes <= 32 ? codegen::kRowLaneGroup : codegen::kRowBlock;
  spec.wide = lanes >= kMaxLanes;
  spec.cluster = std::uint8_t(std::max<std::int64_t>(lanes / kMaxLanes, 1));
  plan.lanes = int(std::min<std::int64_t>(lanes, kMaxLanes));
  plan.rows_per_block = spec.group ? kGroupThreads / int(lanes) : 1;
  finish_plan(kept, nops, ops, types, ks, rs, plan);
  return true;
}

RowRegisters row_registers(const codegen::RowDefinition& def,
                           std::span<const ndarray* const> arrays, std::span<const dtype> types) {
  RowRegisters regs;
  for (int j = 0; j < def.nin; ++j)
    if (arrays[std::size_t(j)] && __builtin_popcount(def.leaf_use[std::size_t(j)]) > 1)
      regs.cached_bytes += int(types[std::size_t(j)].itemsize());
  regs.state_words = codegen::row_state_words(def);
  return regs;
}

void pack_rows(std::span<const ndarray* const> arrays,
               std::span<const std::array<std::byte, 16>> values, std::span<const dtype> types,
               const RowPlan& plan, KernelArgs& args) {
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    if (!arrays[k]) {
      args.put_value(types[k], values[k].data());
      continue;
    }
    const Shape& st = plan.strides[std::size_t(plan.slot[k])];
    args.put_strided(arrays[k]->data(), st.data(), st.size());
  }
  args.put_index(plan.m);
  args.put_index(plan.n);
  args.put_dims(plan.dims.data(), plan.dims.size());
}

}  // namespace kiln::detail
