#include "reduction_plan.hpp"

#include <algorithm>
#include <cstdlib>

#include "call/buffer_granules.hpp"
#include "call/stack_vector.hpp"
#include "kiln/codegen/loop_layout.hpp"

namespace kiln::detail {

using codegen::OperandKind;
using codegen::ReductionStrategy;

namespace {

// Collapses one group of dims; an empty group becomes one dim of extent 1 (stride 0), and a
// group with a zero extent one dim of extent 0.
void collapse_group(Shape& shape, std::span<Shape> strides) {
  if (shape_size(shape) == 0) {
    shape = Shape{0};
    for (auto& s : strides) s = Shape{0};
    return;
  }
  codegen::collapse_dims(shape, strides);
  if (shape.empty()) {
    shape = Shape{1};
    for (auto& s : strides) s = Shape{0};
  }
}

// Folded (ReductionStrategy::folded): one array input laid out densely whose first reduced
// dim is outermost, the rest a period of at most kFoldPositions elements, where the plan so
// far reads less than 16 bytes a load: outer columns that whole vectors do not tile ((R, 61)
// float32) or inner runs short of 256 bytes ((A, 8, 49) float16 over (0, 2): windows). The
// input is then read as one flat run of 16-byte vectors.
bool try_folded(const KernelCall& c, int k, int nin_ops, const Shape& kept, const Shape& red,
                ReductionPlan& plan, int sm_count) {
  auto& spec = plan.spec;
  if (nin_ops != 1 || c.options.block_size || plan.m < 2 || plan.n < 2) return false;
  for (int j = 0; j < c.nparams; ++j)
    if (spec.kind(j) == OperandKind::raw_array) return false;
  const auto isz = std::int64_t(c.types[k].itemsize());
  if (isz > 8 || 16 % isz) return false;
  const bool outer = spec.strategy == ReductionStrategy::outer;
  if (outer ? spec.vector_width * isz >= 16 : red.size() < 2 || red.back() * isz >= 256)
    return false;
  if (reinterpret_cast<std::uintptr_t>(c.arrays[k]->data()) % 16) return false;
  // Dense, positive strides, the outer reduced dim (loop dim kept.size()) the widest.
  const Shape& st = plan.strides[std::size_t(plan.slot[std::size_t(k)])];
  const int nd = plan.dims.size(), outer_red = kept.size();
  std::array<int, kMaxNdim> order;
  for (int d = 0; d < nd; ++d) {
    if (plan.dims[d] < 2 || st[d] <= 0) return false;
    order[std::size_t(d)] = d;
  }
  std::sort(order.begin(), order.begin() + nd, [&](int a, int b) { return st[a] < st[b]; });
  std::int64_t next = isz;
  for (int i = 0; i < nd; ++i) {
    const int d = order[std::size_t(i)];
    if (st[d] != next) return false;
    next *= plan.dims[d];
  }
  if (order[std::size_t(nd - 1)] != outer_red) return false;
  const std::int64_t period = plan.m * (plan.n / red[0]);
  if (period > codegen::kFoldPositions) return false;
  const codegen::ReductionSpec before = spec;
  spec.strategy = ReductionStrategy::folded;
  spec.vector_width = std::uint8_t(16 / isz);
  spec.red_contiguous = 0;
  plan.geometry = codegen::folded_geometry(spec, plan.m, period, plan.m * plan.n, sm_count);
  if (plan.geometry.fold_unit > 0) return true;
  spec = before;
  return false;
}

}  // namespace

void plan_reduction(const KernelCall& c, std::uint64_t mask, bool keepdims, int sm_count,
                    ReductionPlan& plan) {
  const int nin = c.def.nin;
  auto& spec = plan.spec;
  spec.nparams = std::uint8_t(c.nparams);

  // Operand slots: array inputs, then array outputs.
  std::array<int, kMaxParams> ops;
  int nops = 0, nin_ops = 0;
  for (int k = 0; k < c.nparams; ++k) {
    if (!set_scalar_or_raw(c, k, spec)) {
      spec.set_param(k, c.types[k], OperandKind::array);
      ops[std::size_t(nops++)] = k;
      if (k < nin) ++nin_ops;
    }
  }

  // Strides of every operand over the kept dims and (inputs) the reduced dims.
  Shape kept, red;
  StackVector<Shape, kMaxParams> ks, rs, in_loop;
  for (int j = 0; j < nops; ++j) {
    ks.push_back(Shape{});
    rs.push_back(Shape{});
  }
  for (int j = 0; j < nin_ops; ++j)
    in_loop.push_back(loop_strides(*c.arrays[ops[std::size_t(j)]], c.shape));
  int out_axis = 0;
  for (int d = 0; d < c.shape.size(); ++d) {
    const bool reduced = mask >> d & 1;
    (reduced ? red : kept).push_back(c.shape[d]);
    for (int j = 0; j < nin_ops; ++j)
      (reduced ? rs : ks)[std::size_t(j)].push_back(in_loop[std::size_t(j)][d]);
    if (!reduced) {
      for (int j = nin_ops; j < nops; ++j)
        ks[std::size_t(j)].push_back(c.arrays[ops[std::size_t(j)]]->strides()[out_axis]);
      ++out_axis;
    } else if (keepdims) {
      ++out_axis;
    }
  }
  collapse_group(kept, ks.span());
  collapse_group(red, rs.span().first(std::size_t(nin_ops)));
  plan.m = shape_size(kept);
  plan.n = shape_size(red);
  spec.out_ndim = std::uint8_t(kept.size());
  spec.red_ndim = std::uint8_t(red.size());
  plan.dims = kept;
  for (auto d : red) plan.dims.push_back(d);

  std::int64_t span = 0;
  for (int j = 0; j < nops; ++j) {
    const int k = ops[std::size_t(j)];
    plan.slot[std::size_t(k)] = std::int8_t(j);
    Shape& st = plan.strides.push_back(ks[std::size_t(j)]);
    const auto isz = std::int64_t(c.types[k].itemsize());
    if (j < nin_ops) {
      for (auto s : rs[std::size_t(j)]) st.push_back(s);
      span = std::max(span, codegen::byte_span(plan.dims, st, isz));
    } else {
      span = std::max(span, codegen::byte_span(kept, st, isz));
    }
  }
  for (int k = 0; k < c.nparams; ++k)
    if (spec.kind(k) == OperandKind::raw_array) {
      const ndarray& a = *c.arrays[k];
      span = std::max(span, codegen::byte_span(a.shape(), a.strides(), std::int64_t(a.itemsize())));
    }
  spec.index_bits = std::uint8_t(codegen::choose_index_bits(plan.m * plan.n, span));

  // Inner when every input walks the last reduced dim with unit steps (a row is then runs
  // of contiguous elements: vector loads along them); outer when the first input's last
  // output dim is contiguous, or nearer contiguous than the reduced one (threads then read
  // neighbouring columns); otherwise inner with strided runs.
  bool red_contig = plan.n > 1 && nin_ops > 0;
  for (int j = 0; j < nin_ops; ++j)
    red_contig &=
        rs[std::size_t(j)].back() == std::int64_t(c.types[ops[std::size_t(j)]].itemsize());
  spec.red_contiguous = std::uint8_t(red_contig);
  spec.strategy = ReductionStrategy::inner_block;
  if (!red_contig && nin_ops > 0 && plan.m > 1 && plan.n > 1) {
    const auto isz = std::int64_t(c.types[ops[0]].itemsize());
    const std::int64_t kept_step = std::abs(ks[0].back()), red_step = std::abs(rs[0].back());
    if (kept_step == isz || (kept_step != 0 && kept_step < red_step))
      spec.strategy = ReductionStrategy::outer;
  }
  // Vector loads: every input's addresses along the vector are contiguous and every other
  // step (and the base) keeps whole vectors aligned.
  spec.vector_width = 1;
  const bool outer = spec.strategy == ReductionStrategy::outer;
  if ((red_contig || outer) && nin_ops > 0) {
    std::int64_t widest = 0;
    for (int j = 0; j < nin_ops; ++j)
      widest = std::max<std::int64_t>(widest, c.types[ops[std::size_t(j)]].itemsize());
    const std::int64_t along = outer ? kept.back() : red.back();  // elements a vector walks
    auto fits = [&](int width) {
      if (along % width) return false;
      for (int j = 0; j < nin_ops; ++j) {
        const int k = ops[std::size_t(j)];
        const auto isz = std::int64_t(c.types[k].itemsize());
        const auto bytes = std::uint64_t(width) * std::uint64_t(isz);
        if (reinterpret_cast<std::uintptr_t>(c.arrays[k]->data()) % bytes) return false;
        const Shape& ksj = ks[std::size_t(j)];
        const Shape& rsj = rs[std::size_t(j)];
        for (int d = 0; d < ksj.size(); ++d) {
          if (outer && d == ksj.size() - 1) {
            if (ksj[d] != isz) return false;
          } else if (std::uint64_t(std::abs(ksj[d])) % bytes) {
            return false;
          }
        }
        for (int d = 0; d < rsj.size(); ++d)
          if (!(!outer && d == rsj.size() - 1) && std::uint64_t(std::abs(rsj[d])) % bytes)
            return false;
      }
      return true;
    };
    const int full = widest < 16 ? int(16 / widest) : 1;
    int w = full;
    while (w > 1 && !fits(w)) w /= 2;
    spec.vector_width = std::uint8_t(w);
    // One contiguous run per row that whole vectors do not tile (a length or a row stride off
    // 16 bytes), long enough for a block per row: vectors from each row's first 16-byte
    // boundary, the ends one at a time. argmax over (3602, 18631) float32 read an element per
    // load at 0.51 of the copy rate, peeled 0.66. Shorter rows keep their narrower loads: a
    // warp's lanes then read fewer, wider pieces of more rows (sum over (546688, 123) float64
    // fell from 0.76 to 0.57 peeled).
    const ndarray& in = *c.arrays[ops[0]];
    if (!outer && w < full && red.size() == 1 && nin_ops == 1 && plan.n >= 1024 * full &&
        reinterpret_cast<std::uintptr_t>(in.data()) % std::uintptr_t(widest) == 0) {
      bool whole = true;  // every row starts on an element
      for (auto st : ks[0]) whole &= std::abs(st) % widest == 0;
      if (whole) {
        spec.vector_width = std::uint8_t(full);
        spec.red_contiguous = 2;
      }
    }
    // Runs that whole vectors do not tile and too short to peel (or several per row): aligned
    // 16-byte windows, each element outside the run skipped, where that takes fewer loads
    // than the narrower vectors. Elements of 4 bytes or less: a load of one is what bound
    // them (H100, sum over (0, 1, 3) of (354, 480, 8, 49) float16, runs of 49 elements 98
    // bytes apart: 43.7M instructions, 77.8 us; windowed 21.8M, 65.9 us); 8-byte elements
    // were bound by memory and lost occupancy (sum over (546688, 123) float64: 219 -> 243 us).
    const std::int64_t run = red.back();
    const std::int64_t windows = (run + 2 * full - 2) / full;
    if (!outer && spec.red_contiguous == 1 && w < full && nin_ops == 1 && widest <= 4 &&
        run >= full && windows * w < run &&
        reinterpret_cast<std::uintptr_t>(in.data()) % std::uintptr_t(widest) == 0) {
      bool whole = true;  // every run starts on an element
      for (auto st : ks[0]) whole &= std::abs(st) % widest == 0;
      for (auto st : rs[0]) whole &= std::abs(st) % widest == 0;
      if (whole && granules_inside_buffer(in)) {
        spec.vector_width = std::uint8_t(full);
        spec.red_contiguous = 3;
      }
    }
  }
  if (try_folded(c, ops[0], nin_ops, kept, red, plan, sm_count)) return;
  plan.geometry = codegen::reduction_geometry(spec, plan.m, plan.n, c.options.block_size, sm_count);
}

void pack_reduction(const KernelCall& c, const ReductionPlan& plan, void* ws, void* sem,
                    KernelArgs& args) {
  const auto& spec = plan.spec;
  for (int k = 0; k < c.nparams; ++k) {
    switch (spec.kind(k)) {
      case OperandKind::scalar:
        args.put_value(c.types[k], c.values[std::size_t(k)].data());
        break;
      case OperandKind::raw_array: {
        const ndarray& a = *c.arrays[k];
        args.put_raw_array(a.data(), a.size(), a.shape().data(), a.strides().data(), a.ndim());
        break;
      }
      default: {
        const Shape& st = plan.strides[std::size_t(plan.slot[std::size_t(k)])];
        args.put_strided(c.arrays[k]->data(), st.data(), st.size());
      }
    }
  }
  args.put_index(plan.m);
  args.put_index(plan.n);
  args.put_dims(plan.dims.data(), plan.dims.size());
  if (spec.split) {
    args.put_pointer(ws);
    args.put_pointer(sem);
  }
}

}  // namespace kiln::detail
