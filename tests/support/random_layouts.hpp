#pragma once
// Random array views for planner tests: shapes, permutations, slices (offsets, steps of 2,
// reversals) and broadcasts, over untouched memory (no device), drawn from a seeded generator
// so that a failing draw names a layout that reproduces.
//
//   std::mt19937_64 g(7);
//   const Shape s = test::random_shape(g, 3, 1e6);                  // e.g. (61, 1, 16400)
//   const ndarray x = test::random_view(g, s, float16, true, true);   // permuted, sliced
//   INFO(test::describe(x));                                        // "(61, 1, 16400) at ..."
#include <cstdint>
#include <random>
#include <string>

#include "kiln/codegen/elementwise_spec.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln::test {

/// A shape of `ndim` axes holding about `elements` elements, some of them 1.
Shape random_shape(std::mt19937_64& g, int ndim, double elements);

/// An untouched view of `shape`: taken from a permuted base when `permute`; with `slice`, some
/// axes are windows of a longer one (an offset, steps of 1 or 2, forwards or reversed).
ndarray random_view(std::mt19937_64& g, const Shape& shape, dtype t, bool permute, bool slice);

/// `shape` with each axis 1 with probability `p` and leading ones maybe dropped: an input that
/// broadcasts against `shape`.
Shape broadcast_shape(std::mt19937_64& g, const Shape& shape, double p);

/// Whether every element of `a` sits at one address (each axis of extent 1 or stride 0): a
/// call reads such an input as one element (aot_target::uniform_inputs).
bool is_one_element(const ndarray& a);

/// "shape (..) offset N strides (..)", for INFO lines.
std::string describe(const ndarray& a);

/// A spec's identifying bytes (key_size()) with the raw-array fields of the other parameters
/// cleared, which only raw parameters' code reads: two specs with equal keys emit one kernel.
template <class Spec>
std::string spec_key(Spec s) {
  for (int k = 0; k < s.nparams; ++k)
    if (s.kind(k) != codegen::OperandKind::raw_array)
      s.params[std::size_t(k)].raw_ndim = 0, s.params[std::size_t(k)].raw_contiguous = 0;
  return std::string(reinterpret_cast<const char*>(&s), s.key_size());
}

}  // namespace kiln::test
