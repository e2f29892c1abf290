#pragma once
// ElementwiseSpec: what one elementwise kernel binary is specialised for, beyond its
// definition: each parameter's dtype and kind, the loop layout, the collapsed ndim, the
// index width and the vector width. A fixed-size POD so the launch hit path can hash its
// bytes (with the definition hash and the device) without building any string.
//
//   ElementwiseSpec s;
//   s.layout = Layout::contiguous;
//   s.vector_width = 4;                          // float4 loads for float32
//   s.set_param(0, kiln::float32, OperandKind::array);
//
//   s.layout = Layout::tiled; s.ndim = 2;          // z = x.T + y
//   s.params[0].staged = 1;                        // x: through shared memory
//   s.log2_unit_cols = s.log2_unit_rows = 1;       // y, z by pairs along cols, x along rows
//
//   // z(224, 611, 34, 14) = x(14, 34, 224, 611).transpose(2, 3, 1, 0) + y, float32:
//   s.layout = Layout::tiled; s.ndim = 4;          // axes (224, 611, 34, 14)
//   s.params[0].staged = 1;                        // x along the 611 rows
//   s.two_axis_sides = 1;                          // cols: 34 x 14 = 476, one line of y and z
//
//   // z(21, 803, 384, 10) = x(21, 803, 384, 1) - y(803, 1, 1), float16:
//   s.layout = Layout::gathered; s.ndim = 4;
//   s.vector_width = 8;                            // z by 16 bytes
//   s.log2_unit_cols = 1;                          // x and y stepped by pairs (rows of 10)
//
//   // z(416, 9, 17925) = x(416, 9, 17925) - m(1, 9, 1), float32 (odd rows):
//   s.layout = Layout::gathered; s.ndim = 3; s.vector_width = 4;
//   s.params[0].staged = OperandSpec::gathered_as_output;     // x by 16 bytes, as z
//   s.params[1].staged = OperandSpec::gathered_row_constant;  // m once per row
//
//   // z(21, n) = x(n, 21).T - y, float32 (a tile holds all 21 rows: x's is one run):
//   s.layout = Layout::tiled; s.ndim = 2;
//   s.params[0].staged = OperandSpec::tiled_run;   // x by 16 bytes into the shared tile
//
//   s.layout = Layout::packed; s.ndim = 4;         // x, y permuted differently
//   s.params[0].staged = s.params[1].staged = 1;   // both through the shared box
//
//   // z(N, 3, H, W) = x(N, H, W, 3).transpose(0, 3, 1, 2) - y, float32 (NHWC -> NCHW):
//   s.layout = Layout::interleaved; s.ndim = 3;    // axes (N, 3, H * W)
//   s.unroll = 3; s.vector_width = 4;              // a thread: 4 pixels, all 3 channels
//                                                  // (x one run of 12 floats, y and z 3 lines)
//
//   s.layout = Layout::strided; s.ndim = 2;        // z = x[:, None] + y[None, :] (an outer sum)
//   s.vector_width = 8;                            // float16: y and z by 16 bytes, x once
//   s.unroll = default_unroll(s.layout, 8);
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/runtime/dtype.hpp"

namespace kiln::codegen {

/// How one parameter reaches the kernel.
enum class OperandKind : std::uint8_t {
  scalar,     // a host value passed by value (also a raw parameter given a scalar)
  array,      // element i of the loop (contiguous, or strided over the collapsed dims)
  uniform,    // an array broadcast from one element (all strides 0): loaded once per thread
  raw_array,  // the whole array, indexed by the user: x[i], x[{i0, i1}], x.size(), x.shape()
};

enum class Layout : std::uint8_t {
  contiguous,  // every `array` operand is C-contiguous over the loop: pointer + i
  // Byte strides over `ndim` planned dims (collapsed, and ordered by the output's strides).
  // Each thread takes vectors of `vector_width` elements along the last axis (which holds
  // whole vectors), unravelled with precomputed divisors; per operand, by its last-axis stride
  // at run time: one vector load or store (unit stride, aligned), the same reversed (unit
  // negative stride), one element for the whole vector (stride 0: a broadcast), or one access
  // per element (any other stride).
  strided,
  // `ndim` >= 2 planned dims (batch..., rows, cols) walked in tiles of (rows, cols) of 256
  // threads x K elements (launch_config.hpp: the shape is chosen per call), batch axes
  // unravelled per tile. Operands whose fastest axis is the rows (a transposed view:
  // `staged`) move through shared memory so every global access runs along lines. With
  // nothing staged (row tiles: broadcasts whose inputs are all smaller than the output) each
  // thread finds its place once per tile instead of once per element. Either side may run
  // over two axes (two_axis_sides).
  tiled,
  // Every output C-contiguous over `ndim` planned dims, inputs by byte strides (the strided
  // ABI): each thread takes vectors of `vector_width` elements of the flat loop, unravels a
  // vector's first element once and steps its inputs element by element (broadcasts along
  // short or unaligned last axes, steps, reversals); outputs move as whole vectors. Inputs
  // step in groups of 2^log2_unit_cols elements, which the last axis holds whole (a vector
  // crosses rows only between groups; one group per vector: never); `staged` says how each
  // input is read (OperandSpec::gathered_*).
  gathered,
  // `ndim` >= 3 planned dims (batch..., A, B, C): each block takes a box of (2^kiln_shape.kiln_t
  // of A, all of B, all of C) (launch_config.hpp: PackedBox). Operands contiguous along C (the
  // first output's fastest axis) are read and written directly in the box's order; `staged`
  // inputs, contiguous along A or B, are copied into a shared box first, each walking the box
  // in its own memory order (its axes sorted by stride at run time), so every global access
  // runs along lines where no tile could: two inputs permuted differently, contiguous along
  // two different axes besides C. One element per access.
  packed,
  // `ndim` >= 2 planned dims (batch..., S, L) whose short axis S (2 to 8 elements: `unroll`,
  // part of the kernel) sits beside a long one L: images between channels-last and
  // channels-first (NHWC -> NCHW: S the 3 or 4 channels), tall narrow matrices transposed
  // ((n, 3).T). Each operand is either a line (unit steps along L) or interleaved (unit steps
  // along S, S elements along L: its S x vector_width block is one contiguous run), which the
  // kernel reads from its strides. A thread takes one group of `vector_width` elements along L
  // for every S: S vectors per operand, lines from S places, interleaved ones from one run,
  // transposed in registers (the element indices are constants once S is). An interleaved
  // output's runs pass between a warp's lanes through shared memory (a warp barrier, no block
  // barrier), so each store instruction writes consecutive vectors.
  interleaved,
};

struct OperandSpec {
  std::uint8_t dtype = 0;  // dtype_id
  OperandKind kind = OperandKind::array;
  std::uint8_t raw_ndim = 0;        // raw_array: the array's own ndim
  std::uint8_t raw_contiguous = 0;  // raw_array: C-contiguous, so x[i] needs no unravel
  // tiled: the array is read/written along axis 0 (through shared memory); packed: the input
  // is read into the shared box in its own order; gathered: how the input is read, one of
  // the gathered_* values below
  std::uint8_t staged = 0;

  // gathered inputs: element by element along the rows (steps, reversals, broadcasts along
  // rows of odd length); each group in one aligned load (groups of 2 or more); once per row
  // (constant along the rows: stride 0 along the last axis, 2 dims or more); or by whole
  // vectors at the output's own positions (the input is laid out as the output, C-contiguous
  // and aligned like it, whatever the rows hold).
  static constexpr std::uint8_t gathered_by_element = 0, gathered_by_group = 1,
                                gathered_row_constant = 2, gathered_as_output = 3;
  // tiled: staged, and each tile of it is one contiguous run of memory (the tile holds every
  // row; the operand steps one element down the rows and rows x itemsize across them), moved
  // as 16-byte vectors where the tile's run is aligned for them
  static constexpr std::uint8_t tiled_run = 2;
};

/// Bytes of the widest array operand's dtype among `params` (1 with none): what a vector or a
/// tiled unit must hold a whole number of. Every kind's spec asks it of its parameters.
inline std::size_t widest_array_item(std::span<const OperandSpec> params) {
  std::size_t widest = 1;
  for (const OperandSpec& o : params)
    if (o.kind == OperandKind::array)
      widest = std::max(widest, dtype(static_cast<dtype_id>(o.dtype)).itemsize());
  return widest;
}

struct ElementwiseSpec {
  Layout layout = Layout::contiguous;
  std::uint8_t ndim = 1;  // strided: planned dims (>= 1); tiled, interleaved: >= 2; packed: >= 3;
                          // contiguous: 1
  std::uint8_t index_bits = 32;   // 32 or 64
  std::uint8_t vector_width = 1;  // contiguous, strided: elements per vector (16 bytes / widest)
  std::uint8_t unroll = 2;        // vectors per thread per loop iteration (default_unroll);
                                  // interleaved: the short axis' extent S (a thread's S vectors)
  std::uint8_t nparams = 0;
  // tiled: log2 of the elements one global access moves, along the cols for direct operands
  // and along the rows for staged ones (0: one element; 1: pairs; up to max_tiled_unit: 8
  // elements of 1- and 2-byte dtypes). Each operand whose stride along that axis is one element
  // takes the unit in one access; the planner checks those operands' alignment and that the axis
  // holds whole units. 0 keeps the hashed bytes of specs from before units existed.
  // gathered: log2 of the group inputs step by, the widest power of two up to vector_width
  // that the last planned axis holds whole (no group crosses a row; the planner checks).
  // Vectors are 16 bytes of the widest dtype. log2_unit_rows 1: the last planned axis holds
  // at least vector_width elements (gathered_long_rows).
  std::uint8_t log2_unit_cols = 0;
  std::uint8_t log2_unit_rows = 0;
  // tiled, something staged: which sides of the tile span two planned axes (bit 0: the cols,
  // axes ndim-2 and ndim-1; bit 1: the rows, the two axes before the cols). The operands that
  // run along such a side (direct ones for the cols, staged ones for the rows) are contiguous
  // across both axes and step through the pair as one line; the others find each col (row)
  // of theirs with one division. The planner spans a side over two axes where the plain tile
  // pads it or its lines are short (elementwise_plan.cpp; bench/README.md, thirty-third round).
  std::uint8_t two_axis_sides = 0;
  std::array<OperandSpec, kMaxParams> params{};

  dtype param_dtype(int k) const {
    return dtype(static_cast<dtype_id>(params[std::size_t(k)].dtype));
  }
  OperandKind kind(int k) const { return params[std::size_t(k)].kind; }
  bool staged(int k) const { return params[std::size_t(k)].staged != 0; }
  /// tiled: the staged operand's tile is one run of memory (OperandSpec::tiled_run).
  bool staged_run(int k) const {
    return layout == Layout::tiled && params[std::size_t(k)].staged == OperandSpec::tiled_run;
  }
  /// tiled: the staged operands move as runs (the planner marks all of them or none).
  bool tiled_runs() const {
    for (int k = 0; k < nparams; ++k)
      if (staged_run(k)) return true;
    return false;
  }
  /// gathered: the input is constant along the rows (read once per row).
  bool row_constant(int k) const {
    return params[std::size_t(k)].staged == OperandSpec::gathered_row_constant;
  }
  /// gathered: the input is laid out as the output (read by whole vectors where it is written).
  bool as_output(int k) const {
    return params[std::size_t(k)].staged == OperandSpec::gathered_as_output;
  }
  /// gathered: rows (the last planned axis) of a vector or more, so a vector crosses one row
  /// end at most: found once per vector instead of tested after every group.
  bool gathered_long_rows() const { return layout == Layout::gathered && log2_unit_rows == 1; }
  int unit_cols() const { return 1 << log2_unit_cols; }
  /// tiled: the cols (rows) run over two planned axes (two_axis_sides).
  bool cols_span_two() const { return layout == Layout::tiled && (two_axis_sides & 1) != 0; }
  bool rows_span_two() const { return layout == Layout::tiled && (two_axis_sides & 2) != 0; }
  /// interleaved: the short axis' extent S.
  int interleave() const { return layout == Layout::interleaved ? unroll : 0; }
  int unit_rows() const { return 1 << log2_unit_rows; }
  /// Bytes of the widest array parameter's dtype (1 with none): what a vector or a tiled
  /// unit must hold a whole number of.
  std::size_t widest_array_item() const {
    return codegen::widest_array_item(std::span(params.data(), nparams));
  }
  void set_param(int k, dtype t, OperandKind kind, int raw_ndim = 0, bool raw_contiguous = true) {
    params[std::size_t(k)] = {static_cast<std::uint8_t>(t.id()), kind,
                              static_cast<std::uint8_t>(raw_ndim), std::uint8_t(raw_contiguous)};
  }
  /// Bytes that identify the spec (the used prefix of `params`).
  std::size_t key_size() const {
    return offsetof(ElementwiseSpec, params) + sizeof(OperandSpec) * nparams;
  }
};
/// interleaved: the short axis' extents a kernel takes, 2..kMaxInterleave. A thread holds S
/// vectors of every operand in registers: at 8, 32 registers an operand of 16-byte vectors.
inline constexpr int kMaxInterleave = 8;
/// interleaved: the most elements a thread takes of each operand (S x vector_width), each a
/// copy of the operation in the kernel: compile time and registers.
inline constexpr int kMaxInterleavedGroup = 64;

/// The unroll a planner gives a layout and vector width (ahead-of-time specs use the same):
/// strided and gathered loops with short vectors take more of them per thread, to keep enough
/// loads in flight.
constexpr std::uint8_t default_unroll(Layout layout, int vector_width) {
  return (layout == Layout::strided || layout == Layout::gathered) && vector_width <= 2 ? 4 : 2;
}

/// A contiguous loop over arrays of at most 4 bytes whose vectors move under 8 bytes an access:
/// an operand's alignment cut them down (an output off its 16-byte vectors, which no gathered
/// loop can take: an in-place x[1:] += y).
inline bool short_contiguous_vectors(const ElementwiseSpec& s) {
  if (s.layout != Layout::contiguous) return false;
  bool any = false;
  for (int k = 0; k < s.nparams; ++k) any |= s.kind(k) == OperandKind::array;
  const auto widest = s.widest_array_item();
  return any && widest <= 4 && s.vector_width * widest < 8;
}

/// contiguous: the loop takes `unroll` vectors of `vector_width` elements a thread (else, with
/// width 1 and the default unroll, one element a thread).
inline bool contiguous_vector_loop(const ElementwiseSpec& s) {
  return s.vector_width > 1 || s.unroll > default_unroll(Layout::contiguous, 1);
}

/// The unroll a planner gives a spec whose first `nin` parameters are the inputs (ahead-of-time
/// specs use the same): default_unroll, except that short contiguous vectors take 4 and a
/// gathered loop whose every array input is constant along the rows takes one vector per thread: it
/// loads one element per row, so more vectors buy no loads in flight and cost registers (float16
/// (21, 803, 384, 10) from two such inputs: 54 registers and 0.62 of the copy rate with 2, 0.67
/// with 1, H100).
inline std::uint8_t planned_unroll(const ElementwiseSpec& s, int nin) {
  if (s.layout == Layout::interleaved) return s.unroll;  // the short extent, not a choice
  // Short contiguous vectors take four a thread, to keep loads in flight as strided loops do.
  if (short_contiguous_vectors(s)) return 4;
  bool per_row = s.layout == Layout::gathered;
  bool any = false;
  for (int k = 0; k < nin && k < s.nparams && per_row; ++k)
    if (s.kind(k) == OperandKind::array) {
      per_row = s.row_constant(k);
      any = true;
    }
  return per_row && any ? 1 : default_unroll(s.layout, s.vector_width);
}

/// Whether a strided loop over arrays whose widest element has `widest` bytes takes vectors of
/// `vector_width` elements: 1 always; vectors only for 1- and 2-byte dtypes, 8 to 16 bytes
/// (4- and 8-byte dtypes ran faster one element at a time on an H200). The planner picks among
/// these, and ahead-of-time specs enumerate exactly these.
constexpr bool strided_width_planned(int vector_width, int widest) {
  const int bytes = vector_width * widest;
  return vector_width == 1 || (widest < 4 && bytes >= 8 && bytes <= 16);
}

static_assert(sizeof(OperandSpec) == 5);
static_assert(offsetof(ElementwiseSpec, params) == 9);

}  // namespace kiln::codegen
