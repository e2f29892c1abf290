#pragma once
// Internal to codegen/: appends generated text and knows the current line, so every emitter
// frames user code with #line directives and NVRTC reports `map_expr(2): error ...`; and the
// prologue every generated kernel starts with.
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "kiln/codegen/device_header.hpp"
#include "kiln/codegen/kernel_definition.hpp"

namespace kiln::codegen {

class SourceWriter {
 public:
  explicit SourceWriter(std::string file) : file_(std::move(file)) {}
  template <class... A>
  void line(fmt::format_string<A...> f, A&&... args) {
    out_ += fmt::format(f, std::forward<A>(args)...);
    out_ += '\n';
  }
  void raw(std::string_view text) { out_ += text; }
  // User text, reported by NVRTC as `<label>(<line>)`. `close` is the text kiln writes right
  // after it to end what it opened (`);` after a map_expr): it is mapped to the user's last
  // line, so an error it meets because the user's text stopped short (`map_expr = "x +"`) is
  // reported at `map_expr(1)`, not at a generated line. It goes on a line of its own, so a
  // trailing // comment in the user's text cannot swallow it.
  void user(std::string_view label, std::string_view text, std::string_view close = {}) {
    if (!text.empty()) {
      line("#line 1 \"{}\"", label);
      out_ += text;
      if (text.back() != '\n') out_ += '\n';
      if (!close.empty()) {
        const std::size_t last =
            std::size_t(std::count(text.begin(), text.end(), '\n')) + (text.back() == '\n' ? 0 : 1);
        line("#line {} \"{}\"", last, label);
      }
    }
    if (!close.empty()) {
      out_ += close;
      out_ += '\n';
    }
    if (!text.empty()) {
      std::size_t next = std::size_t(std::count(out_.begin(), out_.end(), '\n')) + 2;
      line("#line {} \"{}\"", next, file_);
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string file_;
  std::string out_;
};

// What the device header must include for a spec's parameter dtypes (any kind's spec: it
// has nparams and param_dtype(k)).
template <class Spec>
DeviceHeaderNeeds header_needs(const Spec& s, std::initializer_list<std::string_view> code = {}) {
  DeviceHeaderNeeds n;
  for (int k = 0; k < s.nparams; ++k) {
    dtype t = s.param_dtype(k);
    n.fp16 |= t == float16;
    n.bf16 |= t == bfloat16;
    n.complex |= t.is_complex();
  }
  // Code may use a type no parameter has (a fused expression's float16 intermediate).
  for (std::string_view c : code) {
    n.fp16 |= c.find("__half") != std::string_view::npos;
    n.bf16 |= c.find("__nv_bfloat16") != std::string_view::npos;
    n.complex |= c.find("complex<") != std::string_view::npos;
  }
  return n;
}

// `typedef float T;` for each placeholder, from the first parameter it types.
template <class Spec>
void emit_placeholder_typedefs(SourceWriter& w, const KernelDefinition& def, const Spec& s) {
  for (int id = 0; id < int(def.placeholders.size()); ++id)
    for (int k = 0; k < s.nparams; ++k)
      if (def.params[std::size_t(k)].placeholder_id == id) {
        w.line("typedef {} {};", s.param_dtype(k).device_type(), def.placeholders[std::size_t(id)]);
        break;
      }
}

// The start of every generated kernel source, the same for every kind: kiln's device code for
// the dtypes (and the types the user's `code` mentions), the kind's own device support, the
// index typedefs, then the user's part: -D macros, placeholder typedefs, the preamble.
template <class Spec>
void emit_prologue(SourceWriter& w, const KernelDefinition& def, const Spec& s,
                   std::initializer_list<std::string_view> code,
                   std::string_view kind_support = {}) {
  w.raw(device_header(header_needs(s, code)));
  w.raw(kind_support);
  w.line("typedef {} kiln_idx;", s.index_bits == 64 ? "long long" : "int");
  w.line("typedef {} kiln_uidx;", s.index_bits == 64 ? "unsigned long long" : "unsigned int");
  w.line("// ---- user code ----");
  w.user("options", def.macros.lines);
  emit_placeholder_typedefs(w, def, s);
  w.user("preamble", def.preamble);
}

}  // namespace kiln::codegen
