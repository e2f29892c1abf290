// The per-call path of ElementwiseKernel: bind dtypes, broadcast, allocate outputs, choose
// the layout, find the loaded kernel, marshal, launch. Everything lives on the stack; the
// only allocations are outputs (and copies of inputs that partly overlap an output).
#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "elementwise_launch.hpp"
#include "kiln/codegen/elementwise_emitter.hpp"
#include "kiln/codegen/loop_layout.hpp"
#include "kiln/codegen/type_resolution.hpp"
#include "kiln/ops/elementwise_builtins.hpp"
#include "kiln/ops/elementwise_kernel.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"

namespace kiln {
namespace {

using codegen::kMaxParams;
using codegen::Layout;
using codegen::OperandKind;

constexpr int kDefaultBlock = 256;

struct Call {
  // Only the first nparams entries of the per-parameter arrays are ever used, so only those
  // are initialised: a call must not pay for kMaxParams of each.
  Call(const codegen::ElementwiseDefinition& d, int n) : def(d), nparams(n) {
    std::fill_n(arrays.begin(), n, nullptr);
    std::fill_n(scalars.begin(), n, nullptr);
  }
  const codegen::ElementwiseDefinition& def;
  int nparams = 0;
  std::array<const ndarray*, kMaxParams> arrays;  // nullptr: scalar
  std::array<const scalar*, kMaxParams> scalars;
  std::array<dtype, kMaxParams> types;
  launch_options options;
  int device = 0;
  cudaStream_t stream = nullptr;
  Shape shape;  // the loop shape
  std::int64_t size = 0;
};

// The stream outputs and copies are allocated on (kept alive by their buffers).
Stream allocation_stream(const Call& c) {
  return c.options.stream ? *c.options.stream : current_stream();
}

std::string param_names(const codegen::ElementwiseDefinition& def, int from, int to) {
  std::string s;
  for (int k = from; k < to; ++k) s += (s.empty() ? "" : ", ") + def.params[std::size_t(k)].name;
  return s;
}

// Splits off a trailing launch_options and checks the argument count.
std::span<const kernel_arg> take_options(Call& c, std::span<const kernel_arg> args) {
  if (!args.empty() && args.back().is_options()) {
    c.options = args.back().options();
    args = args.first(args.size() - 1);
  }
  for (const auto& a : args)
    if (a.is_options())
      throw TypeError(fmt::format("kernel '{}': launch_options must be the last argument", c.def.name));
  const auto n = args.size();
  if (n != std::size_t(c.def.nin) && n != std::size_t(c.nparams))
    throw TypeError(fmt::format(
        "kernel '{}' takes {} argument{} ({}), or {} with the output{} ({}); got {}", c.def.name,
        c.def.nin, c.def.nin == 1 ? "" : "s", param_names(c.def, 0, c.def.nin), c.nparams,
        c.def.nout == 1 ? "" : "s", param_names(c.def, c.def.nin, c.nparams), n));
  return args;
}

void bind_arguments(Call& c, std::span<const kernel_arg> args) {
  std::array<codegen::ArgInfo, kMaxParams> info{};
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k].is_array()) {
      c.arrays[k] = &args[k].array();
      info[k] = {c.arrays[k]->dtype(), true};
    } else {
      if (int(k) >= c.def.nin)
        throw TypeError(fmt::format("kernel '{}': output '{}' must be an ndarray, not a scalar",
                                    c.def.name, c.def.params[k].name));
      c.scalars[k] = &args[k].value();
    }
  }
  codegen::resolve_param_types(c.def, std::span(info.data(), std::size_t(c.nparams)),
                               std::span(c.types.data(), std::size_t(c.nparams)));
}

void choose_device(Call& c) {
  c.device = current_device();
  if (c.options.stream) {
    if (c.options.stream->device() != c.device)
      throw ValueError(fmt::format(
          "kernel '{}': the stream belongs to device {} but device {} is current", c.def.name,
          c.options.stream->device(), c.device));
    c.stream = c.options.stream->handle();
  } else {
    c.stream = current_stream_handle(c.device);
  }
  for (int k = 0; k < c.nparams; ++k)
    if (c.arrays[k] && c.arrays[k]->size() > 0 && c.arrays[k]->device() != c.device)
      throw ValueError(fmt::format("kernel '{}': argument '{}' is on device {}, not on the "
                                   "current device {}",
                                   c.def.name, c.def.params[k].name, c.arrays[k]->device(), c.device));
}

// NumPy broadcasting of one more shape into `acc`; false when they do not fit.
bool broadcast_into(Shape& acc, const Shape& s) {
  if (s.size() > acc.size())
    for (int d = s.size() - acc.size(); d > 0; --d) acc.insert(0, 1);
  const int off = acc.size() - s.size();
  for (int d = 0; d < s.size(); ++d) {
    std::int64_t& a = acc[off + d];
    if (s[d] == a || s[d] == 1) continue;
    if (a != 1) return false;
    a = s[d];
  }
  return true;
}

void decide_loop_shape(Call& c) {
  bool fixed = false;
  for (int k = 0; k < c.nparams; ++k) {
    if (!c.arrays[k] || c.def.params[k].raw) continue;
    if (!broadcast_into(c.shape, c.arrays[k]->shape())) {
      std::vector<Shape> all;
      for (int j = 0; j < c.nparams; ++j)
        if (c.arrays[j] && !c.def.params[j].raw) all.push_back(c.arrays[j]->shape());
      broadcast_shapes(all);  // throws NumPy's message
    }
    fixed = true;
  }
  if (fixed && c.options.size >= 0)
    throw ValueError(fmt::format("kernel '{}': size= is only allowed when every array argument "
                                 "is raw (the loop shape here comes from the arguments)",
                                 c.def.name));
  if (!fixed) {
    if (c.options.size < 0)
      throw ValueError(fmt::format("kernel '{}': loop size is undecided: no non-raw array "
                                   "argument fixes it; pass launch_options{{.size = n}}",
                                   c.def.name));
    c.shape = Shape{c.options.size};
  }
  c.size = shape_size(c.shape);
}

void check_given_output(const Call& c, int k) {
  const ndarray& a = *c.arrays[k];
  const auto& p = c.def.params[k];
  if (p.raw) return;
  if (!(a.shape() == c.shape))
    throw ShapeError(fmt::format("kernel '{}': output '{}' has shape {} but the arguments "
                                 "broadcast to {}",
                                 c.def.name, p.name, a.shape().str(), c.shape.str()));
  for (int d = 0; d < a.ndim(); ++d)
    if (a.strides()[d] == 0 && a.shape()[d] > 1)
      throw ValueError(fmt::format("kernel '{}': output '{}' has a zero stride (a broadcast "
                                   "view); its elements overlap",
                                   c.def.name, p.name));
}

// Outputs: those passed (checked), or new C-contiguous arrays on the launch stream.
void prepare_outputs(Call& c, kernel_result& result, bool given) {
  for (int k = c.def.nin; k < c.nparams; ++k) {
    if (given) {
      check_given_output(c, k);
      result.push_back(*c.arrays[k]);
      continue;
    }
    const auto& p = c.def.params[k];
    if (p.raw && c.options.size < 0)
      throw ValueError(fmt::format("kernel '{}': the size of raw output '{}' is undecided; pass "
                                   "the output array",
                                   c.def.name, p.name));
    const dtype t = c.types[k];
    auto buffer = std::make_shared<Buffer>(std::size_t(c.size) * t.itemsize(), c.device,
                                           allocation_stream(c));
    result.push_back(ndarray(std::move(buffer), c.shape, c_strides(c.shape, std::int64_t(t.itemsize())), 0, t));
  }
  for (int k = c.def.nin; k < c.nparams; ++k) c.arrays[k] = &result[std::size_t(k - c.def.nin)];
}

// Strides of `a` over the loop shape (0 on broadcast axes).
Shape loop_strides(const ndarray& a, const Shape& shape) {
  Shape s = Shape::filled(shape.size(), 0);
  const int off = shape.size() - a.ndim();
  for (int d = 0; d < a.ndim(); ++d)
    if (a.shape()[d] != 1) s[off + d] = a.strides()[d];
  return s;
}

struct ByteRange {
  std::uintptr_t lo, hi;
};
ByteRange byte_range(const ndarray& a) {
  auto base = reinterpret_cast<std::uintptr_t>(a.data());
  auto [lo, hi] = a.byte_extent();
  return {base + lo, base + hi};
}

// An input that shares memory with an output, other than as the very same elements
// (in place), is read after other threads wrote it: copy it first (CuPy does too).
void copy_overlapping_inputs(Call& c, std::vector<ndarray>& copies) {
  for (int k = 0; k < c.def.nin; ++k) {
    const ndarray* in = c.arrays[k];
    if (!in || c.def.params[k].raw || in->size() == 0) continue;
    for (int o = c.def.nin; o < c.nparams; ++o) {
      const ndarray* out = c.arrays[o];
      if (c.def.params[o].raw || in->buffer() != out->buffer()) continue;
      ByteRange a = byte_range(*in), b = byte_range(*out);
      if (a.hi <= b.lo || b.hi <= a.lo) continue;
      bool same_elements = in->data() == out->data() && in->itemsize() == out->itemsize() &&
                           loop_strides(*in, c.shape) == loop_strides(*out, c.shape);
      if (same_elements) continue;
      copies.reserve(std::size_t(c.def.nin));
      auto buffer = std::make_shared<Buffer>(in->nbytes(), c.device, allocation_stream(c));
      copies.emplace_back(std::move(buffer), in->shape(),
                          c_strides(in->shape(), std::int64_t(in->itemsize())), 0, in->dtype());
      launch_options on{.stream = c.options.stream};
      ops::copy_kernel()(*in, copies.back(), on);
      c.arrays[k] = &copies.back();
      break;
    }
  }
}

// ---- layout ----

// Strides of the loop operands, built only for the operands there are: a Shape is 264
// bytes and zero-initialised, and a call must not pay for 64 of them.
class OperandStrides {
 public:
  Shape& add(Shape s) { return *new (&storage_[std::size_t(count_++) * sizeof(Shape)]) Shape(s); }
  std::span<Shape> all() noexcept { return {reinterpret_cast<Shape*>(storage_), std::size_t(count_)}; }
  const Shape& operator[](int j) const noexcept { return reinterpret_cast<const Shape*>(storage_)[j]; }
  Shape& operator[](int j) noexcept { return reinterpret_cast<Shape*>(storage_)[j]; }

 private:
  static_assert(std::is_trivially_destructible_v<Shape>);
  alignas(Shape) std::byte storage_[sizeof(Shape) * kMaxParams];
  int count_ = 0;
};

struct Plan {
  codegen::ElementwiseSpec spec;
  Shape shape;                              // collapsed (strided) loop shape
  OperandStrides strides;                   // per loop operand, over `shape`
  std::array<std::int8_t, kMaxParams> slot;  // parameter -> its index in `strides`
};

void plan_layout(const Call& c, bool reduce_dims, Plan& plan) {
  std::array<int, kMaxParams> ops;
  int nops = 0;
  for (int k = 0; k < c.nparams; ++k)
    if (c.arrays[k] && !c.def.params[k].raw) {
      plan.strides.add(loop_strides(*c.arrays[k], c.shape));
      plan.slot[std::size_t(k)] = std::int8_t(nops);
      ops[std::size_t(nops++)] = k;
    }
  plan.shape = c.shape;
  if (reduce_dims) codegen::collapse_dims(plan.shape, plan.strides.all());

  auto& spec = plan.spec;
  spec.nparams = std::uint8_t(c.nparams);
  bool contiguous = true;
  std::int64_t array_span = 0, raw_span = 0;
  std::array<codegen::VectorOperand, kMaxParams> vec;
  int nvec = 0;
  for (int j = 0; j < nops; ++j) {
    const int k = ops[j];
    const ndarray& a = *c.arrays[k];
    const auto isz = std::int64_t(a.itemsize());
    if (!c.def.params[k].is_output && codegen::is_uniform(plan.strides[j])) {
      spec.set_param(k, c.types[k], OperandKind::uniform);
      continue;
    }
    spec.set_param(k, c.types[k], OperandKind::array);
    contiguous &= codegen::is_contiguous_over(plan.shape, plan.strides[j], isz);
    array_span = std::max(array_span, codegen::byte_span(plan.shape, plan.strides[j], isz));
    vec[nvec++] = {reinterpret_cast<std::uintptr_t>(a.data()), isz};
  }
  for (int k = 0; k < c.nparams; ++k) {
    if (!c.arrays[k]) {
      spec.set_param(k, c.types[k], OperandKind::scalar);
    } else if (c.def.params[k].raw) {
      const ndarray& a = *c.arrays[k];
      spec.set_param(k, c.types[k], OperandKind::raw_array, a.ndim(), a.is_c_contiguous());
      raw_span = std::max(raw_span, codegen::byte_span(a.shape(), a.strides(), std::int64_t(a.itemsize())));
    }
  }
  if (contiguous) {
    // Contiguous operands are indexed by element: only the loop size (and raw arrays, which
    // compute byte offsets) limit the index width.
    spec.layout = Layout::contiguous;
    spec.ndim = 1;
    spec.vector_width = std::uint8_t(codegen::choose_vector_width(std::span(vec.data(), std::size_t(nvec))));
    spec.index_bits = std::uint8_t(codegen::choose_index_bits(c.size, raw_span));
  } else {
    spec.layout = Layout::strided;
    spec.ndim = std::uint8_t(plan.shape.size());
    spec.vector_width = 1;
    spec.index_bits = std::uint8_t(codegen::choose_index_bits(c.size, std::max(array_span, raw_span)));
  }
}

// ---- marshalling ----

template <class I>
void put_index(std::byte*& p, std::int64_t v) {
  const I x = static_cast<I>(v);
  std::memcpy(p, &x, sizeof x);
  p += sizeof x;
}

template <class I>
void marshal(const Call& c, const Plan& plan, detail::KernelArgs& args,
             const std::array<std::array<std::byte, 16>, kMaxParams>& values) {
  const auto& spec = plan.spec;
  for (int k = 0; k < c.nparams; ++k) {
    const std::size_t size = codegen::elementwise_arg_size(spec, k);
    switch (spec.kind(k)) {
      case OperandKind::scalar: {
        const std::size_t isz = c.types[k].itemsize();
        args.put(values[k].data(), size, isz);
        break;
      }
      case OperandKind::uniform:
        args.put(c.arrays[k]->data());
        break;
      case OperandKind::raw_array: {
        const ndarray& a = *c.arrays[k];
        std::byte* p = args.begin_arg(size, 8);
        void* data = a.data();
        std::memcpy(p, &data, 8);
        p += 8;
        put_index<I>(p, a.size());
        for (int d = 0; d < std::max(a.ndim(), 1); ++d) put_index<I>(p, a.ndim() ? a.shape()[d] : 1);
        for (int d = 0; d < std::max(a.ndim(), 1); ++d) put_index<I>(p, a.ndim() ? a.strides()[d] : 0);
        break;
      }
      case OperandKind::array:
      default:
        if (spec.layout == Layout::contiguous) {
          args.put(c.arrays[k]->data());
        } else {
          std::byte* p = args.begin_arg(size, 8);
          void* data = c.arrays[k]->data();
          std::memcpy(p, &data, 8);
          p += 8;
          for (int d = 0; d < spec.ndim; ++d) put_index<I>(p, plan.strides[plan.slot[std::size_t(k)]][d]);
        }
    }
  }
  args.put(static_cast<I>(c.size));
  if (spec.layout == Layout::strided) {
    std::byte* p = args.begin_arg(sizeof(I) * spec.ndim, sizeof(I));
    for (int d = 0; d < spec.ndim; ++d) put_index<I>(p, plan.shape[d]);
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

void launch(const Call& c, const Plan& plan, const detail::LoadedElementwise& k,
            detail::KernelArgs& args) {
  const int block = c.options.block_size ? c.options.block_size : std::min(kDefaultBlock, k.max_threads_per_block);
  if (block < 1 || block > k.max_threads_per_block)
    throw ValueError(fmt::format("kernel '{}': block_size {} is outside 1..{} (this kernel's "
                                 "limit on this device)",
                                 c.def.name, block, k.max_threads_per_block));
  const auto& s = plan.spec;
  std::int64_t items = c.size;
  if (s.layout == Layout::contiguous && s.vector_width > 1) {
    const std::int64_t nvec = c.size / s.vector_width;
    items = std::max(ceil_div(nvec, s.unroll), c.size - nvec * s.vector_width);
  }
  // One thread per item (a vector or a scalar), the grid-stride loop only covering loops past
  // the grid limit. Capping the grid at the resident blocks (SMs x blocks per SM) and striding
  // measured slower on an H200: my_kernel 4.10 vs 4.37 TB/s, x *= 5 3.92 vs 4.17, x.T + y 1.40
  // vs 1.66 (caps of 4, 16 and 64 waves fell in between, in order).
  constexpr std::int64_t kMaxGrid = 0x7fffffff;
  const std::int64_t grid = std::clamp<std::int64_t>(ceil_div(items, block), 1, kMaxGrid);
  k.function.launch(dim3(unsigned(grid)), dim3(unsigned(block)), args.argv(), 0, c.stream);
}

}  // namespace

kernel_result ElementwiseKernel::call(std::span<const kernel_arg> all_args) const {
  Call c(*def_, int(def_->params.size()));
  auto args = take_options(c, all_args);
  bind_arguments(c, args);
  decide_loop_shape(c);
  choose_device(c);

  kernel_result result;
  result.set_tuple(return_tuple_);
  prepare_outputs(c, result, args.size() == std::size_t(c.nparams));

  // Scalars in their parameter's dtype (ValueError when an integer does not fit).
  std::array<std::array<std::byte, 16>, kMaxParams> values;
  for (int k = 0; k < c.nparams; ++k)
    if (c.scalars[k]) c.scalars[k]->store_as(c.types[k], values[k].data());

  if (c.size > 0) {
    std::vector<ndarray> copies;
    copy_overlapping_inputs(c, copies);
    Plan plan;
    plan_layout(c, reduce_dims_, plan);
    const auto& loaded = detail::loaded_elementwise(*def_, plan.spec, c.device);
    detail::KernelArgs kargs;
    if (plan.spec.index_bits == 64) marshal<std::int64_t>(c, plan, kargs, values);
    else marshal<std::int32_t>(c, plan, kargs, values);
    launch(c, plan, loaded, kargs);
  }
  if (no_return_) result.clear();
  return result;
}

}  // namespace kiln
