#pragma once
// The steps every kernel kind's call shares, in the order a call takes them:
//
//   KernelCall c(def);
//   auto args = take_options(c, all_args);         // bind_arguments.cpp
//   bind_arguments(c, args);                         //   dtypes; scalars converted; no device yet
//   decide_loop_shape(c);                            // loop_shape.cpp: broadcast (or size=)
//   check_outputs(c, given, c.shape);                // loop_shape.cpp
//   choose_device(c);                                // device_stream.cpp: device, stream
//   prepare_outputs(c, result, given, c.shape);      // loop_shape.cpp: passed or allocated
//   copy_overlapping_inputs(c, copies);              // overlap.cpp
//   ... the kind plans its layout and spec, finds its loaded kernel (kernel_cache.hpp),
//   packs arguments (kernel_args.hpp) and launches.
//
// Every check of what the user passed happens before choose_device, so a bad call gets the
// same error with or without a GPU. Everything lives on the stack; the only allocations are
// outputs (and copies of inputs that partly overlap an output).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <cuda_runtime_api.h>

#include "kiln/codegen/kernel_definition.hpp"
#include "kiln/engine/kernel_arg.hpp"
#include "kiln/engine/kernel_result.hpp"
#include "kiln/engine/launch_options.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln::detail {

using codegen::kMaxParams;

struct KernelCall {
  // Only the first nparams entries of the per-parameter arrays are used, so only those are
  // initialised: a call must not pay for kMaxParams of each.
  explicit KernelCall(const codegen::KernelDefinition& d) : def(d), nparams(d.nparams()) {
    std::fill_n(arrays.begin(), nparams, nullptr);
    std::fill_n(scalars.begin(), nparams, nullptr);
  }
  const codegen::KernelDefinition& def;
  int nparams = 0;
  std::array<const ndarray*, kMaxParams> arrays;  // nullptr: a scalar (or an output to allocate)
  std::array<const scalar*, kMaxParams> scalars;
  std::array<dtype, kMaxParams> types;                       // resolved parameter dtypes
  std::array<std::array<std::byte, 16>, kMaxParams> values;  // scalars in their dtype
  launch_options options;
  const reduce_options* reduce = nullptr;  // reductions: the call's reduce_options, if passed
  int device = 0;
  cudaStream_t stream = nullptr;
  Shape shape;  // the loop shape
  std::int64_t size = 0;

  bool is_raw(int k) const { return def.params[std::size_t(k)].raw; }
  const std::string& param_name(int k) const { return def.params[std::size_t(k)].name; }
};

// ---- bind_arguments.cpp ----
/// Splits off a trailing launch_options (and, when `reduction`, a reduce_options before it,
/// into c.reduce), checks them (block size range) and the argument count; returns the
/// remaining arguments.
std::span<const kernel_arg> take_options(KernelCall& c, std::span<const kernel_arg> args,
                                         bool reduction = false);
/// Binds arrays and scalars to parameters, resolves placeholder dtypes and converts scalars
/// to their parameter's dtype. Throws TypeError / ValueError naming the kernel and parameter.
void bind_arguments(KernelCall& c, std::span<const kernel_arg> args);

// ---- loop_shape.cpp ----
/// c.shape and c.size: non-raw array arguments broadcast (ShapeError otherwise), or
/// launch_options::size when every array argument is raw. `with_outputs` false: only the
/// inputs fix the shape (a reduction's outputs have the reduced shape).
void decide_loop_shape(KernelCall& c, bool with_outputs = true);
/// Checks passed outputs against `shape` (no overlapping broadcast views), or that outputs
/// kiln must allocate have a decided size. Before the device is touched.
void check_outputs(const KernelCall& c, bool given, const Shape& shape,
                   const char* shape_from = "the arguments broadcast to");
/// The passed outputs, or new C-contiguous ones allocated on the launch stream: appended to
/// `result`, and c.arrays points at them.
void prepare_outputs(KernelCall& c, kernel_result& result, bool given, const Shape& shape);
/// Strides of `a` over `loop` (0 on broadcast axes).
Shape loop_strides(const ndarray& a, const Shape& loop);

// ---- device_stream.cpp ----
/// The current device and the stream to run on (launch_options::stream, or the device's
/// current stream); every array argument must live on that device.
void choose_device(KernelCall& c);
/// The stream outputs and copies are allocated on (kept alive by their buffers).
Stream allocation_stream(const KernelCall& c);

// ---- overlap.cpp ----
/// An input that shares memory with an output, other than as the very same elements (in
/// place), would be read after other threads wrote it: it is copied first (CuPy does too),
/// into `copies`, and c.arrays points at the copy.
void copy_overlapping_inputs(KernelCall& c, std::vector<ndarray>& copies);

}  // namespace kiln::detail
