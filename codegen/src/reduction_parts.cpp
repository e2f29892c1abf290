#include "kiln/codegen/reduction_parts.hpp"

#include <fmt/format.h>

#include <iterator>
#include <vector>

namespace kiln::codegen {

namespace {

// Part `index`'s functions, in a namespace that sees its helpers' namespace.
std::string part_functions(const ReductionPart& p, int index, int helpers) {
  const ReductionCode& c = p.code;
  const bool identity = !c.identity.empty();
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out, "namespace kiln_r{} {{\nusing namespace kiln_h{};\n", index, helpers);
  fmt::format_to(out, "typedef {} _type_reduce;\n", c.reduce_type.empty() ? "U" : c.reduce_type);
  s += "struct __align__(8) acc { _type_reduce v; bool has; };\n";
  fmt::format_to(out,
                 "__device__ __forceinline__ _type_reduce map(const T x, const long long _J) {{\n"
                 "  (void)_J;\n  return static_cast<_type_reduce>({});\n}}\n",
                 c.map_expr);
  fmt::format_to(out,
                 "__device__ __forceinline__ _type_reduce reduce(const _type_reduce& a, const "
                 "_type_reduce& b) {{\n"
                 "  return ({});\n}}\n",
                 c.reduce_expr);
  s += "__device__ __forceinline__ acc init() {\n  acc r;\n";
  if (identity)
    fmt::format_to(out, "  r.v = static_cast<_type_reduce>({});\n  r.has = true;\n", c.identity);
  else
    s += "  r.has = false;\n";
  s += "  return r;\n}\n";
  s += "__device__ __forceinline__ void add(acc& x, const _type_reduce& v) {\n";
  s += identity ? "  x.v = reduce(x.v, v);\n"
                : "  x.v = x.has ? reduce(x.v, v) : v;\n  x.has = true;\n";
  s += "}\n";
  s += "__device__ __forceinline__ void combine(acc& x, const acc& y) {\n";
  s += identity ? "  x.v = reduce(x.v, y.v);\n" : "  if (y.has) add(x, y.v);\n";
  s += "}\n";
  fmt::format_to(
      out,
      "__device__ __forceinline__ void post(const _type_reduce& a, U& y, const long long ddof,\n"
      "                                     const long long kiln_in_size, const long long "
      "kiln_out_size) {{\n"
      "  const kiln_loop_index<long long> _in_ind{{kiln_in_size, 0}}, _out_ind{{kiln_out_size, "
      "0}};\n"
      "  (void)_in_ind; (void)_out_ind; (void)ddof;\n"
      "  {};\n}}\n",
      c.post_map_expr);
  fmt::format_to(out, "}}  // namespace kiln_r{}\n", index);
  return s;
}

}  // namespace

std::string reduction_parts_text(std::span<const ReductionPart> parts) {
  // Parts of the same element and result dtypes and helpers share one namespace of helpers:
  // NVRTC parses a built-in's device helpers once per kernel, not once per reduction.
  std::vector<int> helper_of(parts.size(), -1);
  std::string s;
  int nhelpers = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    for (std::size_t j = 0; j < k; ++j)
      if (parts[j].in == parts[k].in && parts[j].out == parts[k].out &&
          parts[j].code.preamble == parts[k].code.preamble)
        helper_of[k] = helper_of[j];
    if (helper_of[k] >= 0) continue;
    helper_of[k] = nhelpers++;
    fmt::format_to(std::back_inserter(s), "namespace kiln_h{} {{\ntypedef {} T;\ntypedef {} U;\n",
                   helper_of[k], parts[k].in.device_type(), parts[k].out.device_type());
    s += parts[k].code.preamble;
    if (!parts[k].code.preamble.empty() && parts[k].code.preamble.back() != '\n') s += '\n';
    fmt::format_to(std::back_inserter(s), "}}  // namespace kiln_h{}\n", helper_of[k]);
  }
  for (std::size_t k = 0; k < parts.size(); ++k)
    s += part_functions(parts[k], int(k), helper_of[k]);
  return s;
}

ReductionCode composite_reduction(std::span<const ReductionPart> parts,
                                  std::span<const std::string> inputs,
                                  std::span<const int> ddof_inputs, std::string_view helpers) {
  ReductionCode c;
  c.preamble = helpers;
  c.preamble += reduction_parts_text(parts);
  c.preamble += "struct kiln_multi {";
  for (std::size_t k = 0; k < parts.size(); ++k)
    fmt::format_to(std::back_inserter(c.preamble), " kiln_r{}::_type_reduce v{};", k, k);
  c.preamble += " };\n";
  // An element folded into a state that holds one folds into each part's state as that part's
  // type would (the moments' fold skips choosing a shift; the others reduce).
  c.preamble +=
      "template <class kiln_F>\n"
      "__device__ __forceinline__ kiln_multi kiln_fold(const kiln_multi& a, const kiln_multi& b, "
      "kiln_F) {\n  return kiln_multi{";
  for (std::size_t k = 0; k < parts.size(); ++k)
    fmt::format_to(std::back_inserter(c.preamble),
                   "{}kiln_fold(a.v{}, b.v{}, [](const kiln_r{}::_type_reduce& x, const "
                   "kiln_r{}::_type_reduce& y) {{ return kiln_r{}::reduce(x, y); }})",
                   k ? ", " : "", k, k, k, k, k);
  c.preamble += "};\n}\n";
  c.reduce_type = "kiln_multi";
  bool identity = true;
  for (const auto& p : parts) identity = identity && !p.code.identity.empty();
  c.map_expr = "kiln_multi{";
  c.reduce_expr = "kiln_multi{";
  c.identity = identity ? "kiln_multi{" : "";
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const char* sep = k ? ", " : "";
    fmt::format_to(std::back_inserter(c.map_expr), "{}kiln_r{}::map({}, _J)", sep, k, inputs[k]);
    fmt::format_to(std::back_inserter(c.reduce_expr), "{}kiln_r{}::reduce(a.v{}, b.v{})", sep, k, k,
                   k);
    if (identity) fmt::format_to(std::back_inserter(c.identity), "{}kiln_r{}::init().v", sep, k);
    const std::string ddof =
        ddof_inputs[k] >= 0 ? fmt::format("(long long)in{}", ddof_inputs[k]) : "0";
    fmt::format_to(std::back_inserter(c.post_map_expr),
                   "kiln_r{}::post(a.v{}, out{}, {}, _in_ind.size(), _out_ind.size());\n", k, k, k,
                   ddof);
  }
  c.map_expr += "}";
  c.reduce_expr += "}";
  if (identity) c.identity += "}";
  return c;
}

}  // namespace kiln::codegen
