#pragma once
// Internal: the row loop of a lane-group kernel, shared by the reduction and row emitters.
// blockDim.x lanes per row (a power of two up to 32), blockDim.y rows per block, the grid
// striding over kiln_m rows. Every lane runs every iteration (a row past the end is not
// `kiln_live`), so the loop stays uniform across the block for the shuffles inside it.
#include "source_writer.hpp"

namespace kiln::codegen {

/// Opens the loop (the caller closes it with "  }"): kiln_t, kiln_lanes, then per iteration
/// kiln_row and kiln_live.
inline void open_lane_group_rows(SourceWriter& w) {
  w.line("  const kiln_uidx kiln_t = threadIdx.x, kiln_lanes = blockDim.x;");
  w.line(
      "  for (kiln_uidx kiln_base = kiln_uidx(blockIdx.x) * blockDim.y; kiln_base < "
      "kiln_uidx(kiln_m);");
  w.line("       kiln_base += kiln_uidx(gridDim.x) * blockDim.y) {{");
  w.line("    const kiln_uidx kiln_row = kiln_base + threadIdx.y;");
  w.line("    const bool kiln_live = kiln_row < kiln_uidx(kiln_m);");
}

}  // namespace kiln::codegen
