#pragma once
// kiln::ElementwiseKernel: CuPy's ElementwiseKernel in C++. A kernel is defined once from
// strings; each call binds dtypes, broadcasts, and runs one generated CUDA kernel on the
// current device's current stream.
//
//   kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z",
//                             "z = (x - 2 > y) ? x * y : x + y", "my_kernel");
//   kiln::ndarray z = k(x, y);          // allocates z with the broadcast shape
//   k(x, y, z);                         // writes into z (returned too)
//   k(x, 2.0f, z, kiln::launch_options{.block_size = 128, .stream = &s});
//
// Parameters: "[raw] type name, ..." with NumPy dtype names or one-letter placeholders
// (T, U) bound from the dtypes of the arrays passed: outputs first, then inputs; arrays must
// match exactly (no promotion; TypeError otherwise); scalars are converted to their
// parameter's dtype with NumPy's assignment rules (ValueError if an integer does not fit).
//
// In the operation: parameter names are elements (inputs by value, outputs by reference to
// the output element); raw parameters are whole arrays: x[i], x[{i0, i1}], x.size(),
// x.shape()[d], x.strides()[d] (bytes); `i` is the flat loop index, `_ind.size()` the loop
// size; placeholders are typedefs; kiln_cast<U>(v) converts like NumPy's astype.
//
// Calls: nin arguments, or nin + nout with the outputs. Non-raw arguments (outputs too)
// broadcast NumPy's way; a passed non-raw output must have exactly the broadcast shape; an
// output may be an input (in place); inputs that partly overlap an output are copied first.
// Zero-size loops return the (allocated) outputs without compiling or launching.
//
// NVRTC options: --std=c++17 and -ftz=true by default (CuPy's); -D/-U options become
// #define/#undef lines visible to user code only (so -DT=1 cannot break kiln or NVRTC).
//
// Cost: the first call per (dtypes, layout class, device) generates, compiles (or loads from
// the disk cache) and loads the kernel; later calls hash a small POD key, find the loaded
// function in memory and launch: no string building, NVRTC, file I/O or allocation other
// than outputs.
#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/binary.hpp"
#include "kiln/cache/compile_request.hpp"
#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/elementwise_spec.hpp"
#include "kiln/engine/ahead_of_time.hpp"
#include "kiln/engine/generated_kernel.hpp"
#include "kiln/engine/kernel_arg.hpp"
#include "kiln/engine/kernel_result.hpp"
#include "kiln/engine/launch_options.hpp"

namespace kiln {

struct elementwise_kernel_options {
  std::string preamble;    // file scope, before the kernel
  std::string loop_prep;   // kernel scope, before the loop
  std::string after_loop;  // kernel scope, after the loop
  /// Merge contiguous axes before indexing (CuPy's reduce_dims). Off: strided kernels index
  /// the full broadcast shape.
  bool reduce_dims = true;
  /// Calls return an empty kernel_result (outputs are still computed).
  bool no_return = false;
  /// Calls return an indexable result even for one output (never an ndarray).
  bool return_tuple = false;
  /// NVRTC options, e.g. {"--use_fast_math", "-DMY_FLAG=2"}.
  std::vector<std::string> options;
};
/// The name before 0.2.
using elementwise_options [[deprecated("renamed elementwise_kernel_options")]] =
    elementwise_kernel_options;

class ElementwiseKernel : public generated_kernel<ElementwiseKernel, codegen::ElementwiseDefinition,
                                                  codegen::ElementwiseSpec> {
 public:
  static constexpr const char* kKind = "elementwise";
  /// Parses and checks everything that can be checked without a GPU; throws SignatureError.
  ElementwiseKernel(std::string_view in_params, std::string_view out_params, std::string operation,
                    std::string_view name, elementwise_kernel_options options = {});

  /// k(inputs...), k(inputs..., outputs...) (generated_kernel's operator()), with arguments
  /// gathered at run time (a trailing launch_options is allowed).
  kernel_result call(std::span<const kernel_arg> args) const;

  // ---- ahead of time (no GPU needed): kiln-cache, CPU tests; also compile_requests,
  // compile_request, source and compile_for (generated_kernel.hpp) ----
  /// Every spec a call with arrays of target.dtypes can ask for (see aot_target): every
  /// subset of the operands a layout stages or reads some way, up to three of them; with more,
  /// none, each alone and all (docs/manifest.md). Throws TypeError / ValueError for dtypes or a
  /// layout no call could produce.
  std::vector<codegen::ElementwiseSpec> specs(const aot_target& target) const;
  /// One spec, for an exact layout, every argument an array (specs() with target.only for
  /// scalar or one-element inputs); every field is checked (ValueError names it and the
  /// allowed values).
  codegen::ElementwiseSpec make_spec(std::span<const dtype> arg_dtypes,
                                     const elementwise_layout& layout = {}) const;
  static std::string emit(const codegen::ElementwiseDefinition& def,
                          const codegen::ElementwiseSpec& spec);

 private:
  // How a call passes its inputs besides arrays of the loop's shape (bit k: input k): C++
  // scalars and one-element arrays (aot_target::scalar_inputs, uniform_inputs).
  struct input_kinds {
    std::uint64_t scalars = 0, uniforms = 0;
  };
  input_kinds kinds_of(const aot_target& target) const;
  codegen::ElementwiseSpec make_spec(std::span<const dtype> arg_dtypes,
                                     const elementwise_layout& layout, input_kinds kinds) const;

  bool reduce_dims_, no_return_, return_tuple_;
};

}  // namespace kiln
