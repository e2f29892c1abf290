// Where a call runs: the current device, and launch_options::stream or its current stream.
#include <fmt/format.h>

#include "kernel_call.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::detail {

void choose_device(KernelCall& c) {
  c.device = current_device();
  if (c.options.stream) {
    if (c.options.stream->device() != c.device)
      throw ValueError(fmt::format(
          "kernel '{}': the stream belongs to device {} but device {} is current", c.def.name,
          c.options.stream->device(), c.device));
    c.stream = c.options.stream->handle();
  } else {
    c.stream = current_stream_handle(c.device);
  }
  for (int k = 0; k < c.nparams; ++k)
    if (c.arrays[k] && c.arrays[k]->size() > 0 && c.arrays[k]->device() != c.device)
      throw ValueError(fmt::format("kernel '{}': argument '{}' is on device {}, not on the "
                                   "current device {}",
                                   c.def.name, c.param_name(k), c.arrays[k]->device(), c.device));
}

Stream allocation_stream(const KernelCall& c) {
  return c.options.stream ? *c.options.stream : current_stream();
}

}  // namespace kiln::detail
