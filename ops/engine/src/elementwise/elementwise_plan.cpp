#include "elementwise_plan.hpp"

#include <algorithm>
#include <cstdlib>

#include "kiln/codegen/elementwise_emitter.hpp"
#include "kiln/codegen/loop_layout.hpp"

namespace kiln::detail {

using codegen::Layout;
using codegen::OperandKind;

namespace {

// A 2-D loop where some array operand runs fastest down the rows (a transposed view) goes
// tiled: those operands are staged through shared memory, the rest read directly. Broadcast
// axes (stride 0) never make an operand staged: a row vector reads along cols, a column
// vector is one element per row.
void stage_transposed(const KernelCall& c, const std::array<int, kMaxParams>& ops, ElementwisePlan& plan) {
  auto& spec = plan.spec;
  bool any = false;
  for (int j = 0; j < plan.noperands; ++j) {
    const int k = ops[std::size_t(j)];
    if (spec.kind(k) != OperandKind::array) continue;
    const Shape& st = plan.strides[std::size_t(j)];
    const bool staged = st[0] != 0 && std::abs(st[0]) < std::abs(st[1]);
    spec.params[std::size_t(k)].staged = std::uint8_t(staged);
    any |= staged;
  }
  if (any && codegen::tiled_shared_bytes(spec) <= codegen::kMaxTiledSharedBytes) {
    spec.layout = Layout::tiled;
    return;
  }
  for (int k = 0; k < c.nparams; ++k) spec.params[std::size_t(k)].staged = 0;
}

}  // namespace

void plan_elementwise(const KernelCall& c, bool reduce_dims, ElementwisePlan& plan) {
  std::array<int, kMaxParams> ops;
  int nops = 0;
  for (int k = 0; k < c.nparams; ++k)
    if (c.arrays[k] && !c.is_raw(k)) {
      plan.strides.push_back(loop_strides(*c.arrays[k], c.shape));
      plan.slot[std::size_t(k)] = std::int8_t(nops);
      ops[std::size_t(nops++)] = k;
    }
  plan.noperands = nops;
  plan.shape = c.shape;
  if (reduce_dims) codegen::collapse_dims(plan.shape, plan.strides.span());

  auto& spec = plan.spec;
  spec.nparams = std::uint8_t(c.nparams);
  bool contiguous = true;
  std::int64_t array_span = 0, raw_span = 0;
  std::array<codegen::VectorOperand, kMaxParams> vec;
  int nvec = 0;
  for (int j = 0; j < nops; ++j) {
    const int k = ops[std::size_t(j)];
    const ndarray& a = *c.arrays[k];
    const auto isz = std::int64_t(a.itemsize());
    const Shape& st = plan.strides[std::size_t(j)];
    if (!c.def.params[std::size_t(k)].is_output && codegen::is_uniform(st)) {
      spec.set_param(k, c.types[k], OperandKind::uniform);
      continue;
    }
    spec.set_param(k, c.types[k], OperandKind::array);
    contiguous &= codegen::is_contiguous_over(plan.shape, st, isz);
    array_span = std::max(array_span, codegen::byte_span(plan.shape, st, isz));
    vec[std::size_t(nvec++)] = {reinterpret_cast<std::uintptr_t>(a.data()), isz};
  }
  for (int k = 0; k < c.nparams; ++k)
    if (set_scalar_or_raw(c, k, spec) && c.arrays[k]) {
      const ndarray& a = *c.arrays[k];
      raw_span = std::max(raw_span, codegen::byte_span(a.shape(), a.strides(), std::int64_t(a.itemsize())));
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
    if (plan.shape.size() == 2 && (c.options.block_size == 0 || c.options.block_size == 256))
      stage_transposed(c, ops, plan);
    spec.ndim = std::uint8_t(plan.shape.size());
    spec.vector_width = 1;
    spec.index_bits = std::uint8_t(codegen::choose_index_bits(c.size, std::max(array_span, raw_span)));
  }
}

void pack_elementwise(const KernelCall& c, const ElementwisePlan& plan, KernelArgs& args) {
  const auto& spec = plan.spec;
  for (int k = 0; k < c.nparams; ++k) {
    switch (spec.kind(k)) {
      case OperandKind::scalar: args.put_value(c.types[k], c.values[std::size_t(k)].data()); break;
      case OperandKind::uniform: args.put_pointer(c.arrays[k]->data()); break;
      case OperandKind::raw_array: {
        const ndarray& a = *c.arrays[k];
        args.put_raw_array(a.data(), a.size(), a.shape().data(), a.strides().data(), a.ndim());
        break;
      }
      case OperandKind::array:
      default:
        if (spec.layout == Layout::contiguous) args.put_pointer(c.arrays[k]->data());
        else args.put_strided(c.arrays[k]->data(), plan.strides[std::size_t(plan.slot[std::size_t(k)])].data(), spec.ndim);
    }
  }
  args.put_index(c.size);
  if (spec.layout != Layout::contiguous) args.put_dims(plan.shape.data(), spec.ndim);
}

}  // namespace kiln::detail
