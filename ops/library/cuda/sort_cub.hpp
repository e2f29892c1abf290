#pragma once
// Internal: the nvcc-compiled half of kiln::sort / kiln::argsort (ops/cuda/*.cu). Plain types
// only, so this header is shared by g++ (ops/src/sort.cpp) and nvcc without kiln's headers.
//
// A values-only sort of one row hands the input to cub::DeviceRadixSort as its own type (every
// integer, float, double) and then moves NaNs with the sign bit (which CUB puts first) to the
// end. Otherwise keys are sorted as unsigned integers of 1, 2, 4 or 8 bytes: signed integers and
// floats are mapped to an order-preserving unsigned key first (floats: every NaN to the largest
// key, so NaNs come last as in NumPy and argsort stays stable among them) and mapped back
// after. Rows are contiguous and of equal length `n`; `rows > 1` uses cub::DeviceSegmentedSort,
// `rows == 1` cub::DeviceRadixSort.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kiln::detail {

/// Rows a captured sort may have: up to here cub::DeviceSegmentedSort sorts without
/// partitioning the segments (CUB's smallest PARTITIONING_THRESHOLD); beyond, it copies the
/// partition sizes to the host and waits, which a graph capture cannot record.
inline constexpr std::int64_t kMaxCapturedSortRows = 300;

enum class sort_key_kind : std::uint8_t { unsigned_int, signed_int, floating };

struct SortJob {
  const void* in = nullptr;             // rows * n elements, C-contiguous
  void* out_values = nullptr;           // sorted elements (sort), or nullptr
  std::int64_t* out_indices = nullptr;  // argsort result (row-local indices), or nullptr
  std::int64_t rows = 1, n = 0;
  int key_bytes = 4;  // 1, 2, 4 or 8
  sort_key_kind kind = sort_key_kind::floating;
  std::uint64_t float_inf_bits = 0;  // floating: +inf's bit pattern (tells NaNs apart)
  cudaStream_t stream = nullptr;
};

struct SortStatus {
  cudaError_t code = cudaSuccess;
  const char* call = "";  // the CUB or CUDA call that failed
};

/// Bytes of device scratch `cub_sort` needs for `job` (no device work).
SortStatus cub_sort_scratch_bytes(const SortJob& job, std::size_t& bytes);
/// Runs the sort on job.stream with `scratch` of at least cub_sort_scratch_bytes bytes.
SortStatus cub_sort(const SortJob& job, void* scratch, std::size_t scratch_bytes);

}  // namespace kiln::detail
