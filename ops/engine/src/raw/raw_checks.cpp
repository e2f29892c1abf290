#include "raw_checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/runtime/error.hpp"

namespace kiln::detail {

std::string launch_description(std::string_view kernel, dim3 grid, dim3 block,
                               std::size_t shared_mem) {
  return fmt::format(
      "kernel '{}' (grid ({}, {}, {}), block ({}, {}, {}), {} bytes of dynamic shared memory)",
      kernel, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_mem);
}

void check_raw_args(std::string_view kernel, std::span<const ParamSlot> expected,
                    std::span<const raw_arg> given) {
  if (expected.size() != given.size())
    throw TypeError(
        fmt::format("kernel '{}' takes {} argument{} (the parameter layout the "
                    "driver reports), {} given",
                    kernel, expected.size(), expected.size() == 1 ? "" : "s", given.size()));
  std::size_t offset = 0;
  for (std::size_t k = 0; k < given.size(); ++k) {
    const raw_arg& a = given[k];
    const ParamSlot& p = expected[k];
    if (a.size() != p.size)
      throw TypeError(fmt::format(
          "kernel '{}': parameter {} is {} bytes, but argument {} is a C++ {} ({} bytes); pass "
          "the exact C++ type the kernel declares (e.g. std::size_t for size_t, std::int64_t "
          "for long long, float for float)",
          kernel, k, p.size, k, a.type(), a.size()));
    offset = (offset + a.alignment() - 1) / a.alignment() * a.alignment();
    if (offset != p.offset)
      throw TypeError(fmt::format(
          "kernel '{}': parameter {} is at offset {}, but argument {} (a C++ {}, {} bytes "
          "aligned to {}) would be at offset {}: the C++ type's alignment differs from the "
          "device type's (use alignas to match)",
          kernel, k, p.offset, k, a.type(), a.size(), a.alignment(), offset));
    offset += a.size();
  }
}

void check_launch_dims(std::string_view kernel, dim3 grid, dim3 block, std::size_t shared_mem) {
  auto fail = [&](const std::string& why) {
    throw ValueError(fmt::format("cannot launch {}: {}",
                                 launch_description(kernel, grid, block, shared_mem), why));
  };
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    fail("every grid and block dimension must be at least 1");
  const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
  if (threads > 1024)
    fail(fmt::format("the block has {} threads; the limit is 1024 threads per block", threads));
  if (block.x > 1024 || block.y > 1024 || block.z > 64)
    fail("block dimensions are limited to (1024, 1024, 64)");
  if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
    fail("grid dimensions are limited to (2147483647, 65535, 65535)");
  if (shared_mem > (std::size_t(1) << 31))
    fail("the dynamic shared memory asked for is more than any GPU has");
}

std::string cooperative_too_big(std::string_view kernel, dim3 grid, dim3 block,
                                std::size_t shared_mem, int per_multiprocessor,
                                int multiprocessors) {
  const unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
  return fmt::format(
      "cannot launch {} cooperatively: the grid has {} blocks, but at most {} blocks of this "
      "kernel can be co-resident ({} per multiprocessor x {} multiprocessors, for this block "
      "size and shared memory); use a grid of at most {} blocks (e.g. a grid-stride loop)",
      launch_description(kernel, grid, block, shared_mem), blocks,
      (long long)per_multiprocessor * multiprocessors, per_multiprocessor, multiprocessors,
      (long long)per_multiprocessor * multiprocessors);
}

std::string missing_name_message(std::string_view origin, std::string_view what,
                                 std::string_view name, const std::vector<std::string>& kernels,
                                 const std::vector<std::string>& name_expressions,
                                 const std::vector<std::string>& lowered_names) {
  std::string msg = fmt::format("module {} has no {} '{}'", origin, what, name);
  if (!kernels.empty()) msg += fmt::format("; its kernels: {}", fmt::join(kernels, ", "));
  if (!name_expressions.empty()) {
    msg += "; name expressions:";
    for (std::size_t k = 0; k < name_expressions.size(); ++k)
      msg += fmt::format(" {}{}{}", name_expressions[k],
                         k < lowered_names.size() ? " -> " + lowered_names[k] : std::string(),
                         k + 1 < name_expressions.size() ? "," : "");
  }
  if (kernels.empty() && name_expressions.empty())
    msg += " (a template or C++ kernel needs a name expression, e.g. \"f<float>\")";
  return msg;
}

}  // namespace kiln::detail
