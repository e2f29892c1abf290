// kiln::sort / kiln::argsort: argument checks, moving the axis last, and the call into the
// nvcc-compiled CUB half (ops/cuda/sort_cub.cu).
#include "kiln/library/sort.hpp"

#include <fmt/format.h>

#include "../cuda/sort_cub.hpp"
#include "kiln/library/copying.hpp"
#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln {
namespace detail {

int check_sort_args(const char* op, dtype t, int ndim, std::int64_t axis) {
  if (t.is_complex())
    throw TypeError(fmt::format(
        "{}: {} arrays are not supported (NumPy's lexicographic order of complex numbers is "
        "not implemented); sort the real or imaginary part instead",
        op, t.name()));
  if (ndim == 0)
    throw ValueError(
        fmt::format("{}: a 0-d array has no axis to sort along; reshape it to 1-D", op));
  return normalize_axis(axis, ndim);
}

}  // namespace detail

namespace {

detail::SortJob job_for(dtype t) {
  using detail::sort_key_kind;
  detail::SortJob j;
  j.key_bytes = int(t.itemsize());
  switch (t.id()) {
    case dtype_id::bool_:
    case dtype_id::uint8:
    case dtype_id::uint16:
    case dtype_id::uint32:
    case dtype_id::uint64:
      j.kind = sort_key_kind::unsigned_int;
      break;
    case dtype_id::int8:
    case dtype_id::int16:
    case dtype_id::int32:
    case dtype_id::int64:
      j.kind = sort_key_kind::signed_int;
      break;
    case dtype_id::float16:
      j.kind = sort_key_kind::floating;
      j.float_inf_bits = 0x7C00;
      break;
    case dtype_id::bfloat16:
      j.kind = sort_key_kind::floating;
      j.float_inf_bits = 0x7F80;
      break;
    case dtype_id::float32:
      j.kind = sort_key_kind::floating;
      j.float_inf_bits = 0x7F800000u;
      break;
    default:
      j.kind = sort_key_kind::floating;
      j.float_inf_bits = 0x7FF0000000000000ull;
      break;
  }
  return j;
}

void check(detail::SortStatus s) {
  if (s.code != cudaSuccess) detail::throw_cuda_error(s.code, s.call);
}

ndarray sort_impl(const ndarray& a, std::int64_t axis_arg, bool indices) {
  const char* op = indices ? "argsort" : "sort";
  if (!a.defined()) throw ValueError(fmt::format("{}: the array is empty (no buffer)", op));
  const int axis = detail::check_sort_args(op, a.dtype(), a.ndim(), axis_arg);
  if (kiln::detail::thread_capture() && a.size() > 0 &&
      a.size() / a.shape()[axis] > detail::kMaxCapturedSortRows)
    kiln::detail::throw_capture_refusal(
        fmt::format("{} of {} rows", op, a.size() / a.shape()[axis]),
        fmt::format("for more than {} rows CUB's segmented sort reads segment counts back to "
                    "the host, which waits for the device; capture at most {} rows per call",
                    detail::kMaxCapturedSortRows, detail::kMaxCapturedSortRows));
  const int last = a.ndim() - 1;
  const bool moved = axis != last;
  ndarray src = moved ? a.swapaxes(axis, last) : a;
  ndarray out(src.shape(), indices ? int64 : a.dtype());
  if (a.size() == 0) return moved ? out.swapaxes(axis, last).copy() : out;
  if (!src.is_c_contiguous()) src = src.copy();

  detail::SortJob job = job_for(a.dtype());
  job.in = src.data();
  job.n = src.shape()[last];
  job.rows = src.size() / job.n;
  if (indices)
    job.out_indices = static_cast<std::int64_t*>(out.data());
  else
    job.out_values = out.data();
  job.stream = current_stream_handle();
  std::size_t bytes = 0;
  check(detail::cub_sort_scratch_bytes(job, bytes));
  ndarray scratch = empty({std::int64_t(bytes > 0 ? bytes : 1)}, uint8);
  check(detail::cub_sort(job, scratch.data(), bytes));
  return moved ? out.swapaxes(axis, last).copy() : out;
}

}  // namespace

ndarray sort(const ndarray& a, std::int64_t axis) { return sort_impl(a, axis, false); }
ndarray argsort(const ndarray& a, std::int64_t axis) { return sort_impl(a, axis, true); }

}  // namespace kiln
