#pragma once
// Internal: the checks of a RawKernel launch and the messages of RawModule lookups, as pure
// functions (no GPU), so every message is tested on a CPU.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/engine/raw_args.hpp"
#include "kiln/runtime/module.hpp"

namespace kiln::detail {

/// Throws TypeError when `given` does not match the driver's parameter layout: the count, then
/// per parameter the size and the offset the C++ types' sizes and alignments lead to.
void check_raw_args(std::string_view kernel, std::span<const ParamSlot> expected,
                    std::span<const raw_arg> given);

/// Throws ValueError when grid or block break a hardware limit (no device needed): a zero
/// dimension, more than 1024 threads per block, block dims past (1024, 1024, 64), grid dims
/// past (2^31-1, 65535, 65535).
void check_launch_dims(std::string_view kernel, dim3 grid, dim3 block, std::size_t shared_mem);

/// "kernel 'k' (grid (4, 1, 1), block (256, 1, 1), 0 bytes of dynamic shared memory)"
std::string launch_description(std::string_view kernel, dim3 grid, dim3 block,
                               std::size_t shared_mem);

/// ValueError text for a cooperative grid larger than what can be co-resident.
std::string cooperative_too_big(std::string_view kernel, dim3 grid, dim3 block,
                                std::size_t shared_mem, int per_multiprocessor,
                                int multiprocessors);

/// "module <origin> has no kernel 'x'; its kernels: ...; name expressions: ..."
std::string missing_name_message(std::string_view origin, std::string_view what,
                                 std::string_view name, const std::vector<std::string>& kernels,
                                 const std::vector<std::string>& name_expressions,
                                 const std::vector<std::string>& lowered_names);

}  // namespace kiln::detail
