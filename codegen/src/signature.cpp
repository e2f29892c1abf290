#include "kiln/codegen/signature.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "kiln/runtime/error.hpp"

namespace kiln::codegen {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

struct Token {
  std::string_view text;
  std::size_t position;  // in the whole list text
};

// Whitespace-separated words of one entry [begin, end) of `text`.
std::vector<Token> split_words(std::string_view text, std::size_t begin, std::size_t end) {
  std::vector<Token> words;
  std::size_t i = begin;
  while (i < end) {
    while (i < end && is_space(text[i])) ++i;
    std::size_t start = i;
    while (i < end && !is_space(text[i])) ++i;
    if (i > start) words.push_back({text.substr(start, i - start), start});
  }
  return words;
}

void check_param_name(const Token& name, std::string_view text) {
  if (!is_identifier(name.text))
    throw signature_error(fmt::format("'{}' is not a valid parameter name", name.text), text,
                          name.position);
  if (name.text == "i" || name.text == "_ind")
    throw signature_error(
        fmt::format("'{}' is reserved (the loop index); choose another parameter name", name.text),
        text, name.position);
  if (name.text.starts_with("kiln_"))
    throw signature_error("names starting with 'kiln_' are reserved for kiln", text, name.position);
  if (is_cpp_keyword(name.text))
    throw signature_error(fmt::format("'{}' is a C++ keyword", name.text), text, name.position);
}

// Type word -> fixed dtype or placeholder. One letter is always a placeholder (CuPy's rule).
void parse_type(const Token& type, std::string_view text, Param& p) {
  bool one_letter = type.text.size() == 1 &&
                    (std::isalpha(static_cast<unsigned char>(type.text[0])) || type.text[0] == '_');
  if (one_letter) {
    p.placeholder = std::string(type.text);
    return;
  }
  if (!dtype::try_from_name(type.text, p.fixed))
    throw signature_error(
        fmt::format("unknown dtype '{}' (a type placeholder is a single letter such as T)",
                    type.text),
        text, type.position);
}

Param parse_entry(std::string_view text, std::size_t begin, std::size_t end, bool is_output) {
  auto words = split_words(text, begin, end);
  if (words.empty())
    throw signature_error(
        begin == 0 ? "expected a parameter before ','" : "expected a parameter after ','", text,
        begin);
  if (words.size() == 1)
    throw signature_error(
        fmt::format("expected a parameter name after the type '{}'", words[0].text), text,
        words[0].position + words[0].text.size());
  Param p;
  p.is_output = is_output;
  p.position = words[0].position;
  for (std::size_t w = 0; w + 2 < words.size(); ++w) {
    if (words[w].text != "raw")
      throw signature_error(
          fmt::format("unknown modifier '{}' (the only modifier is 'raw')", words[w].text), text,
          words[w].position);
    if (p.raw) throw signature_error("'raw' given twice", text, words[w].position);
    p.raw = true;
  }
  parse_type(words[words.size() - 2], text, p);
  const Token& name = words.back();
  check_param_name(name, text);
  p.name = std::string(name.text);
  return p;
}

}  // namespace

std::string Param::str() const {
  return fmt::format("{}{} {}", raw ? "raw " : "",
                     has_placeholder() ? placeholder : std::string(fixed.name()), name);
}

std::vector<Param> parse_params(std::string_view text, bool is_output) {
  std::vector<Param> params;
  if (std::all_of(text.begin(), text.end(), is_space)) return params;
  std::size_t begin = 0;
  while (true) {
    std::size_t comma = text.find(',', begin);
    std::size_t end = comma == std::string_view::npos ? text.size() : comma;
    params.push_back(parse_entry(text, begin, end, is_output));
    for (std::size_t k = 0; k + 1 < params.size(); ++k)
      if (params[k].name == params.back().name)
        throw signature_error(fmt::format("parameter '{}' is declared twice", params.back().name),
                              text, params.back().position);
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return params;
}

void validate_kernel_name(std::string_view name) {
  if (!is_identifier(name)) {
    std::size_t bad = 0;
    while (bad < name.size() &&
           (std::isalnum(static_cast<unsigned char>(name[bad])) || name[bad] == '_') &&
           !(bad == 0 && std::isdigit(static_cast<unsigned char>(name[bad]))))
      ++bad;
    throw signature_error("a kernel name must match [A-Za-z_][A-Za-z0-9_]*", name, bad);
  }
  if (is_cpp_keyword(name))
    throw signature_error(fmt::format("'{}' is a C++ keyword, not a kernel name", name), name, 0);
  static constexpr std::string_view kDeviceNames[] = {
      "kiln_same",      "kiln_traits",  "kiln_nonzero",     "kiln_cast",    "kiln_word",
      "kiln_load",      "kiln_store",   "kiln_loop_index",  "kiln_strided", "kiln_dims",
      "kiln_loop_dims", "kiln_fastdiv", "kiln_multi_index", "kiln_carray",  "kiln_enable",
      "kiln_idx",       "kiln_uidx",    "complex"};
  if (std::find(std::begin(kDeviceNames), std::end(kDeviceNames), name) != std::end(kDeviceNames))
    throw signature_error(fmt::format("'{}' is a name in kiln's device code", name), name, 0);
}

bool is_identifier(std::string_view s) noexcept {
  if (s.empty()) return false;
  auto head = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto tail = [&](char c) { return head(c) || std::isdigit(static_cast<unsigned char>(c)); };
  return head(s[0]) && std::all_of(s.begin() + 1, s.end(), tail);
}

bool is_cpp_keyword(std::string_view s) noexcept {
  static constexpr std::string_view kKeywords[] = {
      "alignas",       "alignof",     "and",
      "and_eq",        "asm",         "auto",
      "bitand",        "bitor",       "bool",
      "break",         "case",        "catch",
      "char",          "char8_t",     "char16_t",
      "char32_t",      "class",       "compl",
      "concept",       "const",       "consteval",
      "constexpr",     "constinit",   "const_cast",
      "continue",      "co_await",    "co_return",
      "co_yield",      "decltype",    "default",
      "delete",        "do",          "double",
      "dynamic_cast",  "else",        "enum",
      "explicit",      "export",      "extern",
      "false",         "float",       "for",
      "friend",        "goto",        "if",
      "inline",        "int",         "long",
      "mutable",       "namespace",   "new",
      "noexcept",      "not",         "not_eq",
      "nullptr",       "operator",    "or",
      "or_eq",         "private",     "protected",
      "public",        "register",    "reinterpret_cast",
      "requires",      "return",      "short",
      "signed",        "sizeof",      "static",
      "static_assert", "static_cast", "struct",
      "switch",        "template",    "this",
      "thread_local",  "throw",       "true",
      "try",           "typedef",     "typeid",
      "typename",      "union",       "unsigned",
      "using",         "virtual",     "void",
      "volatile",      "wchar_t",     "while",
      "xor",           "xor_eq",      "__global__",
      "__device__",    "__host__",    "__shared__",
      "__constant__",  "__restrict__"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), s) != std::end(kKeywords);
}

SignatureError signature_error(std::string_view what, std::string_view text, std::size_t position) {
  position = std::min(position, text.size());
  std::size_t line_begin = 0;
  if (position > 0) {
    std::size_t nl = text.rfind('\n', position - 1);
    if (nl != std::string_view::npos) line_begin = nl + 1;
  }
  std::size_t line_end = text.find('\n', line_begin);
  if (line_end == std::string_view::npos) line_end = text.size();
  std::string_view line = text.substr(line_begin, line_end - line_begin);
  return SignatureError(fmt::format("{} (at position {})\n  {}\n  {}^", what, position, line,
                                    std::string(position - line_begin, ' ')),
                        position);
}

}  // namespace kiln::codegen
