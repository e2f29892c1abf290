#pragma once
// Ahead-of-time compilation, the same for every kernel kind: a definition + argument dtypes
// -> every spec a call with arrays of those dtypes can ask for -> compile requests, which
// cache::compile_cached turns into on-disk cache entries. No GPU needed; `kiln-cache` is
// built on it.
//
//   kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = x + y", "add");
//   for (const auto& req : k.compile_requests({.dtypes = {kiln::float32, kiln::float32}}, 90))
//     kiln::cache::compile_cached(req);     // a later call on an sm_90 GPU never compiles
//
// Every ahead-of-time entry point, in one list:
//   ElementwiseKernel, ReductionKernel   specs(target), compile_requests(target, arch),
//                                        compile_request(spec, arch), source(spec),
//                                        compile_for(spec, arch) (generated_kernel.hpp);
//                                        ElementwiseKernel::make_spec for one exact layout
//   RawKernel, RawModule                 compile_requests(arch)
//   kiln::aot::expression_kernel(e), aot::expression_leaves(e)      (engine/expression.hpp)
//   kiln::fused_reduction_kernel(code, e), aot::row_kernel(e),
//   aot::row_kernel_leaves(e), aot::multi_reduction(rs)             (engine/fused_reduction.hpp)
//   kiln::aot::builtin_reductions(), aot::fused_reduction(e, name)  (library/reductions.hpp)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/compile_request.hpp"
#include "kiln/codegen/elementwise_spec.hpp"
#include "kiln/codegen/kernel_definition.hpp"
#include "kiln/runtime/dtype.hpp"

namespace kiln {

/// One layout of an elementwise kernel, spelled out (an advanced, exact choice).
struct elementwise_layout {
  codegen::Layout layout = codegen::Layout::contiguous;
  int ndim = 1;  // strided, gathered: planned dims, 1..32; tiled: 2..32 (batch axes, rows, cols);
                 // interleaved: 2..32 (batch axes, S, L)
  int index_bits = 32;   // 32 or 64
  int vector_width = 1;  // contiguous, strided: 1, 2, 4, ... up to 16 bytes / the widest array
                         // dtype; gathered: exactly that (arrays of at most 4 bytes)
  int raw_ndim = 1;      // ndim of every raw array parameter, 0..32
  /// tiled: bit k set = parameter k (an array) runs fastest along the rows (a transposed
  /// view) and moves through shared memory; none: row tiles (broadcasts whose inputs are
  /// all smaller than the output, walked in tiles, every operand read and written directly).
  /// gathered with groups (unit_cols >= 2): bit k set = input k reads each group in one load
  /// (its rows run with unit steps, its base and other strides aligned to the group); the
  /// others step element by element.
  std::uint64_t staged = 0;
  /// gathered, 2 dims or more: bit k set = input k is constant along the rows (stride 0 along
  /// the last axis: a column, a per-channel vector) and is read once per row. Not with staged.
  std::uint64_t row_constant = 0;
  /// gathered: bit k set = input k is laid out as the output (C-contiguous over the loop, its
  /// base aligned to a vector) and is read by whole vectors where the output is written,
  /// whatever the rows hold. Not with staged or row_constant.
  std::uint64_t as_output = 0;
  /// tiled: elements one access moves, along the cols for operands read directly and along
  /// the rows for staged ones: 1, or a power of two up to 2 for 4-byte dtypes and up to 8 for
  /// 1- and 2-byte ones (arrays of at most 4-byte dtypes; rows only with something staged).
  /// gathered: unit_cols is the group inputs step by, a power of two up to vector_width that
  /// the last axis holds whole (a vector crosses rows only between groups; with one group a
  /// vector, never, so the inputs step without testing for the row's end).
  int unit_cols = 1, unit_rows = 1;
  /// gathered, 2 dims or more: the last axis holds at least vector_width elements, so a
  /// vector crosses one row end at most (found once per vector, each group placed by a
  /// select); false: any row length (the end tested after every group). Calls plan it
  /// where every array input is row_constant or as_output.
  bool long_rows = false;
  /// tiled, something staged: the sides of the tile that run over two planned axes (bit 0:
  /// the cols, axes ndim-2 and ndim-1; bit 1: the rows, the two axes before the cols). 0 to 3;
  /// each side that spans two takes an axis more: ndim >= 2 + the bits set. Calls plan it
  /// where a side's axis is short and the operands along it are contiguous across the pair.
  int two_axis_sides = 0;
  /// tiled, something staged, both sides one axis each: every staged parameter moves as runs
  /// (a tile holds every row, and a staged array steps one element down the rows and rows x
  /// itemsize across them, so each tile of it is one contiguous run of memory, moved by
  /// 16-byte vectors where aligned). Staged dtypes of at most 8 bytes, unit_rows 1 (a run
  /// places single elements; units down the rows move fewer accesses). Calls plan it where the tile can hold every row ((n, 21).T).
  bool runs = false;
  /// interleaved: the short axis' extent S, 2..8 (axes: batch..., S, L; each array runs
  /// along L or is interleaved along S, which the kernel reads from its strides).
  /// vector_width is the elements a thread takes along L: a power of two up to 16 bytes of
  /// the widest array dtype, and S x vector_width at most 64.
  int interleave = 0;
};

/// What to prepare: argument dtypes (inputs, or inputs then outputs; placeholders resolve as
/// in a call: scalar_inputs as C++ scalars, every other argument as an array) and which
/// layouts.
///
///   // k(x, 2.0) with x float16 and k(x, m) with m a 0-d float16 array (x - x.mean()):
///   ElementwiseKernel k("T x, T a", "T y", "y = x * a", "scale");
///   k.specs({.dtypes = {float16, float64}, .scalar_inputs = {1}});
///   k.specs({.dtypes = {float16, float16}, .uniform_inputs = {1}});
struct aot_target {
  std::vector<dtype> dtypes;
  /// Inputs that calls pass as C++ scalars rather than arrays (by index).
  std::vector<int> scalar_inputs;
  /// Inputs that calls pass as one-element arrays broadcast over the whole loop (by index): a
  /// 0-d array, or any shape of ones (x - x.mean(), y * w with w of shape (1,)). An
  /// elementwise kernel reads such an input once per thread, which is a kernel of its own
  /// (OperandKind::uniform); reduction and row kernels read it as any broadcast array, so
  /// their specs are the same with or without it.
  std::vector<int> uniform_inputs;
  /// Strided kernels are prepared for 1..max_ndim planned dims (views of up to max_ndim
  /// axes that cannot be merged), each with every vector width; with max_ndim >= 2 also the
  /// gathered kernels of 1..max_ndim dims (contiguous outputs; dtypes of at most 4 bytes) and
  /// the tiled kernels of 2..max_ndim dims with nothing transposed (row tiles), one input
  /// transposed (each input in turn) and every input transposed, each one element per access
  /// and (dtypes of at most 4 bytes) by pairs, the packed kernels of 3..max_ndim dims, and the
  /// interleaved kernels of 2..max_ndim dims (every short extent 2..8, every vector width).
  int max_ndim = 4;
  /// Also the 64-bit index variants (arrays whose elements or bytes pass 2^31).
  bool index64 = true;
  /// Exactly this layout instead of every variant.
  std::optional<elementwise_layout> only;
  /// ndim of raw array parameters (variants are not enumerated over it).
  int raw_ndim = 1;
};

}  // namespace kiln
