// The steps every kernel kind's call shares (kernel_call.hpp has the call itself): binding
// what the caller passed, the loop shape and outputs, the device and stream, overlapping
// inputs, the block-size check. Everything up to choose_device runs before the device is
// touched.
#include "call/kernel_call.hpp"

#include <fmt/format.h>

#include <array>

#include "graph/capture_record.hpp"
#include "kiln/codegen/type_resolution.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"

namespace kiln::detail {
namespace {

std::string param_names(const codegen::KernelDefinition& def, int from, int to) {
  std::string s;
  for (int k = from; k < to; ++k) s += (s.empty() ? "" : ", ") + def.params[std::size_t(k)].name;
  return s;
}

constexpr int kMaxBlock = 1024;  // CUDA's limit on threads per block for every device

}  // namespace

std::span<const kernel_arg> take_launch_options(KernelCall& c, std::span<const kernel_arg> args) {
  if (!args.empty() && args.back().is_options()) {
    c.options = args.back().options();
    args = args.first(args.size() - 1);
  }
  if (c.options.block_size < 0 || c.options.block_size > kMaxBlock)
    throw ValueError(fmt::format("kernel '{}': block_size {} is outside 1..{} (0 lets kiln choose)",
                                 c.def.name, c.options.block_size, kMaxBlock));
  return args;
}

void check_argument_count(const KernelCall& c, std::span<const kernel_arg> args) {
  const auto& def = c.def;
  for (const auto& a : args)
    if (a.is_options())
      throw TypeError(
          fmt::format("kernel '{}': launch_options must be the last argument", def.name));
  const auto n = args.size();
  if (n != std::size_t(def.nin) && n != std::size_t(c.nparams))
    throw TypeError(
        fmt::format("kernel '{}' takes {} argument{} ({}), or {} with the output{} ({}); got {}",
                    def.name, def.nin, def.nin == 1 ? "" : "s", param_names(def, 0, def.nin),
                    c.nparams, def.nout == 1 ? "" : "s", param_names(def, def.nin, c.nparams), n));
}

void bind_arguments(KernelCall& c, std::span<const kernel_arg> args) {
  std::array<codegen::ArgInfo, kMaxParams> info{};
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k].is_array()) {
      const ndarray& a = args[k].array();
      if (!a.defined())
        throw ValueError(
            fmt::format("kernel '{}': argument '{}' is an empty ndarray handle (default-"
                        "constructed, no data); pass an array",
                        c.def.name, c.param_name(int(k))));
      c.arrays[k] = &a;
      info[k] = {a.dtype(), true};
    } else {
      if (int(k) >= c.def.nin)
        throw TypeError(fmt::format("kernel '{}': output '{}' must be an ndarray, not a scalar",
                                    c.def.name, c.param_name(int(k))));
      c.scalars[k] = &args[k].value();
    }
  }
  codegen::resolve_param_types(c.def, std::span(info.data(), std::size_t(c.nparams)),
                               std::span(c.types.data(), std::size_t(c.nparams)));
  for (int k = 0; k < c.nparams; ++k) {
    if (!c.scalars[k]) continue;
    try {
      c.scalars[k]->store_as(c.types[k], c.values[k].data());
    } catch (const ValueError&) {
      throw ValueError(fmt::format("kernel '{}': {} does not fit parameter '{}' ({})", c.def.name,
                                   c.scalars[k]->str(), c.param_name(k), c.types[k]));
    }
  }
}

// ---- loop shape and outputs ----

void decide_loop_shape(KernelCall& c, bool with_outputs) {
  std::array<const Shape*, kMaxParams> shapes;
  std::size_t n = 0;
  for (int k = 0; k < (with_outputs ? c.nparams : c.def.nin); ++k)
    if (c.arrays[k] && !c.is_raw(k)) shapes[n++] = &c.arrays[k]->shape();
  if (n > 0 && c.options.size >= 0)
    throw ValueError(
        fmt::format("kernel '{}': size= is only allowed when every array argument "
                    "is raw (the loop shape here comes from the arguments)",
                    c.def.name));
  if (n > 0) {
    c.shape = broadcast_shapes(std::span<const Shape* const>(shapes.data(), n));
  } else {
    if (c.options.size < 0)
      throw ValueError(
          fmt::format("kernel '{}': loop size is undecided: no non-raw array "
                      "argument fixes it; pass launch_options{{.size = n}}",
                      c.def.name));
    c.shape = Shape{c.options.size};
  }
  c.size = shape_size(c.shape);
}

void check_outputs(const KernelCall& c, bool given, const Shape& shape, const char* shape_from) {
  for (int k = c.def.nin; k < c.nparams; ++k) {
    const auto& name = c.param_name(k);
    if (!given) {
      if (c.is_raw(k) && c.options.size < 0)
        throw ValueError(
            fmt::format("kernel '{}': the size of raw output '{}' is undecided; pass "
                        "the output array",
                        c.def.name, name));
      continue;
    }
    if (c.is_raw(k)) continue;
    const ndarray& a = *c.arrays[k];
    if (!(a.shape() == shape))
      throw ShapeError(fmt::format("kernel '{}': output '{}' has shape {} but {} {}", c.def.name,
                                   name, a.shape().str(), shape_from, shape.str()));
    for (int d = 0; d < a.ndim(); ++d)
      if (a.strides()[d] == 0 && a.shape()[d] > 1)
        throw ValueError(
            fmt::format("kernel '{}': output '{}' has a zero stride (a broadcast "
                        "view); its elements overlap",
                        c.def.name, name));
  }
}

void prepare_outputs(KernelCall& c, kernel_result& result, bool given, const Shape& shape) {
  for (int k = c.def.nin; k < c.nparams; ++k) {
    if (given) {
      result.push_back(*c.arrays[k]);
      continue;
    }
    const dtype t = c.types[k];
    auto buffer = std::make_shared<Buffer>(std::size_t(shape_size(shape)) * t.itemsize(), c.device,
                                           allocation_stream(c));
    result.push_back(
        ndarray(std::move(buffer), shape, c_strides(shape, std::int64_t(t.itemsize())), 0, t));
  }
  for (int k = c.def.nin; k < c.nparams; ++k) c.arrays[k] = &result[std::size_t(k - c.def.nin)];
}

Shape loop_strides(const ndarray& a, const Shape& loop) {
  Shape s = Shape::filled(loop.size(), 0);
  const int off = loop.size() - a.ndim();
  for (int d = 0; d < a.ndim(); ++d)
    if (a.shape()[d] != 1) s[off + d] = a.strides()[d];
  return s;
}

// ---- device and stream ----

void choose_device(KernelCall& c) {
  c.device = current_device();
  if (c.options.stream) {
    if (c.options.stream->device() != c.device)
      throw ValueError(
          fmt::format("kernel '{}': the stream belongs to device {} but device {} is current",
                      c.def.name, c.options.stream->device(), c.device));
    c.stream = c.options.stream->handle();
  } else {
    c.stream = current_stream_handle(c.device);
  }
  for (int k = 0; k < c.nparams; ++k)
    if (c.arrays[k] && c.arrays[k]->size() > 0 && c.arrays[k]->device() != c.device)
      throw ValueError(
          fmt::format("kernel '{}': argument '{}' is on device {}, not on the "
                      "current device {}",
                      c.def.name, c.param_name(k), c.arrays[k]->device(), c.device));
}

Stream allocation_stream(const KernelCall& c) {
  return c.options.stream ? *c.options.stream : current_stream();
}

void check_block(const KernelCall& c, unsigned threads, const cache::LoadedKernel& k) {
  if (int(threads) > k.max_threads_per_block)
    throw ValueError(
        fmt::format("kernel '{}': block_size {} is more than this kernel allows on "
                    "device {} ({})",
                    c.def.name, threads, c.device, k.max_threads_per_block));
}

// ---- inputs that overlap an output ----

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

std::uint64_t overlapping_inputs(const KernelCall& c) {
  std::uint64_t mask = 0;
  for (int k = 0; k < c.def.nin; ++k) {
    const ndarray* in = c.arrays[k];
    if (!in || c.is_raw(k) || in->size() == 0) continue;
    for (int o = c.def.nin; o < c.nparams; ++o)
      if (!c.is_raw(o) && overlaps(*in, *c.arrays[o], c.shape)) {
        mask |= std::uint64_t(1) << k;
        break;
      }
  }
  return mask;
}

void copy_inputs(KernelCall& c, std::uint64_t mask, std::vector<ndarray>& copies, CopyArray copy) {
  if (mask == 0) return;
  copies.reserve(std::size_t(c.def.nin));  // c.arrays keeps pointers into it: one copy an input
  for (int k = 0; k < c.def.nin; ++k) {
    if (!(mask >> k & 1)) continue;
    const ndarray* in = c.arrays[k];
    auto buffer = std::make_shared<Buffer>(in->nbytes(), c.device, allocation_stream(c));
    copies.emplace_back(std::move(buffer), in->shape(),
                        c_strides(in->shape(), std::int64_t(in->itemsize())), 0, in->dtype());
    copy(*in, copies.back(), launch_options{.stream = c.options.stream});
    c.arrays[k] = &copies.back();
  }
}

void record_launch(const KernelCall& c, void* const* argv, std::size_t argc) {
  std::array<ArgInfo, kMaxParams> roles{};
  for (int k = 0; k < c.nparams; ++k)
    roles[std::size_t(k)] =
        c.arrays[k] ? ArgInfo{ArgRole::array, c.types[k]} : ArgInfo{ArgRole::scalar, c.types[k]};
  record_node(c.stream, c.def.name, std::span(roles.data(), std::size_t(c.nparams)), argv, argc,
              /*waits=*/true);
}

}  // namespace kiln::detail
