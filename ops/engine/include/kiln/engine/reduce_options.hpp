#pragma once
// Per-call options of a ReductionKernel call, passed after the arguments (before a trailing
// launch_options, if any):
//
//   k(x, kiln::reduce_options{.axis = 1, .keepdims = true});
//   k(x, kiln::reduce_options{.axis = {0, 2}, .out = {z}});     // z: the given output
#include <vector>

#include "kiln/runtime/axes.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln {

struct reduce_options {
  /// Reduced axes of the (broadcast) inputs: all by default, an int (negative from the end)
  /// or several ({0, 2}).
  axes axis;
  /// Keep reduced axes as length-1 dims in the outputs.
  bool keepdims = false;
  /// The outputs, instead of passing them after the inputs (not both).
  std::vector<ndarray> out;
};

}  // namespace kiln
