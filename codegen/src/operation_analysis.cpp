#include "kiln/codegen/operation_analysis.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace kiln::codegen {
namespace {

struct Token {
  std::string_view text;
  bool identifier;
};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::size_t skip_literal(std::string_view s, std::size_t i) {
  char quote = s[i++];
  while (i < s.size() && s[i] != quote) i += s[i] == '\\' ? 2 : 1;
  return std::min(i + 1, s.size());
}

// C++ tokens, coarsely: identifiers/numbers, two-char punctuators that matter here ("==",
// "->", "::", "<=", ">=", "!="), and single characters. Comments and literals are dropped;
// a preprocessor directive becomes the token "#".
std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (s.substr(i, 2) == "//") {
      i = std::min(s.find('\n', i), s.size());
      continue;
    }
    if (s.substr(i, 2) == "/*") {
      i = std::min(s.find("*/", i + 2), s.size() - 2) + 2;
      continue;
    }
    if (c == '"' || c == '\'') {
      i = skip_literal(s, i);
      continue;
    }
    if (ident_char(c)) {
      std::size_t j = i;
      while (j < s.size() &&
             (ident_char(s[j]) || (s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[i])))))
        ++j;
      out.push_back({s.substr(i, j - i), !std::isdigit(static_cast<unsigned char>(c))});
      i = j;
      continue;
    }
    static constexpr std::array<std::string_view, 12> kTwo = {
        "==", "->", "::", "<=", ">=", "!=", "+=", "-=", "*=", "/=", "++", "--"};
    std::string_view two = s.substr(i, 2);
    bool is_two = std::find(kTwo.begin(), kTwo.end(), two) != kTwo.end();
    out.push_back({s.substr(i, is_two ? 2 : 1), false});
    i += is_two ? 2 : 1;
  }
  return out;
}

bool is_member_access(const std::vector<Token>& t, std::size_t k) {
  return k > 0 && (t[k - 1].text == "." || t[k - 1].text == "->" || t[k - 1].text == "::");
}

bool is_jump(std::string_view w) {
  return w == "return" || w == "goto" || w == "break" || w == "continue" || w == "#";
}

}  // namespace

bool mentions_identifier(std::string_view code, std::string_view name) {
  auto t = tokenize(code);
  for (std::size_t k = 0; k < t.size(); ++k)
    if (t[k].identifier && t[k].text == name && !is_member_access(t, k)) return true;
  return false;
}

bool writes_before_reading(std::string_view operation, std::string_view name,
                           std::string_view other_code) {
  if (mentions_identifier(other_code, name)) return false;
  auto t = tokenize(operation);
  int depth = 0;
  for (std::size_t k = 0; k < t.size(); ++k) {
    std::string_view w = t[k].text;
    if (w == "(" || w == "{" || w == "[") ++depth;
    if (w == ")" || w == "}" || w == "]") --depth;
    if (is_jump(w)) return false;
    if (!t[k].identifier || w != name || is_member_access(t, k)) continue;
    // First mention: `name = ...;` as a whole statement at the top level.
    bool statement_start = k == 0 || t[k - 1].text == ";";
    if (depth != 0 || !statement_start || k + 1 >= t.size() || t[k + 1].text != "=") return false;
    for (std::size_t j = k + 2; j < t.size() && t[j].text != ";"; ++j)
      if (t[j].identifier && t[j].text == name && !is_member_access(t, j))
        return false;  // `z = z + 1` reads first
    return true;
  }
  return false;  // never mentioned: keep the old value
}

}  // namespace kiln::codegen
