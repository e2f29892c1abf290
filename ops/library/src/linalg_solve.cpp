// kiln::linalg::solve / inv / det: LU factorization (cusolverDn?getrf) and ?getrs. A is copied
// into column-major order first (the row-major buffer of A^T), so the factorization, its
// pivots and its zero pivots are LAPACK's on A, as in NumPy: a matrix NumPy calls singular is
// singular here too (factoring A^T instead rounds differently).
#include <fmt/format.h>

#include "kiln/library/copying.hpp"
#include "kiln/library/linalg.hpp"
#include "linalg_handles.hpp"

namespace kiln::linalg {

using detail::with_type;

namespace {

template <class T>
struct Lu;
#define KILN_LU_TRAITS(T, P)                                              \
  template <>                                                             \
  struct Lu<T> {                                                          \
    static constexpr auto getrf_buffer = cusolverDn##P##getrf_bufferSize; \
    static constexpr auto getrf = cusolverDn##P##getrf;                   \
    static constexpr auto getrs = cusolverDn##P##getrs;                   \
  };
KILN_LU_TRAITS(float, S)
KILN_LU_TRAITS(double, D)
#undef KILN_LU_TRAITS

// Factorizes the buffer of `lu` (n x n, C-contiguous, overwritten) in place; info[0] gets getrf's.
void factorize(ndarray& lu, ndarray& pivots, ndarray& info) {
  const int n = int(lu.shape()[0]);
  cusolverDnHandle_t h = detail::solver_handle();
  with_type(lu.dtype(), [&]<class T>(T) {
    auto* A = static_cast<T*>(lu.data());
    int lwork = 0;
    KILN_CUSOLVER(Lu<T>::getrf_buffer(h, n, n, A, n, &lwork));
    ndarray w = detail::scratch(std::size_t(lwork) * sizeof(T));
    KILN_CUSOLVER(Lu<T>::getrf(h, n, n, A, n, static_cast<T*>(w.data()),
                               static_cast<int*>(pivots.data()), static_cast<int*>(info.data())));
  });
}

void back_substitute(const ndarray& lu, const ndarray& pivots, cublasOperation_t op, ndarray& b,
                     int nrhs, ndarray& info) {
  const int n = int(lu.shape()[0]);
  cusolverDnHandle_t h = detail::solver_handle();
  with_type(lu.dtype(), [&]<class T>(T) {
    KILN_CUSOLVER(Lu<T>::getrs(h, op, n, nrhs, static_cast<const T*>(lu.data()), n,
                               static_cast<const int*>(pivots.data()), static_cast<T*>(b.data()), n,
                               static_cast<int*>(info.data()) + 1));
  });
}

void check_info(const char* op, const ndarray& info) {
  auto codes = detail::read_info(info);
  if (codes[0] > 0) throw LinAlgError(fmt::format("linalg.{}: Singular matrix", op));
  if (codes[0] < 0 || codes[1] != 0)
    throw LinAlgError(fmt::format("linalg.{}: cuSOLVER rejected an argument (info {}, {})", op,
                                  codes[0], codes[1]));
}

// The n x n matrix A in dtype t, column-major (C-contiguous A^T), for cuSOLVER.
ndarray column_major(const ndarray& a, dtype t) {
  const ndarray at = a.T();
  return at.dtype() == t ? at.copy() : at.astype(t);
}

}  // namespace

ndarray solve(const ndarray& a, const ndarray& b) {
  detail::refuse_solver_in_capture("solve");
  detail::require_matrix("solve", a, true);
  if (!b.defined()) throw ValueError("linalg.solve: b is empty (no buffer)");
  const std::int64_t n = a.shape()[0];
  if ((b.ndim() != 1 && b.ndim() != 2) || b.shape()[0] != n)
    throw ShapeError(
        fmt::format("linalg.solve: b must have shape ({},) or ({}, k) for a of shape {}, got {}{}",
                    n, n, a.shape().str(), b.shape().str(),
                    b.ndim() > 2 ? " (stacks of systems are not supported yet)" : ""));
  const dtype t =
      detail::solver_dtype("solve", result_type(detail::solver_dtype("solve", a.dtype()),
                                                detail::solver_dtype("solve", b.dtype())));
  const std::int64_t nrhs = b.ndim() == 1 ? 1 : b.shape()[1];
  if (n == 0 || nrhs == 0) return ndarray(b.shape(), t);
  ndarray lu = column_major(a, t);
  ndarray bt = b.dtype() == t ? b : b.astype(t);
  // Column-major B (n x nrhs) is the row-major buffer of B^T.
  ndarray x = b.ndim() == 1 ? bt.copy() : bt.T().copy();
  ndarray pivots({n}, int32);
  ndarray info = zeros({2}, int32);
  factorize(lu, pivots, info);
  back_substitute(lu, pivots, CUBLAS_OP_N, x, int(nrhs), info);
  check_info("solve", info);
  return b.ndim() == 1 ? x : x.T().copy();
}

ndarray inv(const ndarray& a) {
  detail::refuse_solver_in_capture("inv");
  detail::require_matrix("inv", a, true);
  const dtype t = detail::solver_dtype("inv", a.dtype());
  const std::int64_t n = a.shape()[0];
  if (n == 0) return ndarray({0, 0}, t);
  ndarray lu = column_major(a, t);
  // Solving A X = I column-major gives inv(A) column-major: its buffer read row-major is
  // inv(A)^T.
  ndarray x = detail::eye(n, t);
  ndarray pivots({n}, int32);
  ndarray info = zeros({2}, int32);
  factorize(lu, pivots, info);
  back_substitute(lu, pivots, CUBLAS_OP_N, x, int(n), info);
  check_info("inv", info);
  return x.T().copy();
}

double det(const ndarray& a) {
  detail::refuse_solver_in_capture("det");
  detail::require_matrix("det", a, true);
  const dtype t = detail::solver_dtype("det", a.dtype());
  const std::int64_t n = a.shape()[0];
  if (n == 0) return 1.0;
  ndarray lu = column_major(a, t);
  ndarray pivots({n}, int32);
  ndarray info = zeros({2}, int32);
  factorize(lu, pivots, info);
  const auto codes = detail::read_info(info);
  if (codes[0] < 0)
    throw LinAlgError(fmt::format("linalg.det: cuSOLVER rejected argument {}", -codes[0]));
  // A zero pivot (codes[0] > 0) leaves a zero on the diagonal: the product below is 0.
  ndarray diag(lu.buffer(), Shape{n}, Shape{(n + 1) * std::int64_t(lu.itemsize())}, lu.offset(), t);
  const auto piv = pivots.get<std::int32_t>();
  double d = 1;
  for (std::int64_t i = 0; i < n; ++i)
    if (piv[std::size_t(i)] != i + 1) d = -d;
  with_type(t, [&]<class T>(T) {
    for (T v : diag.get<T>()) d *= double(v);
  });
  return d;
}

}  // namespace kiln::linalg
