#pragma once
// Launch geometry of generated kernels, beside the emitters whose loops it must cover.
//
//   LaunchGeometry g = elementwise_geometry(spec, n, /*block=*/0);
//   // g.block == 256; g.grid covers n elements (n / vector width / unroll per thread)
#include <cstdint>

#include "kiln/codegen/elementwise_spec.hpp"

namespace kiln::codegen {

inline constexpr int kDefaultBlock = 256;

struct LaunchGeometry {
  std::uint32_t grid = 1;
  int block = kDefaultBlock;
};

/// One thread per item of the emitted loop (a group of `unroll` vectors, or one element),
/// with the grid-stride loop covering only loops past the hardware grid limit. `block` 0
/// means kDefaultBlock capped at `max_block` (the loaded kernel's limit).
LaunchGeometry elementwise_geometry(const ElementwiseSpec& spec, std::int64_t size, int block,
                                    int max_block);

}  // namespace kiln::codegen
