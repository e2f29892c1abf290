// float16 (__half) for kiln_cast and kiln_traits; follows kiln_core.cuh and <cuda_fp16.h>.

// kiln-section kiln_fp16
template <>
struct kiln_traits<__half> {
  static constexpr bool is_complex = false;
  static constexpr bool is_low_float = true;
  __device__ static float to_float(__half kiln_x) { return __half2float(kiln_x); }
  __device__ static __half from_float(float kiln_x) { return __float2half_rn(kiln_x); }
  __device__ static __half from_double(double kiln_x) { return __double2half(kiln_x); }
};
