#pragma once
// THE call of every generated kernel kind, written once. A call binds its arguments, decides
// its loop shape, checks or allocates its outputs (every check before the device is touched,
// so a bad call gets the same error with or without a GPU), picks the device and stream,
// copies inputs that partly overlap an output, then asks the kind for its plan, finds the
// loaded kernel, and launches it with the kind's packed arguments and geometry:
//
//   kernel_result ElementwiseKernel::call(std::span<const kernel_arg> args) const {
//     return detail::run_call(ElementwiseKind{...}, args);       // elementwise_call.cpp
//   }
//
// A kind (ElementwiseKind, ReductionKind) supplies only what is its own:
//   using Plan;                                     its layout plan; Plan::spec is the kernel's
//                                                   spec (its used bytes key the loaded kernel)
//   static constexpr bool kOutputsShapeLoop;        do outputs take part in the loop shape?
//   static constexpr const char* kShapeFrom;        "the arguments broadcast to", ...
//   const codegen::KernelDefinition& definition();
//   std::span<const kernel_arg> arguments(KernelCall&, args, std::vector<kernel_arg>& merged);
//                                                   its own per-call options split off
//   Shape output_shape(const KernelCall&);          (bind and loop shape done)
//   void check(const KernelCall&, const Shape& out);   its own checks, before the device
//   bool has_work(const KernelCall&, const Shape& out);
//   void plan(const KernelCall&, Plan&);
//   cache::CompileRequest compile_request(const Spec&, int arch);   the miss path only
//   Launch geometry(const KernelCall&, const Plan&, const cache::LoadedKernel&);
//   Workspace workspace(const KernelCall&, const Plan&, const Launch&, const cache::LoadedKernel&);
//   void pack(const KernelCall&, const Plan&, const Workspace&, KernelArgs&);
//   void finish(kernel_result&);                    (no_return clears the result)
//   static void copy_array(const ndarray&, ndarray&, const launch_options&);   for overlaps
//
// Everything lives on the stack: the only allocations are outputs (and copies of inputs that
// partly overlap an output, and a kind's workspace).
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "call/kernel_args.hpp"
#include "kiln/cache/loaded_kernels.hpp"
#include "kiln/codegen/elementwise_spec.hpp"  // OperandKind, shared by every kind's spec
#include "kiln/codegen/kernel_definition.hpp"
#include "kiln/engine/kernel_arg.hpp"
#include "kiln/engine/kernel_result.hpp"
#include "kiln/engine/launch_options.hpp"
#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/memory.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln::detail {

using codegen::kMaxParams;

/// What the shared steps know of one call.
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
  int device = 0;
  cudaStream_t stream = nullptr;
  Shape shape;  // the loop shape
  std::int64_t size = 0;

  bool is_raw(int k) const { return def.params[std::size_t(k)].raw; }
  const std::string& param_name(int k) const { return def.params[std::size_t(k)].name; }
};

/// How a kind's kernel is launched.
struct Launch {
  dim3 grid{1, 1, 1}, block{1, 1, 1};
  unsigned shared_bytes = 0;  // dynamic shared memory (a kernel the loader opted in)
  unsigned threads() const { return block.x * block.y * block.z; }
};

/// Device memory a kind's kernel needs beside its arguments (split reductions' partials and
/// counters), alive until the launch is queued (stream-ordered reuse covers the rest).
struct Workspace {
  std::shared_ptr<Buffer> buffer;
  void* partials = nullptr;
  void* counters = nullptr;
};

// ---- the shared steps (kernel_call.cpp), in the order a call takes them ----
/// Splits off a trailing launch_options and checks it (block size range, stream device is
/// checked later); every other options type must already have been split off by the kind.
std::span<const kernel_arg> take_launch_options(KernelCall& c, std::span<const kernel_arg> args);
/// Checks the argument count: nin, or nin + nout with the outputs.
void check_argument_count(const KernelCall& c, std::span<const kernel_arg> args);
/// Binds arrays and scalars to parameters, resolves placeholder dtypes and converts scalars
/// to their parameter's dtype. Throws TypeError / ValueError naming the kernel and parameter.
void bind_arguments(KernelCall& c, std::span<const kernel_arg> args);
/// c.shape and c.size: non-raw array arguments broadcast (ShapeError otherwise), or
/// launch_options::size when every array argument is raw. `with_outputs` false: only the
/// inputs fix the shape (a reduction's outputs have the reduced shape).
void decide_loop_shape(KernelCall& c, bool with_outputs);
/// Checks passed outputs against `shape` (no overlapping broadcast views), or that outputs
/// kiln must allocate have a decided size.
void check_outputs(const KernelCall& c, bool given, const Shape& shape, const char* shape_from);
/// The current device and the stream to run on (launch_options::stream, or the device's
/// current stream); every array argument must live on that device.
void choose_device(KernelCall& c);
/// The passed outputs, or new C-contiguous ones allocated on the launch stream: appended to
/// `result`, and c.arrays points at them.
void prepare_outputs(KernelCall& c, kernel_result& result, bool given, const Shape& shape);
/// Inputs (bit k: parameter k) that share memory with an output, other than as the very same
/// elements (in place): they would be read after other threads wrote them, so they are copied
/// first (CuPy does too).
std::uint64_t overlapping_inputs(const KernelCall& c);
/// Inputs in `mask` (loop arrays, bit k: parameter k; overlapping ones, or ones a kind's plan
/// would read a sector per element: Plan::scattered) copied to C-contiguous arrays in
/// `copies`, with `copy` (the kind's: a kernel copying any layout); c.arrays points at them.
using CopyArray = void (*)(const ndarray& from, ndarray& to, const launch_options& options);
void copy_inputs(KernelCall& c, std::uint64_t mask, std::vector<ndarray>& copies, CopyArray copy);
/// ValueError when `threads` is more than the loaded kernel allows on this device.
void check_block(const KernelCall& c, unsigned threads, const cache::LoadedKernel& k);
/// The stream outputs, copies and workspaces are allocated on (kept alive by their buffers).
Stream allocation_stream(const KernelCall& c);
/// Strides of `a` over `loop` (0 on broadcast axes).
Shape loop_strides(const ndarray& a, const Shape& loop);
/// Inside a graph capture, after the launch of call `c` with arguments `argv`: the new
/// kernel node is recorded with its parameters' roles (c's arrays and scalars, in order; what
/// follows them, sizes, shapes and workspaces, stays as captured), for graph::update.
void record_launch(const KernelCall& c, void* const* argv, std::size_t argc);

/// Sets parameter k of a kind's spec when it is a scalar or a raw array (their kinds are the
/// same for every kernel kind); false for a loop array, which the kind's plan decides.
template <class Spec>
bool set_scalar_or_raw(const KernelCall& c, int k, Spec& spec) {
  if (!c.arrays[k]) {
    spec.set_param(k, c.types[k], codegen::OperandKind::scalar);
    return true;
  }
  if (!c.is_raw(k)) return false;
  const ndarray& a = *c.arrays[k];
  spec.set_param(k, c.types[k], codegen::OperandKind::raw_array, a.ndim(), a.is_c_contiguous());
  return true;
}

/// The call, for any kind.
template <class Kind>
kernel_result run_call(Kind kind, std::span<const kernel_arg> all_args) {
  KernelCall c(kind.definition());
  std::vector<kernel_arg> merged;  // only when a kind's options carry arguments
  auto args = kind.arguments(c, take_launch_options(c, all_args), merged);
  check_argument_count(c, args);
  const bool given = args.size() == std::size_t(c.nparams);
  bind_arguments(c, args);
  decide_loop_shape(c, Kind::kOutputsShapeLoop);
  const Shape out_shape = kind.output_shape(c);
  check_outputs(c, given, out_shape, Kind::kShapeFrom);
  kind.check(c, out_shape);
  choose_device(c);

  kernel_result result;
  prepare_outputs(c, result, given, out_shape);
  if (kind.has_work(c, out_shape)) {
    std::vector<ndarray> copies;
    const std::uint64_t overlapping = overlapping_inputs(c);
    copy_inputs(c, overlapping, copies, Kind::copy_array);
    typename Kind::Plan plan;
    kind.plan(c, plan);
    if constexpr (requires { plan.scattered; })
      if (plan.scattered) [[unlikely]] {  // read whole from a copy in C order: planned again
        copy_inputs(c, plan.scattered & ~overlapping, copies, Kind::copy_array);  // once each
        std::destroy_at(&plan);  // plans are not assignable (fixed-capacity vectors)
        std::construct_at(&plan);
        kind.plan(c, plan);
      }
    const auto& loaded =
        cache::loaded_kernel(cache::kernel_key(c.def.hash, plan.spec, c.device), c.device,
                             [&](int arch) { return kind.compile_request(plan.spec, arch); });
    const Launch launch = kind.geometry(c, plan, loaded);
    check_block(c, launch.threads(), loaded);
    const Workspace ws = kind.workspace(c, plan, launch, loaded);
    KernelArgs kargs(plan.spec.index_bits);
    kind.pack(c, plan, ws, kargs);
    loaded.function.launch(launch.grid, launch.block, kargs.argv(), launch.shared_bytes, c.stream);
    // Inside a graph capture (one thread-local load otherwise), the new kernel node is
    // recorded with the role of each parameter, for graph::update.
    if (thread_capture()) [[unlikely]]
      record_launch(c, kargs.argv(), kargs.count());
  }
  kind.finish(result);
  return result;
}

}  // namespace kiln::detail
