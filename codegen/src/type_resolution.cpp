#include "kiln/codegen/type_resolution.hpp"

#include <fmt/format.h>

#include <array>

#include "kiln/runtime/error.hpp"

namespace kiln::codegen {
namespace {

struct Binding {
  dtype type = float64;
  int by = -1;  // parameter index that bound it; -1 while unbound
};

void bind(const KernelDefinition& def, int k, const ArgInfo& a,
          std::array<Binding, kMaxParams>& bound) {
  const Param& p = def.params[std::size_t(k)];
  if (!a.is_array) return;
  if (!p.has_placeholder()) {
    if (a.type != p.fixed)
      throw TypeError(fmt::format(
          "kernel '{}': argument '{}' is a {} array but parameter '{}' takes {} (dtypes must "
          "match exactly; convert with astype)",
          def.name, p.name, a.type, p.str(), p.fixed));
    return;
  }
  Binding& b = bound[std::size_t(p.placeholder_id)];
  if (b.by < 0) {
    b = {a.type, k};
    return;
  }
  if (b.type != a.type)
    throw TypeError(fmt::format(
        "kernel '{}': argument '{}' is a {} array but type {} was bound to {} by argument '{}' "
        "(arrays of one placeholder type must have the same dtype)",
        def.name, p.name, a.type, p.placeholder, b.type, def.params[std::size_t(b.by)].name));
}

}  // namespace

void resolve_param_types(const KernelDefinition& def, std::span<const ArgInfo> args,
                         std::span<dtype> out) {
  std::array<Binding, kMaxParams> bound{};
  const int n = int(def.params.size());
  for (int k = def.nin; k < n; ++k) bind(def, k, args[std::size_t(k)], bound);
  for (int k = 0; k < def.nin; ++k) bind(def, k, args[std::size_t(k)], bound);
  for (int k = 0; k < n; ++k) {
    const Param& p = def.params[std::size_t(k)];
    if (!p.has_placeholder()) {
      out[std::size_t(k)] = p.fixed;
      continue;
    }
    const Binding& b = bound[std::size_t(p.placeholder_id)];
    if (b.by < 0)
      throw TypeError(fmt::format(
          "kernel '{}': cannot deduce type {} of parameter '{}': no array argument has type {} "
          "(scalars do not bind a type; pass an array, or the output, for one parameter of "
          "type {})",
          def.name, p.placeholder, p.name, p.placeholder, p.placeholder));
    out[std::size_t(k)] = b.type;
  }
}

}  // namespace kiln::codegen
