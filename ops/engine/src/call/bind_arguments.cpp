// Binding what the caller passed to the kernel's parameters: argument count, launch options,
// array vs scalar, dtypes (placeholders), scalar conversion. Runs before any device work.
#include <fmt/format.h>

#include "kernel_call.hpp"
#include "kiln/codegen/type_resolution.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::detail {
namespace {

std::string param_names(const codegen::KernelDefinition& def, int from, int to) {
  std::string s;
  for (int k = from; k < to; ++k) s += (s.empty() ? "" : ", ") + def.params[std::size_t(k)].name;
  return s;
}

constexpr int kMaxBlock = 1024;  // CUDA's limit on threads per block for every device

}  // namespace

std::span<const kernel_arg> take_options(KernelCall& c, std::span<const kernel_arg> args,
                                         bool reduction) {
  const auto& def = c.def;
  if (!args.empty() && args.back().is_options()) {
    c.options = args.back().options();
    args = args.first(args.size() - 1);
  }
  if (reduction && !args.empty() && args.back().is_reduce_options()) {
    c.reduce = &args.back().reduce();
    args = args.first(args.size() - 1);
  }
  for (const auto& a : args) {
    if (a.is_options())
      throw TypeError(fmt::format("kernel '{}': launch_options must be the last argument", def.name));
    if (a.is_reduce_options())
      throw TypeError(fmt::format("kernel '{}': {}", def.name,
                                  reduction ? "reduce_options must follow the arguments (only a "
                                              "launch_options may come after it)"
                                            : "reduce_options are for reduction kernels"));
  }
  if (c.options.block_size < 0 || c.options.block_size > kMaxBlock)
    throw ValueError(fmt::format("kernel '{}': block_size {} is outside 1..{} (0 lets kiln choose)",
                                 def.name, c.options.block_size, kMaxBlock));
  const auto n = args.size();
  if (n != std::size_t(def.nin) && n != std::size_t(c.nparams))
    throw TypeError(fmt::format(
        "kernel '{}' takes {} argument{} ({}), or {} with the output{} ({}); got {}", def.name,
        def.nin, def.nin == 1 ? "" : "s", param_names(def, 0, def.nin), c.nparams,
        def.nout == 1 ? "" : "s", param_names(def, def.nin, c.nparams), n));
  return args;
}

void bind_arguments(KernelCall& c, std::span<const kernel_arg> args) {
  std::array<codegen::ArgInfo, kMaxParams> info{};
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k].is_array()) {
      const ndarray& a = args[k].array();
      if (!a.defined())
        throw ValueError(fmt::format("kernel '{}': argument '{}' is an empty ndarray handle (default-"
                                     "constructed, no data); pass an array",
                                     c.def.name, c.param_name(int(k))));
      c.arrays[k] = &a;
      info[k] = {a.dtype(), true};
    } else {
      if (int(k) >= c.def.nin)
        throw TypeError(fmt::format("kernel '{}': output '{}' must be an ndarray, not a scalar",
                                    c.def.name, c.param_name(int(k))));
      c.scalars[k] = &args[k].value();
    }
  }
  codegen::resolve_param_types(c.def, std::span(info.data(), std::size_t(c.nparams)),
                               std::span(c.types.data(), std::size_t(c.nparams)));
  for (int k = 0; k < c.nparams; ++k) {
    if (!c.scalars[k]) continue;
    try {
      c.scalars[k]->store_as(c.types[k], c.values[k].data());
    } catch (const ValueError&) {
      throw ValueError(fmt::format("kernel '{}': {} does not fit parameter '{}' ({})", c.def.name,
                                   c.scalars[k]->str(), c.param_name(k), c.types[k]));
    }
  }
}

}  // namespace kiln::detail
