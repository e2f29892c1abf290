// The nvcc-compiled half of kiln::sort / kiln::argsort: order-preserving key maps and the CUB
// calls. Explicit instantiations only: four unsigned key widths x {keys, pairs with int64
// indices} x {one row: DeviceRadixSort, many rows: DeviceSegmentedSort}. Built for sm_90 with
// PTX for newer GPUs; see ops/CMakeLists.txt. Interface: sort_cub.hpp.
#include "sort_cub.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

namespace kiln::detail {
namespace {

constexpr std::size_t kAlign = 256;
std::size_t align_up(std::size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

template <class U>
struct KeyMap {
  static constexpr U sign = U(U(1) << (sizeof(U) * 8 - 1));
  sort_key_kind kind;
  U inf;             // floating: +inf's bits
  bool zero_is_one;  // floating: map -0.0 to +0.0's key (stable argsort ties as NumPy)

  __device__ U to_key(U x) const {
    if (kind == sort_key_kind::unsigned_int) return x;
    if (kind == sort_key_kind::signed_int) return U(x ^ sign);
    U mag = U(x & U(~sign));
    if (mag > inf) return U(~U(0));  // any NaN: last
    if (zero_is_one && mag == 0) return sign;
    return (x & sign) ? U(~x) : U(x | sign);
  }
  __device__ U from_key(U k) const {
    if (kind == sort_key_kind::unsigned_int) return k;
    if (kind == sort_key_kind::signed_int) return U(k ^ sign);
    return (k & sign) ? U(k & U(~sign)) : U(~k);
  }
};

template <class U>
__global__ void map_to_keys(const U* in, U* keys, std::int64_t count, KeyMap<U> m) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    keys[i] = m.to_key(in[i]);
}

template <class U>
__global__ void map_from_keys(const U* keys, U* out, std::int64_t count, KeyMap<U> m) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = m.from_key(keys[i]);
}

// Row-local indices 0..n-1 per row, and the row offsets (rows + 1 of them) when asked.
__global__ void fill_indices(std::int64_t* idx, std::int64_t count, std::int64_t n,
                             std::int64_t* offsets, std::int64_t rows) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (idx) idx[i] = i % n;
    if (offsets && i <= rows) offsets[i] = i * n;
  }
}

unsigned grid_for(std::int64_t count) {
  std::int64_t blocks = (count + 255) / 256;
  return unsigned(blocks < 65535 * 32 ? (blocks > 0 ? blocks : 1) : 65535 * 32);
}

// Scratch layout: [keys A][keys B][indices B][offsets][cub temp]. Keys A is the output buffer
// itself for sort (the map runs in place there).
template <class U>
struct Plan {
  std::size_t keys_a = 0, keys_b = 0, idx_b = 0, offsets = 0, cub = 0;
  std::size_t total() const { return keys_a + keys_b + idx_b + offsets + cub; }
};

template <class U>
cudaError_t cub_call(const SortJob& job, void* temp, std::size_t& temp_bytes,
                     cub::DoubleBuffer<U>& keys, cub::DoubleBuffer<std::int64_t>& idx,
                     const std::int64_t* offsets, const char*& call) {
  const std::int64_t count = job.rows * job.n;
  const bool pairs = job.out_indices != nullptr;
  if (job.rows == 1) {
    if (pairs) {
      call = "cub::DeviceRadixSort::SortPairs";
      return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, idx, count, 0,
                                             int(sizeof(U) * 8), job.stream);
    }
    call = "cub::DeviceRadixSort::SortKeys";
    return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys, count, 0, int(sizeof(U) * 8),
                                          job.stream);
  }
  if (pairs) {
    call = "cub::DeviceSegmentedSort::StableSortPairs";
    return cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, keys, idx, count, job.rows,
                                                     offsets, offsets + 1, job.stream);
  }
  call = "cub::DeviceSegmentedSort::StableSortKeys";
  return cub::DeviceSegmentedSort::StableSortKeys(temp, temp_bytes, keys, count, job.rows, offsets,
                                                  offsets + 1, job.stream);
}

template <class U>
SortStatus plan(const SortJob& job, Plan<U>& p) {
  const std::size_t count = std::size_t(job.rows * job.n);
  const bool pairs = job.out_indices != nullptr;
  p.keys_a = pairs ? align_up(count * sizeof(U)) : 0;
  p.keys_b = align_up(count * sizeof(U));
  p.idx_b = pairs ? align_up(count * sizeof(std::int64_t)) : 0;
  p.offsets = job.rows > 1 ? align_up(std::size_t(job.rows + 1) * sizeof(std::int64_t)) : 0;
  cub::DoubleBuffer<U> keys(nullptr, nullptr);
  cub::DoubleBuffer<std::int64_t> idx(nullptr, nullptr);
  std::size_t temp = 0;
  const char* call = "";
  cudaError_t e = cub_call<U>(job, nullptr, temp, keys, idx, nullptr, call);
  p.cub = align_up(temp);
  return {e, call};
}

template <class U>
SortStatus run(const SortJob& job, void* scratch, std::size_t scratch_bytes) {
  Plan<U> p;
  SortStatus s = plan<U>(job, p);
  if (s.code != cudaSuccess) return s;
  if (scratch_bytes < p.total()) return {cudaErrorInvalidValue, "kiln sort scratch size"};
  const std::int64_t count = job.rows * job.n;
  const bool pairs = job.out_indices != nullptr;
  char* base = static_cast<char*>(scratch);
  U* keys_a = pairs ? reinterpret_cast<U*>(base) : static_cast<U*>(job.out_values);
  U* keys_b = reinterpret_cast<U*>(base + p.keys_a);
  auto* idx_b = reinterpret_cast<std::int64_t*>(base + p.keys_a + p.keys_b);
  auto* offsets =
      job.rows > 1 ? reinterpret_cast<std::int64_t*>(base + p.keys_a + p.keys_b + p.idx_b) : nullptr;
  void* temp = base + p.keys_a + p.keys_b + p.idx_b + p.offsets;
  std::size_t temp_bytes = p.cub;

  KeyMap<U> m{job.kind, U(job.float_inf_bits), pairs};
  const unsigned grid = grid_for(count);
  map_to_keys<U><<<grid, 256, 0, job.stream>>>(static_cast<const U*>(job.in), keys_a, count, m);
  if (pairs || offsets)
    fill_indices<<<grid_for(count + 1), 256, 0, job.stream>>>(job.out_indices, count, job.n,
                                                               offsets, job.rows);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "kiln sort key map launch"};

  cub::DoubleBuffer<U> keys(keys_a, keys_b);
  cub::DoubleBuffer<std::int64_t> idx(job.out_indices, idx_b);
  const char* call = "";
  if (cudaError_t e = cub_call<U>(job, temp, temp_bytes, keys, idx, offsets, call); e != cudaSuccess)
    return {e, call};
  if (pairs) {
    if (idx.Current() != job.out_indices) {
      cudaError_t e = cudaMemcpyAsync(job.out_indices, idx.Current(), count * sizeof(std::int64_t),
                                      cudaMemcpyDeviceToDevice, job.stream);
      if (e != cudaSuccess) return {e, "cudaMemcpyAsync (argsort indices)"};
    }
  } else {
    map_from_keys<U><<<grid, 256, 0, job.stream>>>(keys.Current(), static_cast<U*>(job.out_values),
                                                   count, m);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "kiln sort key unmap launch"};
  }
  return {};
}

template <class F>
SortStatus by_width(int bytes, F&& f) {
  switch (bytes) {
    case 1: return f(std::uint8_t{});
    case 2: return f(std::uint16_t{});
    case 4: return f(std::uint32_t{});
    case 8: return f(std::uint64_t{});
    default: return {cudaErrorInvalidValue, "kiln sort key width"};
  }
}

}  // namespace

SortStatus cub_sort_scratch_bytes(const SortJob& job, std::size_t& bytes) {
  return by_width(job.key_bytes, [&](auto u) {
    Plan<decltype(u)> p;
    SortStatus s = plan(job, p);
    bytes = p.total();
    return s;
  });
}

SortStatus cub_sort(const SortJob& job, void* scratch, std::size_t scratch_bytes) {
  return by_width(job.key_bytes,
                  [&](auto u) { return run<decltype(u)>(job, scratch, scratch_bytes); });
}

}  // namespace kiln::detail
