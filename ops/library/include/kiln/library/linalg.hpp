#pragma once
// Linear algebra on the GPU with NumPy's semantics: matrix products through cuBLAS,
// decompositions and solvers through cuSOLVER. Results are new C-contiguous arrays.
//
//   auto a = kiln::random::default_rng(0).random({4, 3});
//   auto b = kiln::random::default_rng(1).random({3, 5});
//   kiln::ndarray c = kiln::linalg::matmul(a, b);                    // (4, 5), exact FP32/FP64
//   auto fast = kiln::linalg::matmul(x32, y32, {.allow_tf32 = true}); // float32 on tensor cores
//   auto [u, s, vh] = kiln::linalg::svd(a, /*full_matrices=*/false);  // (4,3) (3,) (3,3)
//   auto [q, r] = kiln::linalg::qr(a);                                 // reduced: (4,3) (3,3)
//   auto [w, v] = kiln::linalg::eigh(sym);                             // ascending eigenvalues
//   auto x = kiln::linalg::solve(sq, rhs); auto ai = kiln::linalg::inv(sq);
//   double d = kiln::linalg::det(sq);
//
// dtypes: float32 and float64. matmul/dot need both operands of one of those (TypeError
// otherwise; cast with astype first). The decompositions and solvers take float32/float64 as
// is, and bool/integer arrays converted to float64 (NumPy's rule); float16, bfloat16 and complex
// raise TypeError. matmul follows NumPy: 1-D operands are promoted to a matrix and the added
// axis removed again, 3-D and up are stacks of matrices whose batch axes broadcast. The
// decompositions and solvers take one matrix (2-D); a stack raises ShapeError.
//
// cuBLAS/cuSOLVER handles are made once per device and host thread and set to the current
// stream on each call; a failing library call raises CudaError naming the call and its status.
// Shape and dtype errors are raised before any device work. Singular matrices in solve/inv and
// SVD or eigh failing to converge raise LinAlgError (like numpy.linalg.LinAlgError).
#include <cstdint>

#include "kiln/runtime/error.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln::linalg {

/// numpy.linalg.LinAlgError: a singular matrix, or an iteration that did not converge.
class LinAlgError : public ValueError {
 public:
  using ValueError::ValueError;
};

struct matmul_options {
  /// float32 only: let cuBLAS use TF32 tensor cores (10-bit mantissa products). Off by default:
  /// float32 products are computed in full FP32 precision.
  bool allow_tf32 = false;
};

/// NumPy's matmul (the @ operator).
ndarray matmul(const ndarray& a, const ndarray& b, const matmul_options& options = {});
/// NumPy's dot for 0-D to 2-D operands (same as matmul there, scalars excluded); N-D operands
/// raise ShapeError (use matmul for stacks of matrices).
ndarray dot(const ndarray& a, const ndarray& b, const matmul_options& options = {});

/// Which cuSOLVER routine computes the SVD (bench/README.md has the measurements).
enum class svd_method {
  automatic,  // kiln's choice (see bench/README.md)
  gesvd,      // QR iteration (LAPACK's gesvd): the reference
  gesvdp,     // polar decomposition (cusolverDnXgesvdp)
};

struct svd_result {
  ndarray u, s, vh;  // u and vh are empty handles when compute_uv is false
};
/// a = u @ diag(s) @ vh with s descending. full_matrices: u (m, m), vh (n, n); else (m, k),
/// (k, n) with k = min(m, n). compute_uv=false computes s only.
svd_result svd(const ndarray& a, bool full_matrices = true, bool compute_uv = true,
               svd_method method = svd_method::automatic);

struct qr_result {
  ndarray q, r;
};
/// Reduced QR (NumPy's mode="reduced"): q (m, k) with orthonormal columns, r (k, n) upper
/// triangular, k = min(m, n).
qr_result qr(const ndarray& a);

struct eigh_result {
  ndarray eigenvalues, eigenvectors;  // w ascending (n,); v (n, n), column j pairs with w[j]
};
/// Eigen-decomposition of a symmetric matrix, reading its lower ('L') or upper ('U') triangle.
eigh_result eigh(const ndarray& a, char uplo = 'L');

/// x with a @ x = b; b is (n,) or (n, k). LinAlgError when a is singular.
ndarray solve(const ndarray& a, const ndarray& b);
/// The inverse of a square matrix. LinAlgError when it is singular.
ndarray inv(const ndarray& a);
/// The determinant (0 for a singular matrix), from an LU factorization.
double det(const ndarray& a);

// ---- shape rules, checked before any device work (CPU-testable) ----
/// The result shape of matmul(a, b); ShapeError naming both shapes when they do not fit.
Shape matmul_shape(const Shape& a, const Shape& b);
/// The shapes svd returns as {u, s, vh}.
struct svd_shapes {
  Shape u, s, vh;
};
svd_shapes svd_shape(const Shape& a, bool full_matrices, bool compute_uv);
/// The shapes qr returns as {q, r}.
struct qr_shapes {
  Shape q, r;
};
qr_shapes qr_shape(const Shape& a);

}  // namespace kiln::linalg
