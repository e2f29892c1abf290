#include "kiln/ops/elementwise_kernel.hpp"

#include <fmt/format.h>

#include "kiln/cache/compile_cache.hpp"
#include "kiln/codegen/elementwise_emitter.hpp"
#include "kiln/codegen/type_resolution.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {

ElementwiseKernel::ElementwiseKernel(std::string_view in_params, std::string_view out_params,
                                     std::string operation, std::string_view name,
                                     elementwise_options options)
    : def_(std::make_shared<const codegen::ElementwiseDefinition>(
          codegen::make_elementwise_definition(
              in_params, out_params,
              {std::move(operation), std::move(options.preamble), std::move(options.loop_prep),
               std::move(options.after_loop)},
              name, options.options))),
      reduce_dims_(options.reduce_dims),
      no_return_(options.no_return),
      return_tuple_(options.return_tuple) {}

codegen::ElementwiseSpec ElementwiseKernel::make_spec(std::span<const dtype> arg_dtypes,
                                                      const elementwise_layout& layout) const {
  const auto& def = *def_;
  const std::size_t n = def.params.size();
  if (arg_dtypes.size() != std::size_t(def.nin) && arg_dtypes.size() != n)
    throw TypeError(fmt::format("kernel '{}': make_spec takes {} or {} dtypes, got {}", def.name,
                                def.nin, n, arg_dtypes.size()));
  std::array<codegen::ArgInfo, codegen::kMaxParams> info{};
  for (std::size_t k = 0; k < arg_dtypes.size(); ++k) info[k] = {arg_dtypes[k], true};
  std::array<dtype, codegen::kMaxParams> types{};
  codegen::resolve_param_types(def, std::span(info.data(), n), std::span(types.data(), n));

  codegen::ElementwiseSpec spec;
  spec.layout = layout.layout;
  spec.ndim = std::uint8_t(layout.layout == codegen::Layout::strided ? layout.ndim : 1);
  spec.index_bits = std::uint8_t(layout.index_bits);
  spec.vector_width = std::uint8_t(layout.layout == codegen::Layout::contiguous ? layout.vector_width : 1);
  spec.nparams = std::uint8_t(n);
  for (std::size_t k = 0; k < n; ++k)
    spec.set_param(int(k), types[k],
                   def.params[k].raw ? codegen::OperandKind::raw_array : codegen::OperandKind::array,
                   layout.raw_ndim, true);
  return spec;
}

std::string ElementwiseKernel::source(const codegen::ElementwiseSpec& spec) const {
  return codegen::emit_elementwise(*def_, spec);
}

cache::CompileRequest ElementwiseKernel::compile_request(const codegen::ElementwiseSpec& spec,
                                                         int arch) const {
  cache::CompileRequest req;
  req.source = source(spec);
  req.kernel_name = def_->name;
  req.options = def_->nvrtc_options;
  req.arch = arch;
  return req;
}

cache::Binary ElementwiseKernel::compile_for(const codegen::ElementwiseSpec& spec, int arch) const {
  return cache::compile_cached(compile_request(spec, arch));
}

}  // namespace kiln
