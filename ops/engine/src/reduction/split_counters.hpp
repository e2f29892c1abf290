#pragma once
// The counters of split reductions, kept per stream. The last block of each row (or column
// tile) resets its counter as it takes it (atomicInc wraps to zero), so counters a launch
// leaves are zero again for the next launch on that stream: a zeroed slab per stream serves
// every split launch on it, where a per-call workspace needed a memset node each time (a
// second launch on the GPU and about 1.5 us of a single call on an H200).
//
//   if (unsigned* sem = stream_split_counters(device, stream, rows)) ... // zero, in stream order
//   else ...  // capturing, or too many streams: zero counters of the call's own
#include <cuda_runtime_api.h>

#include <cstddef>

namespace kiln::detail {

/// `count` zeroed counters on `stream` of `device`, valid in stream order for one launch
/// that leaves them zero. nullptr while the stream captures (a graph's nodes must not rest on
/// memory outside it that eager launches share), past kMaxCounterStreams streams, for more
/// counters than a slab holds (128 per SM) and when device memory is short.
unsigned* stream_split_counters(int device, cudaStream_t stream, std::size_t count);

/// Streams (over all devices) that get a slab; later ones take the memset path. A slab is
/// never freed (its stream may be destroyed with launches still queued), so this bounds them
/// (a slab is 512 bytes per SM: 66 KiB on an H200).
inline constexpr std::size_t kMaxCounterStreams = 64;

}  // namespace kiln::detail
