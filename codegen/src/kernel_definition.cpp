#include "kiln/codegen/kernel_definition.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kiln/codegen/nvrtc_defaults.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::codegen {
namespace {

void assign_placeholders(KernelDefinition& def) {
  for (auto& p : def.params) {
    if (!p.has_placeholder()) continue;
    auto it = std::find(def.placeholders.begin(), def.placeholders.end(), p.placeholder);
    p.placeholder_id = int(it - def.placeholders.begin());
    if (it == def.placeholders.end()) def.placeholders.push_back(p.placeholder);
  }
}

bool is_placeholder(const KernelDefinition& def, std::string_view name) {
  return std::find(def.placeholders.begin(), def.placeholders.end(), name) !=
         def.placeholders.end();
}

// `typedef float T;` and `const T T` cannot both exist: a name may not be a placeholder too.
void check_names(const KernelDefinition& def, std::string_view in_text, std::string_view out_text) {
  for (std::size_t k = 0; k < def.params.size(); ++k) {
    const Param& p = def.params[k];
    std::string_view text = p.is_output ? out_text : in_text;
    if (is_placeholder(def, p.name))
      throw signature_error(fmt::format("'{}' is used both as a parameter name and a type", p.name),
                            text, p.position);
    for (std::size_t j = 0; j < k; ++j)
      if (def.params[j].name == p.name)
        throw signature_error(
            fmt::format("parameter '{}' is declared as both an input and an output", p.name), text,
            p.position);
  }
}

// A -D macro named like a parameter, placeholder or the kernel would rewrite kiln's
// generated declarations, not just the user's code: reject it while the user can still see why.
void check_macros(const KernelDefinition& def) {
  for (const auto& m : def.macros.names) {
    const char* what = nullptr;
    if (m == def.name)
      what = "the kernel's name";
    else if (is_placeholder(def, m))
      what = "a type placeholder";
    else if (std::any_of(def.params.begin(), def.params.end(),
                         [&](const Param& p) { return p.name == m; }))
      what = "a parameter";
    if (what)
      throw SignatureError(
          fmt::format("kernel '{}': option -D{} names {} of the kernel; the macro would rename "
                      "it in kiln's generated code too. Rename the macro or the {}",
                      def.name, m, what, m == def.name ? "kernel" : "parameter"),
          0);
  }
}

void hash_definition(KernelDefinition& def, const KernelDefinitionArgs& a) {
  Hasher128 h;
  h.str("kiln.definition.v2");
  h.str(a.kind);
  h.str(def.name);
  h.u64(def.params.size());
  for (const auto& p : def.params) {
    h.str(p.str());
    h.u32(std::uint32_t(p.is_output) | std::uint32_t(p.raw) << 1);
    h.u32(std::uint32_t(p.placeholder_id));
  }
  h.u64(a.code.size());
  for (std::string_view c : a.code) h.str(c);
  h.str(def.preamble);
  h.u64(def.nvrtc_options.size());
  for (const auto& o : def.nvrtc_options) h.str(o);
  h.str(def.macros.lines);
  def.hash = h.digest();
}

}  // namespace

KernelDefinition make_kernel_definition(const KernelDefinitionArgs& a) {
  validate_kernel_name(a.name);
  KernelDefinition def;
  def.name = std::string(a.name);
  def.params = parse_params(a.in_params, false);
  def.nin = int(def.params.size());
  auto outs = parse_params(a.out_params, true);
  def.nout = int(outs.size());
  def.params.insert(def.params.end(), outs.begin(), outs.end());
  if (def.params.size() > std::size_t(kMaxParams))
    throw signature_error(fmt::format("a kernel has at most {} parameters", kMaxParams),
                          a.out_params, 0);
  assign_placeholders(def);
  check_names(def, a.in_params, a.out_params);
  def.preamble = std::string(a.preamble);
  SplitOptions split = split_user_macros(a.options ? *a.options : std::vector<std::string>{});
  def.nvrtc_options = with_nvrtc_defaults(std::move(split.nvrtc_options));
  def.macros = std::move(split.macros);
  check_macros(def);
  hash_definition(def, a);
  return def;
}

}  // namespace kiln::codegen
