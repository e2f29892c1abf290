#pragma once
// Everything about an elementwise kernel that is fixed when it is defined: parameters,
// user code, NVRTC options. Built (and fully checked) once, without a GPU; the per-call part
// is an ElementwiseSpec. `hash` identifies the definition in cache keys, so the hit path
// never hashes strings.
//
//   ElementwiseDefinition def = make_elementwise_definition(
//       "float32 x, T y", "T z", "z = x + y", "add", {});
//   def.nin;           // 2
//   def.placeholders;  // {"T"}
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/codegen/signature.hpp"
#include "kiln/codegen/user_macros.hpp"

namespace kiln::codegen {

/// Most parameters one kernel may have (keeps the per-call state on the stack).
inline constexpr int kMaxParams = 64;

struct ElementwiseCode {
  std::string operation;
  std::string preamble;   // at file scope, before the kernel (functions, macros, constants)
  std::string loop_prep;  // in the kernel, before the loop (locals the operation uses)
  std::string after_loop; // in the kernel, after the loop
};

struct ElementwiseDefinition {
  std::string name;
  std::vector<Param> params;  // inputs, then outputs
  int nin = 0, nout = 0;
  std::vector<std::string> placeholders;  // distinct, in order of first use
  ElementwiseCode code;
  /// NVRTC options without -D/-U (those became `macros`).
  std::vector<std::string> nvrtc_options;
  UserMacros macros;
  /// 128-bit hash of everything above: equal hashes mean equal generated code for equal specs.
  std::uint64_t hash_hi = 0, hash_lo = 0;

  const Param& output(int k) const { return params[std::size_t(nin + k)]; }
};

/// Parses and checks a definition; throws SignatureError (bad list, name, too many params, a
/// parameter named like a placeholder) with the offending text and position.
ElementwiseDefinition make_elementwise_definition(std::string_view in_params,
                                                  std::string_view out_params,
                                                  ElementwiseCode code, std::string_view name,
                                                  const std::vector<std::string>& options);

}  // namespace kiln::codegen
