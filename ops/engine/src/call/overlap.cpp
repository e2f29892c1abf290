// Inputs that partly overlap an output are copied before the launch (CuPy does the same);
// an input that is exactly an output (x = f(x), in place) is not.
#include "kernel_call.hpp"
#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/runtime/memory.hpp"

namespace kiln::detail {
namespace {

struct ByteRange {
  std::uintptr_t lo, hi;
};
ByteRange byte_range(const ndarray& a) {
  auto base = reinterpret_cast<std::uintptr_t>(a.data());
  auto [lo, hi] = a.byte_extent();
  return {base + std::uintptr_t(lo), base + std::uintptr_t(hi)};
}

bool overlaps(const ndarray& in, const ndarray& out, const Shape& loop) {
  if (in.buffer() != out.buffer()) return false;
  ByteRange a = byte_range(in), b = byte_range(out);
  if (a.hi <= b.lo || b.hi <= a.lo) return false;
  const bool same_elements = in.data() == out.data() && in.itemsize() == out.itemsize() &&
                             loop_strides(in, loop) == loop_strides(out, loop);
  return !same_elements;
}

}  // namespace

void copy_overlapping_inputs(KernelCall& c, std::vector<ndarray>& copies) {
  for (int k = 0; k < c.def.nin; ++k) {
    const ndarray* in = c.arrays[k];
    if (!in || c.is_raw(k) || in->size() == 0) continue;
    for (int o = c.def.nin; o < c.nparams; ++o) {
      if (c.is_raw(o) || !overlaps(*in, *c.arrays[o], c.shape)) continue;
      copies.reserve(std::size_t(c.def.nin));  // c.arrays keeps pointers into it
      auto buffer = std::make_shared<Buffer>(in->nbytes(), c.device, allocation_stream(c));
      copies.emplace_back(std::move(buffer), in->shape(),
                          c_strides(in->shape(), std::int64_t(in->itemsize())), 0, in->dtype());
      builtin::copy_kernel()(*in, copies.back(), launch_options{.stream = c.options.stream});
      c.arrays[k] = &copies.back();
      break;
    }
  }
}

}  // namespace kiln::detail
