#include "elementwise_plan.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>

#include "kiln/codegen/elementwise_emitter.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/codegen/loop_layout.hpp"

namespace kiln::detail {

using codegen::Layout;
using codegen::OperandKind;
using codegen::OperandSpec;

namespace {

using Operands = std::array<int, kMaxParams>;  // loop operand j -> its parameter

// Tiles, boxes and interleaved groups size their shared memory for kiln's block of 256 threads:
// a call that asks for another block size plans its loop without them (strided or gathered).
bool shared_memory_layouts_allowed(const KernelCall& c) {
  return c.options.block_size == 0 || c.options.block_size == codegen::kTiledThreads;
}

// The axis a tiled loop pairs with the last one: the fastest axis (smallest nonzero |stride|)
// of the first operand that runs faster along some axis than along the last (a transposed or
// permuted view); -1 when none does. Broadcast axes (stride 0) never count: a column vector
// is one element per row.
int transposed_axis(const ElementwisePlan& plan, const Operands& ops) {
  const int nd = plan.shape.size(), last = nd - 1;
  for (int j = 0; j < plan.noperands; ++j) {
    if (plan.spec.kind(ops[std::size_t(j)]) != OperandKind::array) continue;
    const Shape& st = plan.strides[std::size_t(j)];
    if (st[last] == 0) continue;
    int best = -1;
    for (int d = 0; d < last; ++d)
      if (st[d] != 0 && std::abs(st[d]) < std::abs(best < 0 ? st[last] : st[best])) best = d;
    if (best >= 0) return best;
  }
  return -1;
}

// The widest itemsize among the loop's array operands (0 when there is none).
std::int64_t widest_array(const KernelCall& c, const Operands& ops, const ElementwisePlan& plan) {
  std::int64_t widest = 0;
  for (int j = 0; j < plan.noperands; ++j)
    if (plan.spec.kind(ops[std::size_t(j)]) == OperandKind::array)
      widest = std::max(widest, std::int64_t(c.arrays[ops[std::size_t(j)]]->itemsize()));
  return widest;
}

// Moves axis `from` to `to`, shifting the axes between (shape, every operand, index steps).
void move_axis(ElementwisePlan& plan, int from, int to) {
  auto move = [&](Shape& s) {
    const std::int64_t v = s[from];
    s.erase(from);
    s.insert(to, v);
  };
  move(plan.shape);
  move(plan.index_strides);
  for (int j = 0; j < plan.noperands; ++j) move(plan.strides[std::size_t(j)]);
}

// Reorders the loop's axes to `order` (a permutation of them).
void reorder_axes(ElementwisePlan& plan, std::span<const int> order) {
  auto apply = [&](Shape& s) {
    Shape out;
    for (int d : order) out.push_back(s[d]);
    s = out;
  };
  apply(plan.shape);
  apply(plan.index_strides);
  for (int j = 0; j < plan.noperands; ++j) apply(plan.strides[std::size_t(j)]);
}

// A tiled loop's rows and cols, each over the one or two axes its side spans.
std::pair<std::int64_t, std::int64_t> tiled_extents(const ElementwisePlan& plan) {
  const int nd = plan.shape.size();
  const bool cc = plan.spec.cols_span_two(), rc = plan.spec.rows_span_two();
  const int rax = nd - 2 - int(cc);
  return {plan.shape[rax] * (rc ? plan.shape[rax - 1] : 1),
          plan.shape[nd - 1] * (cc ? plan.shape[nd - 2] : 1)};
}

// Sides of a tile over two axes (ElementwiseSpec::two_axis_sides), for a loop tiled over
// (rows nd-2, cols nd-1) with something staged, given the tile `plain` it would take without
// them. A side takes a batch axis beside it where the operands along that side (direct ones
// for the cols, staged ones for the rows) run on across it as one line (its stride is the
// side's extent times the side's own), and the flat index does too unless the code never
// reads it, when the plain tile serves the side badly: it pads the side by more than
// kMinFill, or the side's lines in a tile hold under 64 bytes. (224, 611, 34, 14) with x
// permuted (2, 3, 1, 0) then tiles its 136864 rows by 34 x 14 = 476 cols, where 14 cols left
// each tile row 56 bytes of y and z. The other operands find each line of that side with one
// division, so the cols keep one axis where the staged operands move one element of 4 bytes
// or fewer per access and their lines are long enough (a division per element; measured
// slower, bench/README.md, thirty-third round). Where both sides could take the same axis,
// the cols do ((480, 6, 704, 33) float32: 0.60 of the copy rate, 0.48 with the rows over
// 6 x 704). Axes end up (batch..., [r2,] rows, [c2,] cols).
void plan_two_axis_sides(const Operands& ops, ElementwisePlan& plan, bool uses_index,
                         const codegen::TileShape& plain, std::int64_t widest) {
  constexpr double kMinFill = 0.85;
  constexpr std::int64_t kMinLineBytes = 64;
  auto& spec = plan.spec;
  const int nd = plan.shape.size();
  if (nd < 3) return;
  bool any_staged = false;
  for (int j = 0; j < plan.noperands; ++j) any_staged |= spec.staged(ops[std::size_t(j)]);
  if (!any_staged) return;
  const int rax = nd - 2, cax = nd - 1;
  auto line_bytes = [&](int axis, std::int64_t side) {
    return std::min(plan.shape[axis], side) * widest;
  };
  auto served_badly = [&](int axis, std::int64_t side) {
    const std::int64_t n = plan.shape[axis], padded = (n + side - 1) / side * side;
    return double(n) < kMinFill * double(padded) || line_bytes(axis, side) < kMinLineBytes;
  };
  // The batch axis (not `taken`) that side `axis` runs on into, read along by the staged
  // operands or by the others; -1 for none.
  auto partner = [&](int axis, bool staged, int taken) {
    const std::int64_t n = plan.shape[axis];
    for (int d = 0; d < nd - 2; ++d) {
      if (d == taken) continue;
      bool runs_on = !uses_index || plan.index_strides[d] == n * plan.index_strides[axis];
      for (int j = 0; j < plan.noperands && runs_on; ++j) {
        const int k = ops[std::size_t(j)];
        if (spec.kind(k) != OperandKind::array || spec.staged(k) != staged) continue;
        const Shape& st = plan.strides[std::size_t(j)];
        runs_on = st[d] == n * st[axis];
      }
      if (runs_on) return d;
    }
    return -1;
  };
  const bool rows_want = served_badly(rax, plain.rows);
  const bool cols_want =
      served_badly(cax, plain.cols) &&
      !(spec.unit_rows() == 1 && widest <= 4 && line_bytes(cax, plain.cols) >= kMinLineBytes);
  const int c2 = cols_want ? partner(cax, false, -1) : -1;
  const int r2 = rows_want ? partner(rax, true, c2) : -1;
  if (c2 < 0 && r2 < 0) return;
  std::array<int, kMaxNdim> order{};
  int n = 0;
  for (int d = 0; d < nd - 2; ++d)
    if (d != c2 && d != r2) order[std::size_t(n++)] = d;
  if (r2 >= 0) order[std::size_t(n++)] = r2;
  order[std::size_t(n++)] = rax;
  if (c2 >= 0) order[std::size_t(n++)] = c2;
  order[std::size_t(n++)] = cax;
  reorder_axes(plan, std::span(order.data(), std::size_t(n)));
  spec.two_axis_sides = std::uint8_t((c2 >= 0 ? 1 : 0) | (r2 >= 0 ? 2 : 0));
}

// Units for a tiled loop of 1- to 4-byte dtypes: direct operands move u elements per access
// along the cols, staged ones along the rows, u the largest power of two up to
// codegen::max_tiled_unit where the axis holds whole units and every operand that takes them
// (stride one element along that axis) is aligned for them at every unit. Measured on an H200
// (bench/layout_sweep): with one element per access a tiled float32 loop ran at 0.60-0.78 of
// the copy rate and float16 at 0.45-0.53, where float64, the same loop with twice the bytes
// per access, reached 0.88-0.97. float16 by pairs (4 bytes) stayed at 0.45-0.64; by fours
// (8 bytes) 0.62-0.86 and by eights (16 bytes) 0.72-0.86 on the same layouts.
void plan_tile_units(const KernelCall& c, const Operands& ops, ElementwisePlan& plan) {
  auto& spec = plan.spec;
  const int nd = plan.shape.size();
  if (widest_array(c, ops, plan) == 0) return;
  bool any_staged = false;
  for (int j = 0; j < plan.noperands; ++j) any_staged |= spec.staged(ops[std::size_t(j)]);
  // A side over two axes (two_axis_sides) holds units where the pair does: the operands that
  // take them run across both as one line, so the outer axis' stride needs no check.
  const int cax = nd - 1, rax = nd - 2 - int(spec.cols_span_two());
  auto units_fit = [&](int u, bool staged, int axis) {
    const bool two = staged ? spec.rows_span_two() : spec.cols_span_two();
    if (plan.shape[axis] * (two ? plan.shape[axis - 1] : 1) % u != 0) return false;
    for (int j = 0; j < plan.noperands; ++j) {
      const int k = ops[std::size_t(j)];
      if (spec.kind(k) != OperandKind::array || spec.staged(k) != staged) continue;
      const ndarray& a = *c.arrays[k];
      const auto isz = std::int64_t(a.itemsize());
      const Shape& st = plan.strides[std::size_t(j)];
      if (st[axis] != isz) continue;
      const std::int64_t bytes = u * isz;
      if (reinterpret_cast<std::uintptr_t>(a.data()) % std::uintptr_t(bytes) != 0) return false;
      for (int d = 0; d < nd; ++d)
        if (d != axis && !(two && d == axis - 1) && st[d] % bytes != 0) return false;
    }
    return true;
  };
  auto largest = [&](bool staged, int axis) {
    int u = codegen::max_tiled_unit(spec);
    while (u > 1 && !units_fit(u, staged, axis)) u /= 2;
    return u;
  };
  // Each side's units as codegen::tiled_units pairs them: an odd axis or a misaligned view on
  // one side no longer costs the other side its units. Measured on an H200 (layout sweep,
  // bench/README.md, twelfth round), one unit for both sides against each its own: float16
  // (4024, 16677) transposed 0.47 -> 0.61, float16 (64, 12, 266, 329) permuted 0.44 -> 0.61,
  // float32 (42880, 1565) both inputs transposed 0.61 -> 0.80, float32 (749, 315, 45, 6) into a
  // permuted output 0.58 -> 0.85.
  const auto units = codegen::tiled_units(largest(false, cax), any_staged ? largest(true, rax) : 1);
  spec.log2_unit_cols = std::uint8_t(std::countr_zero(unsigned(units.cols)));
  spec.log2_unit_rows = std::uint8_t(std::countr_zero(unsigned(units.rows)));
  // The units may raise the elements a thread takes (codegen::tiled_elements_per_thread), and
  // so the shared tiles: within shared memory, else units of half the size.
  if (codegen::tiled_shared_bytes(spec) > codegen::kMaxTiledSharedBytes) {
    spec.log2_unit_cols = std::min<std::uint8_t>(spec.log2_unit_cols, 2);
    spec.log2_unit_rows = std::min<std::uint8_t>(spec.log2_unit_rows, 2);
  }
}

// Runs (OperandSpec::tiled_run): where a tile can hold every row of the loop and each staged
// operand steps one element down the rows and rows x itemsize across them, each tile of a
// staged operand is one contiguous run of memory, which the kernel moves as 16-byte vectors
// instead of a unit down each short row. Planned only where every staged operand is such a
// run (the kernel tests alignment per tile, and keeps the element path for the rest); other
// tiled kernels keep their source, so the run code costs them nothing. Measured on an H100
// (layout sweep, fraction of the copy rate, bench/README.md, thirty-seventh round): float32
// (n, 21).T - y 0.60 -> 0.89, float16 0.62 -> 0.68, float16 (3159232, 21) into a transposed
// output 0.42 -> 0.56, float64 (1715328, 39) 0.76 -> 0.92; float16 (2395111, 28), whose element
// path moves rows by 4, lost 0.76 -> 0.70, so runs take staged operands moved one element a unit
// down the rows only (codegen::tiled_run_operand).
void plan_runs(const KernelCall& c, const Operands& ops, ElementwisePlan& plan) {
  auto& spec = plan.spec;
  const int nd = plan.shape.size();
  const int rax = nd - 2, cax = nd - 1;
  const std::int64_t rows = plan.shape[rax];
  bool any = false;
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    if (!spec.staged(k)) continue;
    if (!codegen::tiled_run_operand(spec, k)) return;
    const auto isz = std::int64_t(c.arrays[k]->itemsize());
    const Shape& st = plan.strides[std::size_t(j)];
    if (st[rax] != isz || st[cax] != rows * isz) return;
    // A tile's run moves by vectors only where it starts on 16 bytes (the kernel checks each
    // tile); where a batch stride is off 16 bytes most tiles would take the element path beside
    // the run code, which measured slower than the element kernel alone (H100, float32 (264, 112,
    // 265, 9) into a permuted output, a batch stride of 9540 bytes: 0.69 -> 0.49 of the copy
    // rate). The cols a tile starts at step by 16 bytes or more anyway (tile_shape: its cols
    // cover 128 bytes of the widest dtype, a power of two of elements).
    if (reinterpret_cast<std::uintptr_t>(c.arrays[k]->data()) % 16 != 0) return;
    for (int d = 0; d < rax; ++d)
      if (plan.shape[d] > 1 && st[d] % 16 != 0) return;
    any = true;
  }
  if (!any) return;
  auto runs = spec;
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    if (runs.staged(k)) runs.params[std::size_t(k)].staged = OperandSpec::tiled_run;
  }
  const auto tile = codegen::tile_shape(runs, rows, plan.shape[cax]);
  if (tile.rows < rows) return;
  spec = runs;
  plan.tile = tile;
  plan.tiles = tile.tiles(c.size / (rows * plan.shape[cax]), rows, plan.shape[cax]);
}

// Tiles the loop over (axis r, the last axis), r moved next to the last, with its units
// (they decide the elements a thread takes, and so the tile's shape). False (nothing changed)
// when an axis is too short for a tile, the block size is not the tile's, or the staged tiles
// would not fit in shared memory.
bool plan_tiles(const KernelCall& c, const Operands& ops, ElementwisePlan& plan, int r,
                bool uses_index = true) {
  auto& spec = plan.spec;
  const int nd = plan.shape.size();
  if (nd < 2 || !shared_memory_layouts_allowed(c)) return false;
  if (plan.shape[r] < codegen::kMinTileSide || plan.shape[nd - 1] < codegen::kMinTileSide)
    return false;
  if (codegen::tiled_shared_bytes(spec) > codegen::kMaxTiledSharedBytes) return false;
  if (r != nd - 2) move_axis(plan, r, nd - 2);
  spec.layout = Layout::tiled;
  spec.ndim = std::uint8_t(nd);
  spec.vector_width = 1;
  spec.two_axis_sides = 0;
  plan_tile_units(c, ops, plan);
  plan.tile = codegen::tile_shape(spec, plan.shape[nd - 2], plan.shape[nd - 1]);
  plan_two_axis_sides(ops, plan, uses_index, plan.tile, widest_array(c, ops, plan));
  if (spec.two_axis_sides != 0) plan_tile_units(c, ops, plan);
  const auto [rows, cols] = tiled_extents(plan);
  plan.tile = codegen::tile_shape(spec, rows, cols);
  plan.tiles = plan.tile.tiles(c.size / (rows * cols), rows, cols);
  if (spec.two_axis_sides == 0) plan_runs(c, ops, plan);
  return true;
}

// Tiles the loop when an operand is transposed against the last axis: operands that run
// faster along the paired axis than along the last are staged.
bool plan_transposed(const KernelCall& c, const Operands& ops, ElementwisePlan& plan,
                     bool uses_index) {
  auto& spec = plan.spec;
  const int nd = plan.shape.size();
  if (nd < 2) return false;
  const int r = transposed_axis(plan, ops);
  if (r < 0) return false;
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    if (spec.kind(k) != OperandKind::array) continue;
    const Shape& st = plan.strides[std::size_t(j)];
    spec.params[std::size_t(k)].staged =
        std::uint8_t(st[r] != 0 && std::abs(st[r]) < std::abs(st[nd - 1]));
  }
  if (plan_tiles(c, ops, plan, r, uses_index)) return true;
  for (int k = 0; k < c.nparams; ++k) spec.params[std::size_t(k)].staged = 0;
  return false;
}

// Packed boxes: two inputs contiguous along two different axes, neither the output's last (C),
// which a tile of one of them and C cannot serve both (tiled, the second would be copied to C
// order first, or read a sector per element). The box holds C and both axes: the longer one is
// A, chunked by a power of two, the other B, whole; A grows while the box is under 2048
// elements or an input contiguous along A reads under 128 bytes at a time, within 48 KiB of
// shared memory. Each staged input must read a 32-byte sector or more at a time along its axis.
// Measured on an H200 (layout sweep), (288, 320, 39, 19) float32 with its inputs permuted
// differently: 0.27 of the copy rate tiled after copying one input, 0.46 in boxes. Where a
// tile serves (one staged axis, however short), boxes measured slower: float64 (22, 236, 192,
// 64) permuted 0.94 tiled, 0.75 boxed; (184, 6, 163, 352) 0.98, 0.71; int32 (155, 128, 35, 97)
// 0.46, 0.38.
bool plan_packed(const KernelCall& c, const Operands& ops, ElementwisePlan& plan) {
  auto& spec = plan.spec;
  const int nd = plan.shape.size(), last = nd - 1;
  if (nd < 3 || !shared_memory_layouts_allowed(c)) return false;
  std::array<int, 3> axes{last, -1, -1};
  int naxes = 1;
  std::uint64_t staged = 0;
  std::int64_t staged_bytes = 0;
  std::array<int, kMaxParams> fastest{};
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    fastest[std::size_t(j)] = last;
    if (spec.kind(k) != OperandKind::array) continue;
    const auto isz = std::int64_t(c.types[k].itemsize());
    const Shape& st = plan.strides[std::size_t(j)];
    if (st[last] == 0 || std::abs(st[last]) == isz) continue;
    if (c.def.params[std::size_t(k)].is_output) return false;
    int f = last;
    for (int d = 0; d < nd; ++d)
      if (st[d] != 0 && std::abs(st[d]) < std::abs(st[f])) f = d;
    if (f == last) continue;  // steps along C (a slice): no order reads it along lines
    fastest[std::size_t(j)] = f;
    if (std::find(axes.begin(), axes.begin() + naxes, f) == axes.begin() + naxes) {
      if (naxes == 3) return false;
      axes[std::size_t(naxes++)] = f;
    }
    staged |= std::uint64_t(1) << k;
    staged_bytes += isz;
  }
  if (naxes != 3) return false;
  int a = axes[1], b = axes[2];
  if (plan.shape[b] > plan.shape[a]) std::swap(a, b);
  const std::int64_t na = plan.shape[a];
  codegen::PackedBox box{0, plan.shape[b], plan.shape[last]};
  auto fits = [&](int log2_a) {
    codegen::PackedBox t = box;
    t.log2_a = log2_a;
    return t.shared_bytes(std::size_t(staged_bytes)) <= codegen::kMaxPackedSharedBytes;
  };
  if (!fits(0)) return false;
  auto run_bytes = [&](int j) {  // what input j reads at a time along its axis
    const int f = fastest[std::size_t(j)];
    return (f == a   ? box.a()
            : f == b ? box.b
                     : box.c) *
           std::int64_t(c.types[ops[std::size_t(j)]].itemsize());
  };
  auto short_along_a = [&] {
    for (int j = 0; j < plan.noperands; ++j)
      if ((staged >> ops[std::size_t(j)] & 1) && fastest[std::size_t(j)] == a && run_bytes(j) < 128)
        return true;
    return false;
  };
  while (box.a() < na && fits(box.log2_a + 1) && (box.elements() < 2048 || short_along_a()))
    ++box.log2_a;
  for (int j = 0; j < plan.noperands; ++j)
    if ((staged >> ops[std::size_t(j)] & 1) && run_bytes(j) < 32) return false;

  std::array<int, kMaxNdim> order{};
  int n = 0;
  for (int d = 0; d < nd; ++d)
    if (d != a && d != b && d != last) order[std::size_t(n++)] = d;
  order[std::size_t(n++)] = a;
  order[std::size_t(n++)] = b;
  order[std::size_t(n++)] = last;
  reorder_axes(plan, std::span(order.data(), std::size_t(n)));
  spec.layout = Layout::packed;
  spec.ndim = std::uint8_t(nd);
  spec.vector_width = 1;
  for (int k = 0; k < c.nparams; ++k)
    spec.params[std::size_t(k)].staged = std::uint8_t(staged >> k & 1);
  plan.box = box;
  plan.tiles = c.size / (na * box.b * box.c) * ((na + box.a() - 1) / box.a());
  return true;
}

// Array inputs a tiled loop would read a sector per element: varying along the last axis (a
// broadcast there is one element a tile row) and contiguous along a third axis, neither of the
// tile's two (permuted differently from the operand the tile follows), at least 8 elements
// long there, 4 MiB or more (below that a second launch costs more than it saves). Only where
// the first output is C-contiguous, so the loop runs in C order: copied to C order first (a
// tiled copy along that axis), such an input then runs along the last axis, and the loop reads
// it whole. Measured on an H100 (bench/layout_sweep), (288, 320, 39, 19) float32 with its two
// inputs permuted differently: 0.25 of the copy rate read in place, 0.34 copied first.
std::uint64_t scattered_inputs(const KernelCall& c, const Operands& ops,
                               const ElementwisePlan& plan) {
  constexpr std::size_t kMinBytes = std::size_t(4) << 20;
  const int nd = plan.shape.size();
  const int first_tiled = nd - 2 - int(plan.spec.cols_span_two()) - int(plan.spec.rows_span_two());
  for (int k = c.def.nin; k < c.nparams; ++k)
    if (c.arrays[k] && !c.is_raw(k)) {
      if (!c.arrays[k]->is_c_contiguous()) return 0;
      break;
    }
  std::uint64_t mask = 0;
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    if (plan.spec.kind(k) != OperandKind::array || c.def.params[std::size_t(k)].is_output) continue;
    const ndarray& a = *c.arrays[k];
    if (a.nbytes() < kMinBytes) continue;
    const Shape& st = plan.strides[std::size_t(j)];
    if (st[nd - 1] == 0) continue;
    int f = -1;
    for (int d = 0; d < nd; ++d)
      if (st[d] != 0 && (f < 0 || std::abs(st[d]) < std::abs(st[f]))) f = d;
    if (f < 0 || f >= first_tiled || std::abs(st[f]) != std::int64_t(a.itemsize()) ||
        plan.shape[f] < 8)
      continue;
    mask |= std::uint64_t(1) << k;
  }
  return mask;
}

// Row tiles (tiles of the last two axes, nothing staged): each thread finds its place once
// per tile and steps each operand by a constant, where the strided loop unravels every
// element. Measured on an H200 (bench/README.md, layout sweep), they win (+0.02 to +0.24 of
// the copy rate) only where (1) the strided loop would move one element per item, (2) every
// array input is broadcast along some axis, so the output is most of the bytes (a full input
// streamed in tiles of 32 columns ran slower: (1316, 50995) - (1316, 1) 0.68 against 0.92),
// and (3) the tiles cover the loop with at most a tenth of their threads idle (0.61-0.77 of
// them busy ran 0.03-0.09 slower).
bool plan_row_tiles(const KernelCall& c, const Operands& ops, ElementwisePlan& plan) {
  const int nd = plan.shape.size();
  if (nd < 2 || plan.spec.vector_width != 1) return false;
  int inputs = 0;
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    if (plan.spec.kind(k) != OperandKind::array || c.def.params[std::size_t(k)].is_output) continue;
    const Shape& st = plan.strides[std::size_t(j)];
    bool broadcast = false;  // along an axis longer than 1 (reduce_dims off keeps size-1 axes)
    for (int d = 0; d < nd && !broadcast; ++d) broadcast = st[d] == 0 && plan.shape[d] > 1;
    if (!broadcast) return false;
    ++inputs;
  }
  if (inputs == 0) return false;
  const std::int64_t rows = plan.shape[nd - 2], cols = plan.shape[nd - 1];
  const auto tile = codegen::tile_shape(plan.spec, rows, cols);
  const std::int64_t padded = (rows + tile.rows - 1) / tile.rows * tile.rows *
                              ((cols + tile.cols - 1) / tile.cols * tile.cols);
  if (10 * rows * cols < 9 * padded) return false;
  return plan_tiles(c, ops, plan, nd - 2);
}

// Elements per vector of a strided loop, along its last axis (which must hold whole vectors,
// every operand with a unit last-axis stride aligned for them at every vector). Measured on an
// H200 (bench/layout_sweep, bench/README.md): for 4- and 8-byte dtypes one element per item
// (four per thread) ran at 0.89-0.99 of the copy rate where vectors of 16 bytes ran at
// 0.52-0.92, so those take 1; 1- and 2-byte dtypes take vectors of at least 8 bytes when the
// layout allows (float16 by 8: 0.74-0.95; by 2: 0.26-0.39; one by one: 0.68-0.83), else 1.
int strided_vector_width(const KernelCall& c, const Operands& ops, const ElementwisePlan& plan) {
  const int nd = plan.shape.size(), last = nd - 1;
  const std::int64_t widest = widest_array(c, ops, plan);
  if (widest == 0) return 1;
  for (int w = int(16 / widest); w > 1 && codegen::strided_width_planned(w, int(widest)); w /= 2) {
    if (plan.shape[last] % w != 0) continue;
    bool any = false, aligned = true;
    for (int j = 0; j < plan.noperands && aligned; ++j) {
      const int k = ops[std::size_t(j)];
      if (plan.spec.kind(k) != OperandKind::array) continue;
      const ndarray& a = *c.arrays[k];
      const auto isz = std::int64_t(a.itemsize());
      const Shape& st = plan.strides[std::size_t(j)];
      if (std::abs(st[last]) != isz) continue;
      any = true;
      const std::int64_t bytes = w * isz;
      // A reversed operand's vector starts at its last element.
      const auto first = reinterpret_cast<std::uintptr_t>(a.data()) -
                         std::uintptr_t(st[last] < 0 ? (w - 1) * isz : 0);
      aligned = first % std::uintptr_t(bytes) == 0;
      for (int d = 0; d < last && aligned; ++d) aligned = st[d] % bytes == 0;
    }
    if (!any) return 1;
    if (aligned) return w;
  }
  return 1;
}

// Gathered loops for 1- to 4-byte dtypes whose outputs are C-contiguous over the loop and
// whose last axis takes no strided vectors: outputs by 16-byte vectors of the flat loop,
// inputs stepped in groups from one unravel per vector. Measured on an H200
// (bench/layout_sweep): one unravel per element held float32 broadcasts into contiguous outputs
// at 0.46-0.71 of the copy rate and float16 ones at 0.25-0.38. Planes of the last two axes hold
// at least 8 vectors, so that few vectors cross into the next plane (a full unravel).
bool plan_gathered(const KernelCall& c, const Operands& ops, ElementwisePlan& plan) {
  auto& spec = plan.spec;
  if (spec.vector_width != 1) return false;
  const int nd = plan.shape.size();
  const std::int64_t widest = widest_array(c, ops, plan);
  if (widest == 0 || widest > 4) return false;
  // Inputs that run along the rows with unit steps, aligned for vectors of `w` (base and every
  // other stride): each reads a whole vector in one load.
  auto vector_inputs = [&](std::int64_t w) {
    std::uint64_t mask = 0;
    for (int j = 0; j < plan.noperands; ++j) {
      const int k = ops[std::size_t(j)];
      if (spec.kind(k) != OperandKind::array || c.def.params[std::size_t(k)].is_output) continue;
      const auto isz = std::int64_t(c.types[k].itemsize());
      const Shape& st = plan.strides[std::size_t(j)];
      bool fits =
          st[nd - 1] == isz &&
          reinterpret_cast<std::uintptr_t>(c.arrays[k]->data()) % std::uintptr_t(w * isz) == 0;
      for (int d = 0; d + 1 < nd && fits; ++d) fits = st[d] % (w * isz) == 0;
      if (fits) mask |= std::uint64_t(1) << k;
    }
    return mask;
  };
  // Outputs by 16-byte vectors; inputs stepped in groups of the widest power of two up to a
  // vector that the last axis holds whole (rows of 1226 float16: pairs), so a vector crosses
  // rows only between groups, and inputs along the rows read a group in one load.
  const std::int64_t vw = 16 / widest;
  const std::int64_t group =
      nd > 1 ? std::int64_t(1) << std::min(std::countr_zero(std::uint64_t(vw)),
                                           std::countr_zero(std::uint64_t(plan.shape[nd - 1])))
             : 1;
  const std::uint64_t vectors = group > 1 ? vector_inputs(group) : 0;
  if (nd > 1 && plan.shape[nd - 1] * plan.shape[nd - 2] < 8 * vw) return false;
  // C-contiguous over the loop and aligned for a vector: what every output must be, and what
  // lets an input read its vectors where the output writes its own.
  auto dense_vectors = [&](int j, int k) {
    const auto isz = std::int64_t(c.types[k].itemsize());
    if (reinterpret_cast<std::uintptr_t>(c.arrays[k]->data()) % std::uintptr_t(vw * isz) != 0)
      return false;
    const Shape dense = c_strides(plan.shape, isz);
    const Shape& st = plan.strides[std::size_t(j)];
    for (int d = 0; d < nd; ++d)
      if (plan.shape[d] > 1 && st[d] != dense[d]) return false;
    return true;
  };
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    if (spec.kind(k) == OperandKind::array && c.def.params[std::size_t(k)].is_output &&
        !dense_vectors(j, k))
      return false;
  }
  spec.layout = Layout::gathered;
  spec.vector_width = std::uint8_t(vw);
  spec.log2_unit_cols = std::uint8_t(std::countr_zero(std::uint64_t(group)));
  // Each input's read: constant along the rows (a column, a per-channel vector: one read per
  // row); laid out as the output (x in x - mean(x, (0, 2, 3), true) over rows of odd length:
  // whole vectors where the output's are, no index kept); whole groups; element by element.
  // Rows of a vector or more whose inputs are all of the first two kinds cross one row end
  // per vector at most (gathered_long_rows), found once; inputs stepped along the rows keep
  // the running wrap: offsets in two rows cost registers ((13312, 1, 458) - (13312, 11, 1)
  // float32: 30 -> 37 registers, occupancy 100% -> 75%, 0.79 -> 0.57 of the copy rate, H200).
  bool constants_only = true;
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    if (spec.kind(k) != OperandKind::array || c.def.params[std::size_t(k)].is_output) continue;
    auto& how = spec.params[std::size_t(k)].staged;
    if (nd > 1 && plan.strides[std::size_t(j)][nd - 1] == 0)
      how = OperandSpec::gathered_row_constant;
    else if (dense_vectors(j, k))
      how = OperandSpec::gathered_as_output;
    else
      how = vectors >> k & 1 ? OperandSpec::gathered_by_group : OperandSpec::gathered_by_element;
    constants_only &=
        how == OperandSpec::gathered_row_constant || how == OperandSpec::gathered_as_output;
  }
  spec.log2_unit_rows =
      std::uint8_t(nd > 1 && group < vw && plan.shape[nd - 1] >= vw && constants_only);
  return true;
}

// Interleaved loops: the last two planned axes are a short one S (2 to kMaxInterleave
// elements) and a long one L, and every array operand runs along L (a line, or an input
// broadcast across S), is an input constant along L (a per-channel mean: one element a row),
// or runs along S with S elements along L (interleaved: an image's channels in NHWC, a tall
// narrow matrix's rows), so that the S x u elements a thread takes of it are one
// contiguous run. u is the widest vector (16 bytes of the widest dtype down to one element)
// that every operand's alignment allows (and S x u <= kMaxInterleavedGroup). The kernel reads
// each operand's way from its strides, as here. Either axis may come last in the plan (the loop
// follows the first output, which may be the interleaved one); the kernel takes S before L.
// Measured on an H100 (layout sweep, bench/README.md, thirty-fifth round): int8 NHWC <-> NCHW
// with 4 channels ran tiled at 0.40-0.43 of the copy rate (units of 4 bytes through shared
// memory), (n, 3).T - y float32 gathered at 0.61 (x read once for each of its 3 columns).
bool plan_interleaved(const KernelCall& c, const Operands& ops, ElementwisePlan& plan) {
  auto& spec = plan.spec;
  const int nd = plan.shape.size();
  const std::int64_t widest = widest_array(c, ops, plan);
  if (nd < 2 || widest == 0 || widest > 16 || !shared_memory_layouts_allowed(c)) return false;
  for (const int sax : {nd - 2, nd - 1}) {
    const int lax = sax == nd - 1 ? nd - 2 : nd - 1;
    const std::int64_t S = plan.shape[sax], L = plan.shape[lax];
    if (S < 2 || S > codegen::kMaxInterleave) continue;
    // Each operand: 1 a run, 2 a line, 3 an input constant along L (a per-channel mean), 0
    // none of these.
    std::array<int, kMaxParams> role{};
    bool runs = false, lines = false, fits = true;
    for (int j = 0; j < plan.noperands && fits; ++j) {
      const int k = ops[std::size_t(j)];
      if (spec.kind(k) != OperandKind::array) continue;
      const auto isz = std::int64_t(c.types[k].itemsize());
      const Shape& st = plan.strides[std::size_t(j)];
      const bool out = c.def.params[std::size_t(k)].is_output;
      if (st[sax] == isz && st[lax] == S * isz) {
        role[std::size_t(j)] = 1;
        runs = true;
      } else if (st[lax] == isz && (st[sax] != 0 || !out)) {
        role[std::size_t(j)] = 2;
        lines |= st[sax] != 0;
      } else if (st[lax] == 0 && !out) {
        role[std::size_t(j)] = 3;
      } else {
        fits = false;
      }
    }
    // Some operand runs along each axis: a transposition. (A broadcast into short rows, an
    // input across S beside runs only, stays gathered, as measured there.)
    if (!fits || !runs || !lines) continue;
    // The widest vector every operand's base, batch strides and (lines) row stride allow.
    std::int64_t u = 16 / widest;
    for (int j = 0; j < plan.noperands; ++j) {
      if (role[std::size_t(j)] == 0 || role[std::size_t(j)] == 3) continue;  // 3: one element a row
      const int k = ops[std::size_t(j)];
      const auto isz = std::int64_t(c.types[k].itemsize());
      const Shape& st = plan.strides[std::size_t(j)];
      auto holds = [&](std::int64_t bytes) { return bytes % (u * isz) == 0; };
      auto all_hold = [&] {
        bool ok = holds(std::int64_t(reinterpret_cast<std::uintptr_t>(c.arrays[k]->data()) % 16));
        for (int d = 0; d < nd - 2; ++d) ok = ok && holds(st[d]);
        return ok && (role[std::size_t(j)] == 1 || holds(st[sax]));
      };
      while (u > 1 && !all_hold()) u /= 2;
    }
    while (S * u > codegen::kMaxInterleavedGroup) u /= 2;
    if (L < 2 * u) continue;
    if (sax == nd - 1) move_axis(plan, nd - 1, nd - 2);
    spec.layout = Layout::interleaved;
    spec.ndim = std::uint8_t(nd);
    spec.vector_width = std::uint8_t(u);
    spec.unroll = std::uint8_t(S);
    return true;
  }
  return false;
}

}  // namespace

void plan_elementwise(const KernelCall& c, const codegen::ElementwiseDefinition& def,
                      bool reduce_dims, ElementwisePlan& plan) {
  Operands ops;
  int nops = 0, first_output = -1;
  for (int k = 0; k < c.nparams; ++k)
    if (c.arrays[k] && !c.is_raw(k)) {
      plan.strides.push_back(loop_strides(*c.arrays[k], c.shape));
      plan.slot[std::size_t(k)] = std::int8_t(nops);
      if (first_output < 0 && k >= def.nin) first_output = nops;
      ops[std::size_t(nops++)] = k;
    }
  plan.noperands = nops;
  plan.shape = c.shape;
  if (reduce_dims)
    codegen::collapse_dims(plan.shape, plan.strides.span(), def.uses_index ? -1 : first_output);

  auto& spec = plan.spec;
  spec.nparams = std::uint8_t(c.nparams);
  bool contiguous = true;
  std::int64_t array_span = 0, raw_span = 0;
  std::array<codegen::VectorOperand, kMaxParams> vec;
  int nvec = 0;
  for (int j = 0; j < nops; ++j) {
    const int k = ops[std::size_t(j)];
    const ndarray& a = *c.arrays[k];
    const auto isz = std::int64_t(a.itemsize());
    const Shape& st = plan.strides[std::size_t(j)];
    if (!c.def.params[std::size_t(k)].is_output && codegen::is_uniform(st)) {
      spec.set_param(k, c.types[k], OperandKind::uniform);
      continue;
    }
    spec.set_param(k, c.types[k], OperandKind::array);
    contiguous &= codegen::is_contiguous_over(plan.shape, st, isz);
    array_span = std::max(array_span, codegen::byte_span(plan.shape, st, isz));
    vec[std::size_t(nvec++)] = {reinterpret_cast<std::uintptr_t>(a.data()), isz};
  }
  for (int k = 0; k < c.nparams; ++k)
    if (set_scalar_or_raw(c, k, spec) && c.arrays[k]) {
      const ndarray& a = *c.arrays[k];
      raw_span = std::max(raw_span,
                          codegen::byte_span(a.shape(), a.strides(), std::int64_t(a.itemsize())));
    }
  const auto strided_index_bits = [&] {
    return std::uint8_t(codegen::choose_index_bits(c.size, std::max(array_span, raw_span)));
  };
  if (contiguous) {
    // Contiguous operands are indexed by element: only the loop size (and raw arrays, which
    // compute byte offsets) limit the index width.
    spec.layout = Layout::contiguous;
    spec.ndim = 1;
    spec.vector_width =
        std::uint8_t(codegen::choose_vector_width(std::span(vec.data(), std::size_t(nvec))));
    spec.index_bits = std::uint8_t(codegen::choose_index_bits(c.size, raw_span));
    spec.unroll = codegen::planned_unroll(spec, def.nin);
    if (!codegen::short_contiguous_vectors(spec)) return;
    // Some operand sits at an offset no vector of 8 bytes or more divides (np.diff's x[1:]).
    // Where the outputs are aligned for a gathered loop's vectors (plan_gathered checks), they
    // keep them and only the misaligned inputs go element by element, instead of every operand
    // moving a few bytes an access. Measured on an H100 (layout sweep, misaligned cases,
    // fraction of the copy rate), one input one element in: float16, bfloat16 and int16
    // 0.60-0.63 -> 0.95-0.97, float32 0.89 -> 0.98-0.99. An output off its vectors stays
    // contiguous, four vectors a thread (codegen::planned_unroll).
    const codegen::ElementwiseSpec contiguous_spec = spec;
    plan.index_strides = c_strides(plan.shape, 1);
    spec.vector_width = 1;
    if (plan_gathered(c, ops, plan)) {
      spec.ndim = std::uint8_t(plan.shape.size());
      spec.index_bits = strided_index_bits();
      spec.unroll = codegen::planned_unroll(spec, def.nin);
      return;
    }
    spec = contiguous_spec;
    return;
  }
  spec.index_bits = strided_index_bits();
  // C order over the planned loop: the user's i when the axes kept their order (uses_index).
  plan.index_strides = c_strides(plan.shape, 1);
  if (plan_interleaved(c, ops, plan)) {
    // a short axis beside a long one: nothing more to plan
  } else if (plan_packed(c, ops, plan)) {
    // boxes: nothing more to plan
  } else if (plan_transposed(c, ops, plan, def.uses_index)) {
    plan.scattered = scattered_inputs(c, ops, plan);
  } else {
    spec.layout = Layout::strided;
    spec.ndim = std::uint8_t(plan.shape.size());
    spec.vector_width = std::uint8_t(strided_vector_width(c, ops, plan));
    // Contiguous outputs: gathered loops; output-dominant broadcasts otherwise: row tiles
    // where they were measured faster.
    if (!plan_gathered(c, ops, plan)) plan_row_tiles(c, ops, plan);
  }
  spec.unroll = codegen::planned_unroll(spec, def.nin);
}

void pack_elementwise(const KernelCall& c, const ElementwisePlan& plan, KernelArgs& args) {
  const auto& spec = plan.spec;
  for (int k = 0; k < c.nparams; ++k) {
    switch (spec.kind(k)) {
      case OperandKind::scalar:
        args.put_value(c.types[k], c.values[std::size_t(k)].data());
        break;
      case OperandKind::uniform:
        args.put_pointer(c.arrays[k]->data());
        break;
      case OperandKind::raw_array: {
        const ndarray& a = *c.arrays[k];
        args.put_raw_array(a.data(), a.size(), a.shape().data(), a.strides().data(), a.ndim());
        break;
      }
      case OperandKind::array:
      default:
        if (spec.layout == Layout::contiguous)
          args.put_pointer(c.arrays[k]->data());
        else
          args.put_strided(c.arrays[k]->data(),
                           plan.strides[std::size_t(plan.slot[std::size_t(k)])].data(), spec.ndim);
    }
  }
  args.put_index(c.size);
  if (spec.layout == Layout::contiguous) return;
  // What the kernel unravels: vectors along a strided loop's last axis, elements of a
  // gathered loop, tiles of a tiled loop's rows and cols, boxes of a packed loop's A, groups
  // of an interleaved loop's L.
  const int nd = spec.ndim;
  Shape divisors = plan.shape;
  if (spec.layout == Layout::packed) {
    divisors[nd - 3] = (divisors[nd - 3] + plan.box.a() - 1) / plan.box.a();
    args.put_loop_dims(plan.shape.data(), plan.index_strides.data(), divisors.data(), nd,
                       plan.box.log2_a);
    return;
  }
  if (spec.layout != Layout::tiled) {
    // Strided: vectors along the last axis; interleaved: whole groups along L.
    if (spec.layout == Layout::strided || spec.layout == Layout::interleaved)
      divisors[nd - 1] /= spec.vector_width;
    args.put_loop_dims(plan.shape.data(), plan.index_strides.data(), divisors.data(), nd, 0);
    return;
  }
  // The tile counts of the rows and cols; an outer axis of a side over two axes divides by
  // the inner extent (ElementwiseSpec::two_axis_sides).
  const bool cc = spec.cols_span_two(), rc = spec.rows_span_two();
  const int rax = nd - 2 - int(cc);
  const auto [rows, cols] = tiled_extents(plan);
  divisors[rax] = (rows + plan.tile.rows - 1) / plan.tile.rows;
  divisors[nd - 1] = (cols + plan.tile.cols - 1) / plan.tile.cols;
  if (cc) divisors[nd - 2] = plan.shape[nd - 1];
  if (rc) divisors[rax - 1] = plan.shape[rax];
  args.put_loop_dims(plan.shape.data(), plan.index_strides.data(), divisors.data(), nd,
                     plan.tile.log2_cols);
}

}  // namespace kiln::detail
