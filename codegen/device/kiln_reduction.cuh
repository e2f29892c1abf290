// Reduction kernels' support: warp shuffles of any trivially copyable type (moved as 32-bit
// words; `kiln_width` lanes per segment, as __shfl_*_sync's width) and L1-bypassing loads of
// other blocks' partials; then the row kernels' loads. Follows kiln_core.cuh.

// kiln-section kiln_reduction
template <class kiln_V>
__device__ __forceinline__ kiln_V kiln_shfl_down(const kiln_V& kiln_x, int kiln_d,
                                                 int kiln_width = 32) {
  constexpr int kiln_w = (int(sizeof(kiln_V)) + 3) / 4;
  unsigned kiln_u[kiln_w];
  memcpy(kiln_u, &kiln_x, sizeof(kiln_V));
#pragma unroll
  for (int kiln_k = 0; kiln_k < kiln_w; ++kiln_k)
    kiln_u[kiln_k] = __shfl_down_sync(0xffffffffu, kiln_u[kiln_k], kiln_d, kiln_width);
  kiln_V kiln_r;
  memcpy(&kiln_r, kiln_u, sizeof(kiln_V));
  return kiln_r;
}
// Lane 0's value of each `kiln_width`-lane segment, in every lane of it.
template <class kiln_V>
__device__ __forceinline__ kiln_V kiln_shfl_first(const kiln_V& kiln_x, int kiln_width = 32) {
  constexpr int kiln_w = (int(sizeof(kiln_V)) + 3) / 4;
  unsigned kiln_u[kiln_w];
  memcpy(kiln_u, &kiln_x, sizeof(kiln_V));
#pragma unroll
  for (int kiln_k = 0; kiln_k < kiln_w; ++kiln_k)
    kiln_u[kiln_k] = __shfl_sync(0xffffffffu, kiln_u[kiln_k], 0, kiln_width);
  kiln_V kiln_r;
  memcpy(&kiln_r, kiln_u, sizeof(kiln_V));
  return kiln_r;
}
// One mapped element folded into a state that already holds one: the reduce itself, unless the
// state's type declares a cheaper form for that case (an overload on the type; the moments
// skip choosing their shift).
template <class kiln_S, class kiln_F>
__device__ __forceinline__ kiln_S kiln_fold(const kiln_S& kiln_a, const kiln_S& kiln_b,
                                            kiln_F kiln_reduce) {
  return kiln_reduce(kiln_a, kiln_b);
}
// Blocks a folded reduction merges a group at a time: the smallest s with s * s >= blocks
// (codegen::fold_group on the host sizes the workspace by the same rule).
__device__ __forceinline__ unsigned kiln_fold_group(unsigned kiln_blocks) {
  unsigned kiln_s = unsigned(sqrtf(float(kiln_blocks)));
  while (kiln_s * kiln_s < kiln_blocks) ++kiln_s;
  while (kiln_s > 1 && (kiln_s - 1) * (kiln_s - 1) >= kiln_blocks) --kiln_s;
  return kiln_s;
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

// kiln-section kiln_rows
// A row kernel's vector of kiln_w elements starting at element kiln_e of a row: operands
// move along the row with unit steps, or not at all (a broadcast operand: one element, repeated).
template <int kiln_w, class kiln_V, class kiln_I>
__device__ __forceinline__ void kiln_row_load(kiln_V (&kiln_dst)[kiln_w], const char* kiln_row,
                                              kiln_I kiln_e, kiln_I kiln_step) {
  if (kiln_step == 0) {
    const kiln_V kiln_v = *reinterpret_cast<const kiln_V*>(kiln_row);
#pragma unroll
    for (int kiln_k = 0; kiln_k < kiln_w; ++kiln_k) kiln_dst[kiln_k] = kiln_v;
  } else {
    kiln_load<kiln_w>(kiln_dst, reinterpret_cast<const kiln_V*>(kiln_row) + kiln_e);
  }
}
// Column rows (kRowColumns) at position kiln_e, any step in bytes: the kiln_w elements of
// kiln_w adjacent rows (a lane group takes kiln_w rows next to each other in memory), one
// access of kiln_w elements.
template <int kiln_w, class kiln_V, class kiln_I>
__device__ __forceinline__ void kiln_column_load(kiln_V (&kiln_dst)[kiln_w], const char* kiln_row,
                                                 kiln_I kiln_e, kiln_I kiln_step) {
  kiln_load<kiln_w>(kiln_dst, reinterpret_cast<const kiln_V*>(kiln_row + kiln_e * kiln_step));
}
template <int kiln_w, class kiln_V, class kiln_I>
__device__ __forceinline__ void kiln_column_store(char* kiln_row, kiln_I kiln_e, kiln_I kiln_step,
                                                  const kiln_V (&kiln_src)[kiln_w]) {
  kiln_store<kiln_w>(reinterpret_cast<kiln_V*>(kiln_row + kiln_e * kiln_step), kiln_src);
}
// A held row's vector of kiln_b bytes (4, 8 or 16) copied from global to shared memory with
// no registers in between (cp.async, sm_80 on), so that all of a thread's copies are in flight
// together; kiln_row_wait makes them visible to the thread that issued them.
template <int kiln_b>
__device__ __forceinline__ void kiln_row_copy(void* kiln_dst, const void* kiln_src) {
#if __CUDA_ARCH__ >= 800
  const unsigned kiln_s = unsigned(__cvta_generic_to_shared(kiln_dst));
  if (kiln_b == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(kiln_s), "l"(kiln_src)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(kiln_s), "l"(kiln_src),
                 "n"(kiln_b)
                 : "memory");
#else
  typedef typename kiln_word<kiln_b>::type kiln_W;
  *reinterpret_cast<kiln_W*>(kiln_dst) = *reinterpret_cast<const kiln_W*>(kiln_src);
#endif
}
__device__ __forceinline__ void kiln_row_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}
// A streamed row's last reads and its outputs' writes: marked evict-first (ld/st .cs), so
// they leave L2 to the rows other blocks will read again.
template <int kiln_w, class kiln_V, class kiln_I>
__device__ __forceinline__ void kiln_row_load_last(kiln_V (&kiln_dst)[kiln_w], const char* kiln_row,
                                                   kiln_I kiln_e, kiln_I kiln_step) {
  typedef typename kiln_word<int(sizeof(kiln_V)) * kiln_w>::type kiln_W;
  if (kiln_step == 0) {
    kiln_row_load<kiln_w>(kiln_dst, kiln_row, kiln_e, kiln_step);
  } else {
    const kiln_W kiln_tmp =
        __ldcs(reinterpret_cast<const kiln_W*>(reinterpret_cast<const kiln_V*>(kiln_row) + kiln_e));
    memcpy(&kiln_dst[0], &kiln_tmp, sizeof(kiln_W));
  }
}
template <int kiln_w, class kiln_V>
__device__ __forceinline__ void kiln_row_store_last(kiln_V* kiln_dst,
                                                    const kiln_V (&kiln_src)[kiln_w]) {
  typedef typename kiln_word<int(sizeof(kiln_V)) * kiln_w>::type kiln_W;
  kiln_W kiln_tmp;
  memcpy(&kiln_tmp, &kiln_src[0], sizeof(kiln_W));
  __stcs(reinterpret_cast<kiln_W*>(kiln_dst), kiln_tmp);
}
// Shifted rows (RowSpec::shifted): a row whose start or length is off its vectors is read in
// the aligned windows of kiln_w elements that hold it. kiln_h, the row's shift: how many
// elements of its first window come before it (the first output's; an operand that sits
// otherwise against 16 bytes is read element by element). The window at kiln_e0 (a multiple
// of kiln_w) holds the row's elements kiln_e0 - kiln_h .. kiln_e0 - kiln_h + kiln_w - 1; those
// outside 0 .. kiln_n - 1 are not the row's (their bytes share a 16-byte granule with the
// row's: inside the buffer, which the planner checks).
template <int kiln_w, class kiln_V>
__device__ __forceinline__ unsigned kiln_shift_of(const char* kiln_row) {
  return unsigned(reinterpret_cast<unsigned long long>(kiln_row) / sizeof(kiln_V)) % kiln_w;
}
template <bool kiln_last, int kiln_w, class kiln_V, class kiln_I>
__device__ __forceinline__ void kiln_window_load(kiln_V (&kiln_dst)[kiln_w], const char* kiln_row,
                                                 kiln_I kiln_e0, kiln_I kiln_step, unsigned kiln_h,
                                                 kiln_I kiln_n) {
  const kiln_V* const kiln_p = reinterpret_cast<const kiln_V*>(kiln_row);
  if (kiln_step == 0 || kiln_shift_of<kiln_w, kiln_V>(kiln_row) == kiln_h) {
    // One element repeated, or one aligned vector (the row's first element kiln_h in).
    if (kiln_last)
      kiln_row_load_last<kiln_w>(kiln_dst, kiln_row, kiln_e0 - kiln_I(kiln_h), kiln_step);
    else
      kiln_row_load<kiln_w>(kiln_dst, kiln_row, kiln_e0 - kiln_I(kiln_h), kiln_step);
  } else {
#pragma unroll
    for (int kiln_k = 0; kiln_k < kiln_w; ++kiln_k) {
      const kiln_I kiln_e = kiln_e0 + kiln_I(kiln_k) - kiln_I(kiln_h);
      kiln_dst[kiln_k] = kiln_e >= 0 && kiln_e < kiln_n ? kiln_p[kiln_e] : kiln_V();
    }
  }
}
// The outputs' window: one aligned vector where it holds only the row's elements and the
// output sits as the row's shift says, else the row's elements one by one.
template <bool kiln_last, int kiln_w, class kiln_V, class kiln_I>
__device__ __forceinline__ void kiln_window_store(char* kiln_row, kiln_I kiln_e0, unsigned kiln_h,
                                                  kiln_I kiln_n, const kiln_V (&kiln_src)[kiln_w]) {
  kiln_V* const kiln_p = reinterpret_cast<kiln_V*>(kiln_row);
  const kiln_I kiln_e = kiln_e0 - kiln_I(kiln_h);
  if (kiln_e >= 0 && kiln_e + kiln_w <= kiln_n &&
      kiln_shift_of<kiln_w, kiln_V>(kiln_row) == kiln_h) {
    if (kiln_last)
      kiln_row_store_last<kiln_w>(kiln_p + kiln_e, kiln_src);
    else
      kiln_store<kiln_w>(kiln_p + kiln_e, kiln_src);
  } else {
#pragma unroll
    for (int kiln_k = 0; kiln_k < kiln_w; ++kiln_k)
      if (kiln_e + kiln_k >= 0 && kiln_e + kiln_k < kiln_n)
        kiln_p[kiln_e + kiln_k] = kiln_src[kiln_k];
  }
}
// kiln-section kiln_cluster
// Rows split over a cluster of blocks (RowSpec::cluster, sm_90 on): the block's rank in its
// cluster, a barrier of the whole cluster (release and acquire: what a block wrote to its
// shared memory before it, every block reads after it), and a block's shared variable as
// seen from another block of the cluster (a generic address into that block's shared memory).
// The kernel's cluster size (a plain launch takes it); before sm_90 none (never planned there).
#if __CUDA_ARCH__ >= 900
#define KILN_CLUSTER_DIMS(n) __cluster_dims__(n, 1, 1)
#else
#define KILN_CLUSTER_DIMS(n)
#endif
__device__ __forceinline__ unsigned kiln_cluster_rank() {
  unsigned kiln_r = 0;
#if __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(kiln_r));
#endif
  return kiln_r;
}
__device__ __forceinline__ void kiln_cluster_sync() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n" ::: "memory");
#else
  __syncthreads();
#endif
}
template <class kiln_T>
__device__ __forceinline__ const kiln_T* kiln_cluster_peer(const kiln_T* kiln_p, unsigned kiln_r) {
#if __CUDA_ARCH__ >= 900
  unsigned long long kiln_a;
  asm volatile("mapa.u64 %0, %1, %2;\n" : "=l"(kiln_a) : "l"(kiln_p), "r"(kiln_r));
  return reinterpret_cast<const kiln_T*>(kiln_a);
#else
  return kiln_p;
#endif
}
