#include "kiln/codegen/elementwise_definition.hpp"

#include <algorithm>

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kiln/codegen/nvrtc_defaults.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::codegen {
namespace {

void assign_placeholders(ElementwiseDefinition& def) {
  for (auto& p : def.params) {
    if (!p.has_placeholder()) continue;
    auto it = std::find(def.placeholders.begin(), def.placeholders.end(), p.placeholder);
    p.placeholder_id = int(it - def.placeholders.begin());
    if (it == def.placeholders.end()) def.placeholders.push_back(p.placeholder);
  }
}

// `typedef float T;` and `const T T` cannot both exist: a name may not be a placeholder too.
void check_names(const ElementwiseDefinition& def, std::string_view in_text,
                 std::string_view out_text) {
  for (std::size_t k = 0; k < def.params.size(); ++k) {
    const Param& p = def.params[k];
    std::string_view text = p.is_output ? out_text : in_text;
    if (std::find(def.placeholders.begin(), def.placeholders.end(), p.name) != def.placeholders.end())
      throw signature_error(fmt::format("'{}' is used both as a parameter name and a type", p.name),
                            text, p.position);
    for (std::size_t j = 0; j < k; ++j)
      if (def.params[j].name == p.name)
        throw signature_error(
            fmt::format("parameter '{}' is declared as both an input and an output", p.name),
            text, p.position);
  }
}

void hash_definition(ElementwiseDefinition& def) {
  XXH3_state_t st;
  XXH3_128bits_reset(&st);
  auto put = [&](std::string_view s) {
    std::uint64_t n = s.size();
    XXH3_128bits_update(&st, &n, sizeof n);
    XXH3_128bits_update(&st, s.data(), s.size());
  };
  put("kiln.elementwise.v1");
  put(def.name);
  for (const auto& p : def.params)
    put(fmt::format("{}|{}|{}|{}", p.str(), p.is_output, p.raw, p.placeholder_id));
  put(def.code.operation);
  put(def.code.preamble);
  put(def.code.loop_prep);
  put(def.code.after_loop);
  for (const auto& o : def.nvrtc_options) put(o);
  put(def.macros.lines);
  XXH128_hash_t h = XXH3_128bits_digest(&st);
  def.hash_hi = h.high64;
  def.hash_lo = h.low64;
}

}  // namespace

ElementwiseDefinition make_elementwise_definition(std::string_view in_params,
                                                  std::string_view out_params,
                                                  ElementwiseCode code, std::string_view name,
                                                  const std::vector<std::string>& options) {
  validate_kernel_name(name);
  ElementwiseDefinition def;
  def.name = std::string(name);
  def.params = parse_params(in_params, false);
  def.nin = int(def.params.size());
  auto outs = parse_params(out_params, true);
  def.nout = int(outs.size());
  def.params.insert(def.params.end(), outs.begin(), outs.end());
  if (def.params.size() > std::size_t(kMaxParams))
    throw signature_error(fmt::format("a kernel has at most {} parameters", kMaxParams), out_params,
                          0);
  assign_placeholders(def);
  check_names(def, in_params, out_params);
  def.code = std::move(code);
  SplitOptions split = split_user_macros(options);
  def.nvrtc_options = with_nvrtc_defaults(std::move(split.nvrtc_options));
  def.macros = std::move(split.macros);
  hash_definition(def);
  return def;
}

}  // namespace kiln::codegen
