#include "kiln/codegen/user_macros.hpp"

#include <fmt/format.h>

#include <string_view>

#include "kiln/codegen/signature.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::codegen {
namespace {

// "NAME=V" -> "#define NAME V"; "NAME" -> "#define NAME 1" (the -D meaning).
std::string define_line(std::string_view def) {
  std::size_t eq = def.find('=');
  std::string_view name = def.substr(0, eq);
  std::size_t paren = name.find('(');  // function-like macro: -D'F(a)=a'
  if (!is_identifier(name.substr(0, paren))) throw signature_error("-D needs a macro name", def, 0);
  std::string_view value = eq == std::string_view::npos ? "1" : def.substr(eq + 1);
  // As an NVRTC option the value is one macro body; as a source line a line break would start a
  // directive of its own (-D'X=1\n#include ...') and a trailing backslash would swallow the
  // next #define. Found by tests/fuzz/fuzz_nvrtc_options.
  if (const auto bad = def.find_first_of("\n\r"); bad != std::string_view::npos)
    throw signature_error("a -D value cannot hold a line break", def, bad);
  if (value.ends_with('\\'))
    throw signature_error("a -D value cannot end with a backslash (it would continue the line)",
                          def, def.size() - 1);
  return fmt::format("#define {} {}\n", name, value);
}

std::string undef_line(std::string_view name) {
  if (!is_identifier(name)) throw signature_error("-U needs a macro name", name, 0);
  return fmt::format("#undef {}\n", name);
}

// If `opt` is a macro option, returns its kind ('D' or 'U') and sets `value` (maybe empty
// when the value is the next option).
char macro_kind(std::string_view opt, std::string_view& value) {
  for (auto [prefix, kind] :
       {std::pair{std::string_view("--define-macro"), 'D'},
        std::pair{std::string_view("--undefine-macro"), 'U'},
        std::pair{std::string_view("-D"), 'D'}, std::pair{std::string_view("-U"), 'U'}}) {
    if (!opt.starts_with(prefix)) continue;
    value = opt.substr(prefix.size());
    if (value.starts_with('=') && prefix.starts_with("--"))
      value.remove_prefix(1);
    else if (!value.empty() && prefix.starts_with("--"))
      continue;  // e.g. --define-macros?
    return kind;
  }
  return 0;
}

}  // namespace

SplitOptions split_user_macros(const std::vector<std::string>& options) {
  SplitOptions out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string_view value;
    char kind = macro_kind(options[i], value);
    if (!kind) {
      out.nvrtc_options.push_back(options[i]);
      continue;
    }
    if (value.empty()) {
      if (i + 1 == options.size())
        throw signature_error("option needs a macro after it", options[i], options[i].size());
      value = options[++i];
    }
    out.macros.lines += kind == 'D' ? define_line(value) : undef_line(value);
    if (kind == 'D') out.macros.names.emplace_back(value.substr(0, value.find_first_of("=(")));
  }
  return out;
}

}  // namespace kiln::codegen
