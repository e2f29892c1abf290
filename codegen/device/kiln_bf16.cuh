// bfloat16 (__nv_bfloat16) for kiln_cast and kiln_traits; follows kiln_core.cuh and <cuda_bf16.h>.

// kiln-section kiln_bf16
template <>
struct kiln_traits<__nv_bfloat16> {
  static constexpr bool is_complex = false;
  static constexpr bool is_low_float = true;
  __device__ static float to_float(__nv_bfloat16 kiln_x) { return __bfloat162float(kiln_x); }
  __device__ static __nv_bfloat16 from_float(float kiln_x) { return __float2bfloat16_rn(kiln_x); }
  __device__ static __nv_bfloat16 from_double(double kiln_x) { return __double2bfloat16(kiln_x); }
};
