// kiln::linalg::matmul / dot on cuBLAS (cublasGemmStridedBatchedEx). Row-major C = A @ B is
// computed as the column-major product C^T = B^T A^T, so C-contiguous operands need no
// transpose, and transposed (F-ordered) operands are passed with CUBLAS_OP_T instead of copied.
#include <fmt/format.h>

#include <climits>

#include "kiln/library/copying.hpp"
#include "kiln/library/linalg.hpp"
#include "linalg_handles.hpp"

namespace kiln::linalg {

Shape matmul_shape(const Shape& a, const Shape& b) {
  if (a.size() == 0 || b.size() == 0)
    throw ShapeError(fmt::format(
        "matmul: operand {} is 0-d (shapes {} and {}); matmul needs at least 1-D operands",
        a.size() == 0 ? 0 : 1, a.str(), b.str()));
  Shape am = a, bm = b;
  if (a.size() == 1) am.insert(0, 1);
  if (b.size() == 1) bm.push_back(1);
  const std::int64_t ka = am[am.size() - 1], kb = bm[bm.size() - 2];
  if (ka != kb)
    throw ShapeError(fmt::format(
        "matmul: shapes {} and {} do not align: {} (last axis of a) != {} ({} axis of b)", a.str(),
        b.str(), ka, kb, b.size() == 1 ? "only" : "second-to-last"));
  Shape ba(std::span<const std::int64_t>(am.begin(), am.size() - 2));
  Shape bb(std::span<const std::int64_t>(bm.begin(), bm.size() - 2));
  Shape out;
  try {
    out = broadcast_shapes({ba, bb});
  } catch (const ShapeError&) {
    throw ShapeError(
        fmt::format("matmul: the batch axes of shapes {} and {} do not broadcast ({} vs {})",
                    a.str(), b.str(), ba.str(), bb.str()));
  }
  if (a.size() > 1) out.push_back(am[am.size() - 2]);
  if (b.size() > 1) out.push_back(bm[bm.size() - 1]);
  return out;
}

namespace {

// One operand as cuBLAS sees it: pointer, transpose flag, leading dimension, batch stride.
struct Operand {
  ndarray keep;  // the array the pointer points into
  const void* ptr = nullptr;
  cublasOperation_t op = CUBLAS_OP_N;
  std::int64_t ld = 0, batch_stride = 0;
};

// x: batch + (r, c). Fills `o` when cuBLAS can read x's layout directly.
bool describe(const ndarray& x, Operand& o) {
  const int nd = x.ndim();
  const auto isz = std::int64_t(x.itemsize());
  for (auto s : x.strides())
    if (s < 0 || s % isz) return false;
  const std::int64_t r = x.shape()[nd - 2], c = x.shape()[nd - 1];
  const std::int64_t sr = x.strides()[nd - 2] / isz, sc = x.strides()[nd - 1] / isz;
  if ((sc == 1 || c == 1) && (r == 1 || sr >= std::max<std::int64_t>(1, c))) {
    o.op = CUBLAS_OP_N;  // row-major: read column-major it is the transpose we want
    o.ld = r == 1 ? std::max<std::int64_t>(1, c) : sr;
  } else if ((sr == 1 || r == 1) && (c == 1 || sc >= std::max<std::int64_t>(1, r))) {
    o.op = CUBLAS_OP_T;
    o.ld = c == 1 ? std::max<std::int64_t>(1, r) : sc;
  } else {
    return false;
  }
  // The batch axes must collapse to one stride (0 for a broadcast operand).
  std::int64_t stride = -1, expect = -1;
  for (int d = nd - 3; d >= 0; --d) {
    const std::int64_t len = x.shape()[d], s = x.strides()[d] / isz;
    if (len == 1) continue;
    if (stride < 0) {
      stride = s;
    } else if (s != expect) {
      return false;
    }
    expect = s * len;
  }
  o.batch_stride = stride < 0 ? 0 : stride;
  o.keep = x;
  o.ptr = x.data();
  return o.ld <= INT_MAX;
}

Operand operand(const ndarray& x) {
  Operand o;
  if (describe(x, o)) return o;
  const bool ok = describe(x.copy(), o);  // C-contiguous: always describable
  (void)ok;
  return o;
}

}  // namespace

ndarray matmul(const ndarray& a_in, const ndarray& b_in, const matmul_options& options) {
  if (!a_in.defined() || !b_in.defined())
    throw ValueError("matmul: an operand is empty (no buffer)");
  const Shape out_shape = matmul_shape(a_in.shape(), b_in.shape());
  const dtype t = result_type(a_in.dtype(), b_in.dtype());
  if (t != float32 && t != float64)
    throw TypeError(fmt::format(
        "matmul: operands {} and {} promote to {}; kiln's matmul supports float32 and float64 "
        "(cast with astype first)",
        a_in.dtype().name(), b_in.dtype().name(), t.name()));
  ndarray a = a_in.ndim() == 1 ? a_in.expand_dims(0) : a_in;
  ndarray b = b_in.ndim() == 1 ? b_in.expand_dims(1) : b_in;
  const std::int64_t m = a.shape()[a.ndim() - 2], k = a.shape()[a.ndim() - 1],
                     n = b.shape()[b.ndim() - 1];
  Shape batch(std::span<const std::int64_t>(
      out_shape.begin(), out_shape.size() - (a_in.ndim() > 1) - (b_in.ndim() > 1)));
  const std::int64_t batch_count = shape_size(batch);
  if (batch_count > INT_MAX || m > INT_MAX || n > INT_MAX || k > INT_MAX)
    throw ValueError(fmt::format("matmul: sizes past 2^31-1 are not supported (shapes {} and {})",
                                 a_in.shape().str(), b_in.shape().str()));
  Shape full_c = batch;
  full_c.push_back(m);
  full_c.push_back(n);
  ndarray c(full_c, t);
  if (c.size() == 0) return c.reshape(out_shape);
  if (k == 0) {
    c.fill(0);
    return c.reshape(out_shape);
  }
  if (a.dtype() != t) a = a.astype(t);
  if (b.dtype() != t) b = b.astype(t);
  Shape sa = batch, sb = batch;
  sa.push_back(m), sa.push_back(k), sb.push_back(k), sb.push_back(n);
  const Operand oa = operand(a.broadcast_to(sa)), ob = operand(b.broadcast_to(sb));

  cublasHandle_t h = detail::blas_handle();
  const cudaDataType dt = t == float32 ? CUDA_R_32F : CUDA_R_64F;
  const cublasComputeType_t ct = t == float64         ? CUBLAS_COMPUTE_64F
                                 : options.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                      : CUBLAS_COMPUTE_32F;
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = t == float32 ? static_cast<const void*>(&one_f) : &one_d;
  const void* beta = t == float32 ? static_cast<const void*>(&zero_f) : &zero_d;
  // Column-major: C^T (n x m) = op(B) (n x k) * op(A) (k x m).
  KILN_CUBLAS(cublasGemmStridedBatchedEx(h, ob.op, oa.op, int(n), int(m), int(k), alpha, ob.ptr, dt,
                                         int(ob.ld), ob.batch_stride, oa.ptr, dt, int(oa.ld),
                                         oa.batch_stride, beta, c.data(), dt, int(n), m * n,
                                         int(batch_count), ct, CUBLAS_GEMM_DEFAULT));
  return c.reshape(out_shape);
}

ndarray dot(const ndarray& a, const ndarray& b, const matmul_options& options) {
  if (a.ndim() == 0 || b.ndim() == 0 || a.ndim() > 2 || b.ndim() > 2)
    throw ShapeError(fmt::format(
        "dot: kiln's dot takes 1-D and 2-D operands, got shapes {} and {} (use matmul for stacks "
        "of matrices; a 0-d operand is an elementwise product)",
        a.shape().str(), b.shape().str()));
  return matmul(a, b, options);
}

}  // namespace kiln::linalg
