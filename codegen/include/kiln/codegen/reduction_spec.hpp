#pragma once
// ReductionSpec: what one reduction kernel binary is specialised for beyond its definition:
// parameter dtypes and kinds, the strategy, the collapsed output and reduced dims, index and
// vector widths, and whether blocks split a row (partials combined in the same launch). A
// fixed-size POD, hashed by bytes on the call path like ElementwiseSpec.
//
// The loop of a reduction is (output dims..., reduced dims...): each group collapsed on its
// own (contiguous axes merged, size-1 axes dropped), at least one dim each. The last reduced
// dim is the one threads walk: a row is a set of runs along it (one run when red_ndim is 1).
//
//   ReductionSpec s;
//   s.strategy = ReductionStrategy::inner_block;
//   s.split = 1;                  // several blocks per row: a full reduction
//   s.red_contiguous = 1;         // every array input has unit steps along the last reduced dim
//   s.vector_width = 4;           // float4 loads along the runs
#include <array>
#include <cstddef>
#include <cstdint>

#include "kiln/codegen/elementwise_spec.hpp"  // OperandSpec, OperandKind

namespace kiln::codegen {

enum class ReductionStrategy : std::uint8_t {
  inner_warp,   // a group of up to 32 lanes per output row (the block is lanes x rows), lanes
                // stride along the row's runs; groups combine with shuffles
  inner_block,  // a block per output row (with split: several blocks per row)
  outer,        // threads across the output's columns (blockDim.x column groups of
                // vector_width columns) and down the reduced elements (blockDim.y), combined
                // through shared memory; blocks of the grid's y dimension split the reduced
                // range (with split)
  folded,       // one array input laid out densely, the first reduced dim outermost, the
                // rest a period of P = m * (n / its extent) <= kFoldPositions elements: the
                // threads stream the input flat by vector_width-element vectors (the grid
                // steps whole periods, so each thread's positions in it stay put); a
                // block folds its positions into rows in shared memory, and block partials
                // merge by groups of fold_group(blocks), then once (always split)
};

struct ReductionSpec {
  ReductionStrategy strategy = ReductionStrategy::inner_block;
  std::uint8_t out_ndim = 1;      // collapsed output dims (>= 1)
  std::uint8_t red_ndim = 1;      // collapsed reduced dims (>= 1)
  std::uint8_t index_bits = 32;   // 32 or 64
  std::uint8_t vector_width = 1;  // elements per vector load: inner with red_contiguous along
                                  // the runs; outer across contiguous output columns; folded
                                  // along the flat input
  // Every array input has unit steps along the last reduced dim: 1, in whole aligned vectors;
  // 2 (one reduced dim, one array input), vectors from each row's first 16-byte boundary, the
  // elements before it and past the last whole vector one at a time (rows of any length and
  // alignment: argmax over rows of 18631 floats); 3 (one array input of at most 4 bytes), the
  // runs read in aligned 16-byte windows of vector_width elements, those outside the run
  // skipped (runs of any length and alignment: the 7 x 7 planes of NCHW batch statistics).
  std::uint8_t red_contiguous = 0;
  std::uint8_t split = 0;  // inner_block / outer: blocks share a row or column tile (folded: 1)
  std::uint8_t nparams = 0;
  std::array<OperandSpec, kMaxParams> params{};  // kinds: scalar, array, raw_array

  dtype param_dtype(int k) const {
    return dtype(static_cast<dtype_id>(params[std::size_t(k)].dtype));
  }
  OperandKind kind(int k) const { return params[std::size_t(k)].kind; }
  std::size_t widest_array_item() const {
    return codegen::widest_array_item(std::span(params.data(), nparams));
  }
  void set_param(int k, dtype t, OperandKind kind, int raw_ndim = 0, bool raw_contiguous = true) {
    params[std::size_t(k)] = {static_cast<std::uint8_t>(t.id()), kind,
                              static_cast<std::uint8_t>(raw_ndim), std::uint8_t(raw_contiguous)};
  }
  std::size_t key_size() const {
    return offsetof(ReductionSpec, params) + sizeof(OperandSpec) * nparams;
  }
};
static_assert(offsetof(ReductionSpec, params) == 8);

}  // namespace kiln::codegen
