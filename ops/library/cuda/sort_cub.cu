// The nvcc-compiled half of kiln::sort / kiln::argsort: the CUB calls and the small kernels
// around them. Values-only sorts of one row go straight through CUB for every type it orders
// natively (ints, float, double); argsort, many rows and 16-bit floats sort order-preserving
// unsigned keys (four widths x {keys, pairs with int64 indices} x {DeviceRadixSort,
// DeviceSegmentedSort}). Built for sm_90 with PTX for newer GPUs; see ops/CMakeLists.txt.
// Interface: sort_cub.hpp.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "sort_cub.hpp"

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

// One row, values only, of a type CUB orders natively (every integer, float, double): CUB reads
// the input and writes the output itself, with no key map before or after (two full passes
// fewer). CUB orders -0.0 and +0.0 as equal but puts NaNs with the sign bit set before -inf;
// those are moved after everything by two kernels that return at once when out[0] is not such
// a NaN (the usual case). The rotation uses the scratch after CUB is done with it.
bool native_path(const SortJob& job) {
  return job.rows == 1 && job.out_indices == nullptr &&
         !(job.kind == sort_key_kind::floating && job.key_bytes < 4);
}

template <class U>
__device__ bool negative_nan(U bits, U inf) {
  constexpr U sign = U(U(1) << (sizeof(U) * 8 - 1));
  return (bits & sign) && U(bits & U(~sign)) > inf;
}

// Block 0 stores how many negative NaNs lead the sorted row (0 unless out[0] is one); when
// there are some, every block writes the rotated row into `tmp`.
template <class U>
__global__ void rotate_negative_nans(const U* out, U* tmp, std::int64_t count, U inf,
                                     std::int64_t* lead) {
  __shared__ std::int64_t k;
  if (threadIdx.x == 0) {
    k = 0;
    if (negative_nan(out[0], inf)) {  // the prefix of negative NaNs: binary search its end
      std::int64_t lo = 1, hi = count;
      while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (negative_nan(out[mid], inf))
          lo = mid + 1;
        else
          hi = mid;
      }
      k = lo;
    }
    if (blockIdx.x == 0) *lead = k;
  }
  __syncthreads();
  if (k == 0) return;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    tmp[i] = out[i + k < count ? i + k : i + k - count];
}

template <class U>
__global__ void copy_back_rotated(const U* tmp, U* out, std::int64_t count,
                                  const std::int64_t* lead) {
  if (*lead == 0) return;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = tmp[i];
}

// Calls f with a value of the C++ type CUB should sort for this job (values-only rows).
template <class U, class F>
SortStatus with_native_type(const SortJob& job, F&& f) {
  if (job.kind == sort_key_kind::unsigned_int) return f(U{});
  if constexpr (sizeof(U) >= 4) {
    if (job.kind == sort_key_kind::floating) {
      if constexpr (sizeof(U) == 4)
        return f(float{});
      else
        return f(double{});
    }
  }
  if constexpr (sizeof(U) == 1)
    return f(std::int8_t{});
  else if constexpr (sizeof(U) == 2)
    return f(std::int16_t{});
  else if constexpr (sizeof(U) == 4)
    return f(std::int32_t{});
  else
    return f(std::int64_t{});
}

// Scratch for the native path: [cub temp][rotation buffer when the temp is too small][lead].
template <class U>
SortStatus native_plan(const SortJob& job, std::size_t& cub_bytes, std::size_t& total) {
  return with_native_type<U>(job, [&](auto t) -> SortStatus {
    using T = decltype(t);
    std::size_t temp = 0;
    const cudaError_t e = cub::DeviceRadixSort::SortKeys(
        nullptr, temp, static_cast<const T*>(nullptr), static_cast<T*>(nullptr), job.n, 0,
        int(sizeof(T) * 8), job.stream);
    cub_bytes = align_up(temp);
    const bool floating = job.kind == sort_key_kind::floating;
    const std::size_t row = align_up(std::size_t(job.n) * sizeof(U));
    total =
        cub_bytes + (floating && cub_bytes < row ? row - cub_bytes : 0) + (floating ? kAlign : 0);
    return {e, "cub::DeviceRadixSort::SortKeys"};
  });
}

template <class U>
SortStatus native_run(const SortJob& job, void* scratch, std::size_t scratch_bytes) {
  std::size_t cub_bytes = 0, total = 0;
  if (SortStatus s = native_plan<U>(job, cub_bytes, total); s.code != cudaSuccess) return s;
  if (scratch_bytes < total) return {cudaErrorInvalidValue, "kiln sort scratch size"};
  return with_native_type<U>(job, [&](auto t) -> SortStatus {
    using T = decltype(t);
    std::size_t temp = cub_bytes;
    if (cudaError_t e = cub::DeviceRadixSort::SortKeys(scratch, temp, static_cast<const T*>(job.in),
                                                       static_cast<T*>(job.out_values), job.n, 0,
                                                       int(sizeof(T) * 8), job.stream);
        e != cudaSuccess)
      return {e, "cub::DeviceRadixSort::SortKeys"};
    if (job.kind != sort_key_kind::floating) return {};
    auto* out = static_cast<U*>(job.out_values);
    auto* tmp = static_cast<U*>(scratch);
    auto* lead = reinterpret_cast<std::int64_t*>(static_cast<char*>(scratch) + total - kAlign);
    const unsigned grid = grid_for(job.n) < 1056 ? grid_for(job.n) : 1056;
    rotate_negative_nans<U>
        <<<grid, 256, 0, job.stream>>>(out, tmp, job.n, U(job.float_inf_bits), lead);
    copy_back_rotated<U><<<grid, 256, 0, job.stream>>>(tmp, out, job.n, lead);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
      return {e, "kiln sort NaN fix-up launch"};
    return {};
  });
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
  auto* offsets = job.rows > 1
                      ? reinterpret_cast<std::int64_t*>(base + p.keys_a + p.keys_b + p.idx_b)
                      : nullptr;
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
  if (cudaError_t e = cub_call<U>(job, temp, temp_bytes, keys, idx, offsets, call);
      e != cudaSuccess)
    return {e, call};
  if (pairs) {
    if (idx.Current() != job.out_indices) {
      cudaError_t e = cudaMemcpyAsync(job.out_indices, idx.Current(), count * sizeof(std::int64_t),
                                      cudaMemcpyDeviceToDevice, job.stream);
      if (e != cudaSuccess) return {e, "cudaMemcpyAsync (argsort indices)"};
    }
  } else {
    map_from_keys<U>
        <<<grid, 256, 0, job.stream>>>(keys.Current(), static_cast<U*>(job.out_values), count, m);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
      return {e, "kiln sort key unmap launch"};
  }
  return {};
}

template <class F>
SortStatus by_width(int bytes, F&& f) {
  switch (bytes) {
    case 1:
      return f(std::uint8_t{});
    case 2:
      return f(std::uint16_t{});
    case 4:
      return f(std::uint32_t{});
    case 8:
      return f(std::uint64_t{});
    default:
      return {cudaErrorInvalidValue, "kiln sort key width"};
  }
}

}  // namespace

SortStatus cub_sort_scratch_bytes(const SortJob& job, std::size_t& bytes) {
  return by_width(job.key_bytes, [&](auto u) {
    using U = decltype(u);
    if (native_path(job)) {
      std::size_t cub_bytes = 0;
      return native_plan<U>(job, cub_bytes, bytes);
    }
    Plan<U> p;
    SortStatus s = plan(job, p);
    bytes = p.total();
    return s;
  });
}

SortStatus cub_sort(const SortJob& job, void* scratch, std::size_t scratch_bytes) {
  return by_width(job.key_bytes, [&](auto u) {
    using U = decltype(u);
    return native_path(job) ? native_run<U>(job, scratch, scratch_bytes)
                            : run<U>(job, scratch, scratch_bytes);
  });
}

}  // namespace kiln::detail
