// Reduction kernels' support: warp shuffles of any trivially copyable type (moved as 32-bit
// words) and L1-bypassing loads of other blocks' partials. Follows kiln_core.cuh.

// kiln-section kiln_reduction
template <class kiln_V>
__device__ __forceinline__ kiln_V kiln_shfl_down(const kiln_V& kiln_x, int kiln_d) {
  constexpr int kiln_w = (int(sizeof(kiln_V)) + 3) / 4;
  unsigned kiln_u[kiln_w];
  memcpy(kiln_u, &kiln_x, sizeof(kiln_V));
#pragma unroll
  for (int kiln_k = 0; kiln_k < kiln_w; ++kiln_k)
    kiln_u[kiln_k] = __shfl_down_sync(0xffffffffu, kiln_u[kiln_k], kiln_d);
  kiln_V kiln_r;
  memcpy(&kiln_r, kiln_u, sizeof(kiln_V));
  return kiln_r;
}
template <class kiln_V>
__device__ __forceinline__ kiln_V kiln_load_cg(const kiln_V* kiln_p) {
  constexpr int kiln_w = int(sizeof(kiln_V)) / 4;
  unsigned kiln_u[kiln_w];
#pragma unroll
  for (int kiln_k = 0; kiln_k < kiln_w; ++kiln_k)
    kiln_u[kiln_k] = __ldcg(reinterpret_cast<const unsigned*>(kiln_p) + kiln_k);
  kiln_V kiln_r;
  memcpy(&kiln_r, kiln_u, sizeof(kiln_V));
  return kiln_r;
}
