#pragma once
// A little lexical analysis of user operations. The vectorized path keeps outputs in
// registers; an output must then be loaded before the operation unless the operation
// certainly writes it before any read. CuPy binds outputs as references to memory, so
// `y += x` or `if (x > 0) y = x;` read the old value; only a first statement `y = expr;`
// with no `y` in expr, and no control flow before it, is known to overwrite.
//
//   writes_before_reading("z = x + y;", "z", "");          // true: no load needed
//   writes_before_reading("z += x;", "z", "");             // false
//   writes_before_reading("if (x) z = 1;", "z", "");       // false (conditional)
#include <string_view>

namespace kiln::codegen {

/// `operation` certainly assigns `name` before reading it. `other_code` is every other user
/// text (preamble, loop_prep, macros): any mention of `name` there (a macro could read it)
/// makes the answer false. Conservative: false when unsure.
bool writes_before_reading(std::string_view operation, std::string_view name,
                           std::string_view other_code);

/// True when `name` occurs in `code` as an identifier token (not in comments or literals).
bool mentions_identifier(std::string_view code, std::string_view name);

}  // namespace kiln::codegen
