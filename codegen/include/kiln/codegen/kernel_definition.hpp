#pragma once
// What every kernel kind fixes when it is defined: the parameters (inputs, then outputs),
// the name, the NVRTC options, user macros, the preamble, and a hash of all of it plus the
// kind's own code. Built and fully checked once, without a GPU; the per-call part is each
// kind's spec. The hash identifies the definition in loaded-kernel keys, so the call hit
// path never hashes strings.
//
//   KernelDefinition def = make_kernel_definition(
//       {.kind = "elementwise", .in_params = "float32 x, T y", .out_params = "T z",
//        .name = "add", .code = {"z = x + y"}});
//   def.nin;           // 2
//   def.placeholders;  // {"T"}
//
// Kinds add their own code by deriving (ElementwiseDefinition, ReductionDefinition);
// resolve_param_types and the shared call steps take a KernelDefinition.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/codegen/signature.hpp"
#include "kiln/codegen/user_macros.hpp"
#include "kiln/runtime/hash128.hpp"

namespace kiln::codegen {

/// Most parameters one kernel may have (keeps the per-call state on the stack).
inline constexpr int kMaxParams = 64;

struct KernelDefinition {
  std::string name;
  std::vector<Param> params;  // inputs, then outputs
  int nin = 0, nout = 0;
  std::vector<std::string> placeholders;  // distinct, in order of first use
  std::string preamble;                   // file scope, before the kernel
  /// NVRTC options without -D/-U (those became `macros`), with kiln's defaults.
  std::vector<std::string> nvrtc_options;
  UserMacros macros;
  /// Hash of everything above, the kind and the kind's code: equal hashes mean equal
  /// generated code for equal specs.
  Hash128 hash;

  int nparams() const noexcept { return nin + nout; }
  const Param& output(int k) const { return params[std::size_t(nin + k)]; }
};

struct KernelDefinitionArgs {
  std::string_view kind;  // "elementwise", "reduction", ...: part of the hash
  std::string_view in_params, out_params, name;
  /// The kind's user code (operation, map_expr, ...): hashed, and checked against -D names.
  std::initializer_list<std::string_view> code;
  std::string_view preamble;
  const std::vector<std::string>* options = nullptr;
};

/// Parses and checks a definition. Throws SignatureError (bad list or name, too many
/// parameters, a parameter named like a placeholder, a -D macro that renames a parameter or
/// placeholder) or ValueError (an option kiln decides itself, such as -arch).
KernelDefinition make_kernel_definition(const KernelDefinitionArgs& args);

}  // namespace kiln::codegen
