#pragma once
// Kernel parameter lists as CuPy writes them: comma-separated `[raw] type name`, where type is
// a NumPy dtype spelling ("float32", "float", "f4", "int", "complex64", "?") or a one-letter
// type placeholder ("T", "U", also "f" or "d": one letter is always a placeholder, as in CuPy)
// bound from the dtype of the array passed for it.
//
//   auto in = kiln::codegen::parse_params("float32 x, raw T y", /*is_output=*/false);
//   in[1].raw;            // true
//   in[1].placeholder;    // "T"
//   kiln::codegen::parse_params("float32", false);   // throws SignatureError:
//   //   expected a parameter name after the type
//   //     float32
//   //            ^
//
// Names are C identifiers; `i`, `_ind`, names starting with `kiln_`, and C++ keywords are
// reserved. Every failure is a kiln::SignatureError showing the text and a caret.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/runtime/dtype.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::codegen {

struct Param {
  std::string name;
  /// Empty for a fixed dtype; the placeholder's spelling ("T") otherwise.
  std::string placeholder;
  /// The fixed dtype; meaningless when placeholder is set.
  dtype fixed = float64;
  bool raw = false;
  bool is_output = false;
  /// Index of the placeholder in its kernel's placeholder list; -1 for a fixed dtype.
  int placeholder_id = -1;
  /// Position of the entry in the text it came from (for later messages).
  std::size_t position = 0;

  bool has_placeholder() const noexcept { return !placeholder.empty(); }
  /// "raw T y", "float32 x": the entry as a user would write it.
  std::string str() const;
};

/// Parses one parameter list. "" (or only spaces) is an empty list.
std::vector<Param> parse_params(std::string_view text, bool is_output);

/// Checks a kernel name: it must fully match [A-Za-z_][A-Za-z0-9_]* (so "k\n" fails) and not
/// be a C++ keyword. Throws SignatureError.
void validate_kernel_name(std::string_view name);

/// True for [A-Za-z_][A-Za-z0-9_]*, nothing else.
bool is_identifier(std::string_view s) noexcept;
/// True for C++ keywords and alternative tokens ("int", "class", "and", ...).
bool is_cpp_keyword(std::string_view s) noexcept;

/// Builds a SignatureError whose message is `what`, then the text and a caret under `position`
/// (only the line of a multi-line text that holds the position is shown).
SignatureError signature_error(std::string_view what, std::string_view text, std::size_t position);

}  // namespace kiln::codegen
