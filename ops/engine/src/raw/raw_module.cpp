// RawModule: a user program or binary; kernels by name (RawKernel), variables as ndarray views.
#include "kiln/engine/raw_module.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"
#include "raw_source.hpp"

namespace kiln {

RawModule::RawModule(std::shared_ptr<const detail::RawSource> src) : src_(std::move(src)) {}

RawModule::RawModule(std::string_view code, raw_options options)
    : src_(detail::RawSource::from_code(std::string(code), std::move(options), "<string>")) {}

RawModule RawModule::from_file(const std::filesystem::path& path, raw_options options) {
  return RawModule(detail::RawSource::from_file(path, std::move(options)));
}

RawKernel RawModule::get_function(std::string_view name) const {
  return RawKernel(src_, std::string(name), src_->cooperative);
}

ndarray RawModule::get_global(std::string_view name, dtype t, std::optional<Shape> shape) const {
  const int device = current_device();
  const cache::LoadedKernel& m = src_->module_on(device);
  const auto g = m.module->global(src_->symbol(m, name));
  if (!g) throw ValueError(src_->missing_message(m, "__device__ or __constant__ variable", name));
  const auto [ptr, bytes] = *g;
  const std::size_t item = t.itemsize();
  if (!shape) {
    if (bytes % item != 0)
      throw ValueError(
          fmt::format("get_global('{}'): the variable is {} bytes, not a whole "
                      "number of {} ({} bytes)",
                      name, bytes, t.name(), item));
    shape = Shape{std::int64_t(bytes / item)};
  }
  std::int64_t n = 1;
  for (int d = 0; d < shape->size(); ++d) n *= (*shape)[d];
  if (std::size_t(n) * item != bytes)
    throw ValueError(
        fmt::format("get_global('{}'): the variable is {} bytes, but a {} view of "
                    "shape {} is {} bytes",
                    name, bytes, t.name(), shape->str(), std::size_t(n) * item));
  auto buffer = Buffer::borrow(ptr, bytes, device, m.module);
  return ndarray(std::move(buffer), *shape, c_strides(*shape, std::int64_t(item)), 0, t);
}

std::string RawModule::lowered_name(std::string_view name_expression) const {
  const std::string n = normalize_name_expression(name_expression);
  const cache::LoadedKernel& m = src_->module_on(current_device());
  for (std::size_t k = 0; k < src_->name_expressions.size(); ++k)
    if (src_->name_expressions[k] == n && k < m.lowered_names.size()) return m.lowered_names[k];
  throw ValueError(fmt::format("'{}' is not one of the module's name expressions ({})",
                               name_expression, fmt::join(src_->name_expressions, ", ")));
}

std::vector<std::filesystem::path> RawModule::headers() const { return src_->headers.files; }

Hash128 RawModule::cache_key(int arch) const {
  if (src_->kind != detail::RawSource::Kind::source)
    throw ValueError(
        fmt::format("module {} is a compiled file: it has no compile cache key", src_->origin));
  return cache::cache_key(src_->request(arch));
}

std::vector<cache::CompileRequest> RawModule::compile_requests(int arch) const {
  cache::check_arch(arch);
  if (src_->kind != detail::RawSource::Kind::source) return {};
  return {src_->request(arch)};
}

}  // namespace kiln
