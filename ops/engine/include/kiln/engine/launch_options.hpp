#pragma once
// Per-call options of a kernel call, passed as the last argument:
//
//   k(x, y, kiln::launch_options{.block_size = 128});
//   k(x, y, z, kiln::launch_options{.stream = &s});  // runs on s (its device must be current)
//   fill_raw(out, kiln::launch_options{.size = n});  // every array argument is raw
//   raw(grid, block, x, n, kiln::launch_options{.shared_mem = 64 << 10});  // RawKernel
#include <cstddef>
#include <cstdint>

#include "kiln/runtime/stream.hpp"

namespace kiln {

struct launch_options {
  /// Loop size. Only when no non-raw array argument fixes the loop shape (CuPy's `size=`);
  /// -1: decided by the arguments.
  std::int64_t size = -1;
  /// Threads per block, 1..1024 (and at most what the compiled kernel allows); 0: kiln's
  /// choice (256). Elementwise loops in tiles or boxes (transposed or permuted operands) and
  /// interleaved groups (a short axis beside a long one) need 256, their shared memory sized
  /// for it: another size plans the loop without them (strided or gathered).
  int block_size = 0;
  /// Stream to run on; nullptr: the current stream of the current device. Outputs kiln
  /// allocates are allocated on it too.
  const Stream* stream = nullptr;
  /// RawKernel: bytes of dynamic shared memory per block (above 48 KiB kiln raises the
  /// kernel's limit to what is asked, up to the device's opt-in maximum).
  std::size_t shared_mem = 0;
};

}  // namespace kiln
