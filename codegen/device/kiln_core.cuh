// kiln's device support, at the top of every generated kernel: type traits, kiln_cast (NumPy's
// astype for one value), 16-byte vector loads and stores, the loop index, and the argument
// types of the kernel ABI (codegen/kernel_abi.hpp describes them once for the host). Every
// name starts with kiln_ (template parameters too), so no user name or -D macro can clash.
// Specialisations for the 16-bit floats and complex follow in their own files, so a
// float-only kernel parses none of their headers.

// kiln-section kiln_core
// The first statement of every generated kernel. In a graph kiln captured, a kiln kernel that
// follows another kernel is launched once that kernel's blocks have all started (a
// programmatic edge, ops/engine/src/graph/programmatic_edges.cpp) and waits here until it has
// finished and its writes are visible. Launched any other way there is nothing to wait for.
__device__ __forceinline__ void kiln_grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <bool kiln_b>
struct kiln_enable {};
template <>
struct kiln_enable<true> {
  typedef void type;
};

template <class kiln_A, class kiln_B>
struct kiln_same {
  static constexpr bool value = false;
};
template <class kiln_A>
struct kiln_same<kiln_A, kiln_A> {
  static constexpr bool value = true;
};

// is_complex / is_low_float (a 16-bit float, converted through float).
template <class kiln_X>
struct kiln_traits {
  static constexpr bool is_complex = false;
  static constexpr bool is_low_float = false;
};

template <class kiln_X>
__device__ __forceinline__ bool kiln_nonzero(const kiln_X& kiln_x) {
  if constexpr (kiln_traits<kiln_X>::is_complex) {
    return kiln_x.real() != 0 || kiln_x.imag() != 0;
  } else if constexpr (kiln_traits<kiln_X>::is_low_float) {
    return kiln_traits<kiln_X>::to_float(kiln_x) != 0.0f;
  } else {
    return kiln_x != 0;
  }
}

// NumPy's astype(To) for one value.
template <class kiln_To, class kiln_From>
__device__ __forceinline__ kiln_To kiln_cast(const kiln_From& kiln_x) {
  if constexpr (kiln_same<kiln_To, kiln_From>::value) {
    return kiln_x;
  } else if constexpr (kiln_same<kiln_To, bool>::value) {
    return kiln_nonzero(kiln_x);
  } else if constexpr (kiln_traits<kiln_From>::is_complex) {
    if constexpr (kiln_traits<kiln_To>::is_complex) {
      typedef typename kiln_To::value_type kiln_V;
      return kiln_To(kiln_cast<kiln_V>(kiln_x.real()), kiln_cast<kiln_V>(kiln_x.imag()));
    } else {
      return kiln_cast<kiln_To>(kiln_x.real());
    }
  } else if constexpr (kiln_traits<kiln_To>::is_complex) {
    typedef typename kiln_To::value_type kiln_V;
    return kiln_To(kiln_cast<kiln_V>(kiln_x), kiln_V(0));
  } else if constexpr (kiln_traits<kiln_From>::is_low_float) {
    return kiln_cast<kiln_To>(kiln_traits<kiln_From>::to_float(kiln_x));  // exact
  } else if constexpr (kiln_traits<kiln_To>::is_low_float) {
    if constexpr (kiln_same<kiln_From, float>::value) {
      return kiln_traits<kiln_To>::from_float(kiln_x);
    } else {
      return kiln_traits<kiln_To>::from_double(static_cast<double>(kiln_x));  // one rounding
    }
  } else {
    return static_cast<kiln_To>(kiln_x);
  }
}

// Unsigned words of 1..16 bytes: one load or store instruction moves a whole vector.
template <int kiln_bytes>
struct kiln_word;
template <>
struct kiln_word<1> {
  typedef unsigned char type;
};
template <>
struct kiln_word<2> {
  typedef unsigned short type;
};
template <>
struct kiln_word<4> {
  typedef unsigned int type;
};
template <>
struct kiln_word<8> {
  typedef uint2 type;
};
template <>
struct kiln_word<16> {
  typedef uint4 type;
};

template <int kiln_w, class kiln_V>
__device__ __forceinline__ void kiln_load(kiln_V (&kiln_dst)[kiln_w], const kiln_V* kiln_src) {
  typedef typename kiln_word<int(sizeof(kiln_V)) * kiln_w>::type kiln_W;
  const kiln_W kiln_tmp = *reinterpret_cast<const kiln_W*>(kiln_src);
  memcpy(&kiln_dst[0], &kiln_tmp, sizeof(kiln_W));
}

template <int kiln_w, class kiln_V>
__device__ __forceinline__ void kiln_store(kiln_V* kiln_dst, const kiln_V (&kiln_src)[kiln_w]) {
  typedef typename kiln_word<int(sizeof(kiln_V)) * kiln_w>::type kiln_W;
  kiln_W kiln_tmp;
  memcpy(&kiln_tmp, &kiln_src[0], sizeof(kiln_W));
  *reinterpret_cast<kiln_W*>(kiln_dst) = kiln_tmp;
}

// The loop index as CuPy's _ind: _ind.size() is the loop size, _ind.get() the index.
template <class kiln_I>
struct kiln_loop_index {
  kiln_I kiln_size_, kiln_i_;
  __device__ kiln_I size() const { return kiln_size_; }
  __device__ kiln_I get() const { return kiln_i_; }
};

// One non-raw operand of the strided path: pointer to element 0 and byte strides.
template <int kiln_nd, class kiln_I>
struct kiln_strided {
  char* kiln_p;
  kiln_I kiln_s[kiln_nd];
};

template <int kiln_nd, class kiln_I>
struct kiln_dims {
  kiln_I kiln_v[kiln_nd];
};

// The loop of a strided or tiled elementwise kernel, in the planner's axis order: extents, the
// step of the user's flat index i along each axis (i keeps C order over the user's loop when
// the planner reorders axes), and per axis a divisor with its multiplier and shift, so that
// unravelling an index costs a multiply-high and a shift, not a division.
template <int kiln_nd, class kiln_I>
struct kiln_loop_dims {
  kiln_I kiln_v[kiln_nd];  // extents
  kiln_I kiln_e[kiln_nd];  // steps of i
  kiln_I kiln_d[kiln_nd];  // divisors
  kiln_I kiln_m[kiln_nd];  // their multipliers (unsigned bits)
  kiln_I kiln_s[kiln_nd];  // and shifts
  kiln_I kiln_t;           // tiled: log2 of the tile's cols; packed: of the box's extent along A
};

// n / d as (umulhi(n, m) + n) >> s (the round-up method of Granlund and Montgomery, m and s
// from the host): exact for every n below 2^31 (32-bit) or 2^63 (64-bit), which kiln's index
// widths guarantee.
__device__ __forceinline__ unsigned int kiln_fastdiv(unsigned int kiln_n, int kiln_m, int kiln_s) {
  return (__umulhi(kiln_n, static_cast<unsigned int>(kiln_m)) + kiln_n) >> kiln_s;
}
__device__ __forceinline__ unsigned long long kiln_fastdiv(unsigned long long kiln_n,
                                                           long long kiln_m, long long kiln_s) {
  return (__umul64hi(kiln_n, static_cast<unsigned long long>(kiln_m)) + kiln_n) >> kiln_s;
}

// One axis of a packed loop's box as a staged operand walks it: the box's extent along it
// with that extent's divisor, the operand's byte stride, the shared box's element pitch, and
// whether it is the chunked axis (A: its last box may hold fewer than the box's extent).
template <class kiln_I>
struct kiln_box_axis {
  kiln_I kiln_n, kiln_m, kiln_sh, kiln_st, kiln_pitch;
  bool kiln_chunked;
};
template <class kiln_I>
__device__ __forceinline__ unsigned long long kiln_box_key(const kiln_box_axis<kiln_I>& kiln_x) {
  const unsigned long long kiln_a =
      static_cast<unsigned long long>(kiln_x.kiln_st < 0 ? -kiln_x.kiln_st : kiln_x.kiln_st);
  return kiln_a == 0 ? ~0ull : kiln_a;  // broadcast axes last
}
template <class kiln_I>
__device__ __forceinline__ void kiln_box_swap(kiln_box_axis<kiln_I>& kiln_x,
                                              kiln_box_axis<kiln_I>& kiln_y) {
  if (kiln_box_key(kiln_y) < kiln_box_key(kiln_x)) {
    const kiln_box_axis<kiln_I> kiln_t = kiln_x;
    kiln_x = kiln_y;
    kiln_y = kiln_t;
  }
}
// Orders a staged operand's three box axes by its |stride|, fastest first, so that consecutive
// threads walking the box in that order walk the operand's memory in order.
template <class kiln_I>
__device__ __forceinline__ void kiln_box_order(kiln_box_axis<kiln_I>& kiln_a,
                                               kiln_box_axis<kiln_I>& kiln_b,
                                               kiln_box_axis<kiln_I>& kiln_c) {
  kiln_box_swap(kiln_a, kiln_b);
  kiln_box_swap(kiln_b, kiln_c);
  kiln_box_swap(kiln_a, kiln_b);
}

// A multi-index for raw arrays: x[{i0, i1}] or x[idx] with idx an integer array.
template <int kiln_nd>
struct kiln_multi_index {
  long long kiln_v[kiln_nd];
  template <class... kiln_A, class = typename kiln_enable<sizeof...(kiln_A) == kiln_nd>::type>
  __device__ kiln_multi_index(kiln_A... kiln_a) : kiln_v{static_cast<long long>(kiln_a)...} {}
  template <class kiln_J>
  __device__ kiln_multi_index(const kiln_J (&kiln_a)[kiln_nd]) {
    for (int kiln_d = 0; kiln_d < kiln_nd; ++kiln_d)
      kiln_v[kiln_d] = static_cast<long long>(kiln_a[kiln_d]);
  }
};

// A raw parameter: CuPy's CArray. Storage dims are at least 1 (C++ has no empty arrays);
// kiln_nd is the array's real ndim. Strides are in bytes.
template <class kiln_V, int kiln_nd, bool kiln_contig, class kiln_I>
struct kiln_carray {
  static constexpr int kiln_n = kiln_nd > 0 ? kiln_nd : 1;
  kiln_V* kiln_data;
  kiln_I kiln_size;
  kiln_I kiln_shape[kiln_n];
  kiln_I kiln_strides[kiln_n];

  __device__ kiln_I size() const { return kiln_size; }
  __device__ static constexpr int ndim() { return kiln_nd; }
  __device__ const kiln_I* shape() const { return kiln_shape; }
  __device__ const kiln_I* strides() const { return kiln_strides; }
  __device__ kiln_V* data() const { return kiln_data; }

  // Element at flat C-order index kiln_j (as CuPy's CArray::operator[]).
  __device__ kiln_V& operator[](long long kiln_j) const {
    if constexpr (kiln_contig || kiln_nd <= 1) {
      if constexpr (kiln_nd == 1 && !kiln_contig) {
        return *reinterpret_cast<kiln_V*>(reinterpret_cast<char*>(kiln_data) +
                                          static_cast<kiln_I>(kiln_j) * kiln_strides[0]);
      } else {
        return kiln_data[static_cast<kiln_I>(kiln_j)];
      }
    } else {
      kiln_I kiln_rem = static_cast<kiln_I>(kiln_j), kiln_off = 0;
      for (int kiln_d = kiln_nd - 1; kiln_d >= 0; --kiln_d) {
        const kiln_I kiln_c = kiln_rem % kiln_shape[kiln_d];
        kiln_rem /= kiln_shape[kiln_d];
        kiln_off += kiln_c * kiln_strides[kiln_d];
      }
      return *reinterpret_cast<kiln_V*>(reinterpret_cast<char*>(kiln_data) + kiln_off);
    }
  }
  __device__ kiln_V& operator[](const kiln_multi_index<kiln_n>& kiln_ix) const {
    kiln_I kiln_off = 0;
    for (int kiln_d = 0; kiln_d < kiln_nd; ++kiln_d)
      kiln_off += static_cast<kiln_I>(kiln_ix.kiln_v[kiln_d]) * kiln_strides[kiln_d];
    return *reinterpret_cast<kiln_V*>(reinterpret_cast<char*>(kiln_data) + kiln_off);
  }
};
