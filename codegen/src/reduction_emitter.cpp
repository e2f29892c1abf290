#include "kiln/codegen/reduction_emitter.hpp"

#include <fmt/format.h>

#include "kiln/codegen/device_header.hpp"
#include "kiln_codegen_device_sources.hpp"
#include "source_writer.hpp"

namespace kiln::codegen {
namespace {


constexpr int kUnroll = 4;  // vectors (or elements) loaded per thread before they are reduced

struct Emit {
  SourceWriter& w;
  const ReductionDefinition& def;
  const ReductionSpec& s;

  const Param& param(int k) const { return def.params[std::size_t(k)]; }
  std::string_view ctype(int k) const { return s.param_dtype(k).device_type(); }
  bool is_array(int k) const { return s.kind(k) == OperandKind::array; }
  bool has_identity() const { return !def.identity.empty(); }
  bool inner() const { return s.strategy != ReductionStrategy::outer; }
  int all_ndim() const { return s.out_ndim + s.red_ndim; }

  template <class F>
  void array_inputs(F&& f) const {
    for (int k = 0; k < def.nin; ++k)
      if (is_array(k)) f(k, param(k));
  }
  template <class F>
  void array_operands(F&& f) const {
    for (int k = 0; k < s.nparams; ++k)
      if (is_array(k)) f(k, param(k));
  }

  // ---- signature ----
  void signature() {
    w.line("extern \"C\" __global__ void {}(", def.name);
    for (int k = 0; k < s.nparams; ++k) {
      const Param& p = param(k);
      const bool user_name = s.kind(k) == OperandKind::raw_array || (s.kind(k) == OperandKind::scalar && p.raw);
      w.line("    {} {}{},", abi_type(reduction_arg(s, k, p.is_output)), user_name ? "" : "kiln_p_", p.name);
    }
    w.line("    {} kiln_m,", abi_type(reduction_arg(s, s.nparams)));
    w.line("    {} kiln_n,", abi_type(reduction_arg(s, s.nparams + 1)));
    if (!s.split) {
      w.line("    {} kiln_shape) {{", abi_type(reduction_arg(s, s.nparams + 2)));
    } else {
      w.line("    {} kiln_shape,", abi_type(reduction_arg(s, s.nparams + 2)));
      w.line("    {} kiln_ws_bytes,", abi_type(reduction_arg(s, s.nparams + 3)));
      w.line("    {} kiln_sem) {{", abi_type(reduction_arg(s, s.nparams + 4)));
    }
  }

  // ---- the user's code as lambdas: one copy of each text, one set of #line-mapped errors ----
  void lambdas() {
    std::string params = "const kiln_idx _i, const kiln_idx _J";
    for (int k = 0; k < def.nin; ++k)
      if (!param(k).raw) params += fmt::format(", const {} {}", ctype(k), param(k).name);
    w.line("  auto kiln_map = [&]({}) -> _type_reduce {{", params);
    w.line("    const kiln_idx _j = _i * kiln_n + _J;");
    w.line("    (void)_i; (void)_j; (void)_J;");
    w.line("    return static_cast<_type_reduce>(");
    w.user("map_expr", def.map_expr, "    );");
    w.line("  }};");
    w.line("  auto kiln_reduce = [&](const _type_reduce& a, const _type_reduce& b) -> _type_reduce {{");
    w.line("    return (");
    w.user("reduce_expr", def.reduce_expr, "    );");
    w.line("  }};");
    w.line("  auto kiln_init = [&]() {{");
    w.line("    kiln_acc kiln_r;");
    if (has_identity()) {
      w.line("    kiln_r.v = static_cast<_type_reduce>(");
      w.user("identity", def.identity, "    );");
      w.line("    kiln_r.has = true;");
    } else {
      w.line("    kiln_r.has = false;");
    }
    w.line("    return kiln_r;");
    w.line("  }};");
    w.line("  auto kiln_add = [&](kiln_acc& kiln_x, const _type_reduce& kiln_v) {{");
    if (has_identity()) {
      w.line("    kiln_x.v = kiln_reduce(kiln_x.v, kiln_v);");
    } else {
      w.line("    kiln_x.v = kiln_x.has ? kiln_reduce(kiln_x.v, kiln_v) : kiln_v;");
      w.line("    kiln_x.has = true;");
    }
    w.line("  }};");
    w.line("  auto kiln_combine = [&](kiln_acc& kiln_x, const kiln_acc& kiln_y) {{");
    if (has_identity()) w.line("    kiln_x.v = kiln_reduce(kiln_x.v, kiln_y.v);");
    else w.line("    if (kiln_y.has) kiln_add(kiln_x, kiln_y.v);");
    w.line("  }};");
    std::string outs = "_type_reduce a, const kiln_idx _i";
    for (int k = def.nin; k < s.nparams; ++k)
      if (!param(k).raw) outs += fmt::format(", {}& {}", ctype(k), param(k).name);
    w.line("  auto kiln_post = [&]({}) {{", outs);
    w.line("    (void)a; (void)_i;");
    w.user("post_map_expr", def.post_map_expr, "  ;};");
    w.line("  auto kiln_warp_reduce = [&](kiln_acc kiln_x) {{");
    w.line("#pragma unroll");
    w.line("    for (int kiln_d = 16; kiln_d > 0; kiln_d >>= 1) kiln_combine(kiln_x, kiln_shfl_down(kiln_x, kiln_d));");
    w.line("    return kiln_x;");
    w.line("  }};");
    w.line("  __shared__ __align__(16) unsigned char kiln_smem_raw[32 * sizeof(kiln_acc)];");
    w.line("  kiln_acc* const kiln_smem = reinterpret_cast<kiln_acc*>(kiln_smem_raw);");
    w.line("  auto kiln_block_reduce = [&](kiln_acc kiln_x) {{  // the block's result, in thread 0");
    w.line("    kiln_x = kiln_warp_reduce(kiln_x);");
    w.line("    const int kiln_lane = int(threadIdx.x & 31), kiln_wid = int(threadIdx.x >> 5);");
    w.line("    __syncthreads();");
    w.line("    if (kiln_lane == 0) kiln_smem[kiln_wid] = kiln_x;");
    w.line("    __syncthreads();");
    w.line("    if (kiln_wid == 0) {{");
    w.line("      kiln_x = kiln_lane < int(blockDim.x >> 5) ? kiln_smem[kiln_lane] : kiln_init();");
    w.line("      kiln_x = kiln_warp_reduce(kiln_x);");
    w.line("    }}");
    w.line("    return kiln_x;");
    w.line("  }};");
  }

  // ---- indexing ----
  // kiln_oo_<name>: byte offset of output element `idx` (over the output dims) per array operand.
  void out_offsets(std::string_view ind, std::string_view idx) {
    w.line("{}kiln_uidx kiln_rem = {};", ind, idx);
    array_operands([&](int, const Param& p) { w.line("{}kiln_idx kiln_oo_{} = 0;", ind, p.name); });
    for (int d = s.out_ndim - 1; d > 0; --d) {
      w.line("{}{{ const kiln_uidx kiln_e = kiln_uidx(kiln_shape.kiln_v[{}]);", ind, d);
      w.line("{}  const kiln_idx kiln_c = kiln_idx(kiln_rem % kiln_e); kiln_rem /= kiln_e;", ind);
      array_operands([&](int, const Param& p) {
        w.line("{0}  kiln_oo_{1} += kiln_c * kiln_p_{1}.kiln_s[{2}];", ind, p.name, d);
      });
      w.line("{}}}", ind);
    }
    array_operands([&](int, const Param& p) {
      w.line("{0}kiln_oo_{1} += kiln_idx(kiln_rem) * kiln_p_{1}.kiln_s[0];", ind, p.name);
    });
    if (s.red_contiguous)
      array_inputs([&](int k, const Param& p) {
        w.line("{}const {} * const kiln_row_{} = reinterpret_cast<const {}*>(kiln_p_{}.kiln_p + kiln_oo_{});", ind,
               ctype(k), p.name, ctype(k), p.name, p.name);
      });
  }

  // Adds the map of reduced element `j` of output `row` to `acc`.
  void add_element(std::string_view ind, std::string_view acc, std::string_view row, std::string_view j) {
    if (!s.red_contiguous) {
      if (s.red_ndim == 1) {
        array_inputs([&](int, const Param& p) {
          w.line("{0}const kiln_idx kiln_ro_{1} = kiln_idx({2}) * kiln_p_{1}.kiln_s[{3}];", ind, p.name, j, int(s.out_ndim));
        });
      } else {
        w.line("{}kiln_uidx kiln_rr = {};", ind, j);
        array_inputs([&](int, const Param& p) { w.line("{}kiln_idx kiln_ro_{} = 0;", ind, p.name); });
        for (int d = all_ndim() - 1; d > s.out_ndim; --d) {
          w.line("{}{{ const kiln_uidx kiln_e = kiln_uidx(kiln_shape.kiln_v[{}]);", ind, d);
          w.line("{}  const kiln_idx kiln_c = kiln_idx(kiln_rr % kiln_e); kiln_rr /= kiln_e;", ind);
          array_inputs([&](int, const Param& p) {
            w.line("{0}  kiln_ro_{1} += kiln_c * kiln_p_{1}.kiln_s[{2}];", ind, p.name, d);
          });
          w.line("{}}}", ind);
        }
        array_inputs([&](int, const Param& p) {
          w.line("{0}kiln_ro_{1} += kiln_idx(kiln_rr) * kiln_p_{1}.kiln_s[{2}];", ind, p.name, int(s.out_ndim));
        });
      }
    }
    std::string call = fmt::format("kiln_add({}, kiln_map(kiln_idx({}), kiln_idx({})", acc, row, j);
    for (int k = 0; k < def.nin; ++k) {
      const Param& p = param(k);
      if (p.raw) continue;
      if (s.kind(k) == OperandKind::scalar) call += ", kiln_p_" + p.name;
      else if (s.red_contiguous) call += fmt::format(", kiln_row_{}[{}]", p.name, j);
      else
        call += fmt::format(", *reinterpret_cast<const {}*>(kiln_p_{}.kiln_p + kiln_oo_{} + kiln_ro_{})", ctype(k),
                            p.name, p.name, p.name);
    }
    w.line("{}{}));", ind, call);
  }

  void post_store(std::string_view ind, std::string_view acc, std::string_view row) {
    std::string call = fmt::format("kiln_post({}.v, kiln_idx({})", acc, row);
    for (int k = def.nin; k < s.nparams; ++k) {
      const Param& p = param(k);
      if (!p.raw) call += fmt::format(", *reinterpret_cast<{}*>(kiln_p_{}.kiln_p + kiln_oo_{})", ctype(k), p.name, p.name);
    }
    w.line("{}{});", ind, call);
  }

  // ---- inner strategies: a warp, a block, or several blocks per output row ----
  void inner_loop(std::string_view ind, std::string_view t, std::string_view g) {
    if (s.red_contiguous && s.vector_width > 1) {
      const int vw = s.vector_width;
      w.line("{}const kiln_uidx kiln_nvec = kiln_uidx(kiln_n) / {};", ind, vw);
      w.line("{}for (kiln_uidx kiln_v = {}; kiln_v < kiln_nvec; kiln_v += {} * ({})) {{", ind, t, kUnroll, g);
      array_inputs([&](int k, const Param& p) {
        w.line("{}  {} kiln_r_{}[{}][{}];", ind, ctype(k), p.name, kUnroll, vw);
      });
      w.line("#pragma unroll");
      w.line("{}  for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", ind, kUnroll);
      w.line("{}    const kiln_uidx kiln_q = kiln_v + kiln_u * ({});", ind, g);
      w.line("{}    if (kiln_q < kiln_nvec) {{", ind);
      array_inputs([&](int, const Param& p) {
        w.line("{}      kiln_load<{}>(kiln_r_{}[kiln_u], kiln_row_{} + kiln_q * {});", ind, vw, p.name, p.name, vw);
      });
      w.line("{}    }}", ind);
      w.line("{}  }}", ind);
      w.line("#pragma unroll");
      w.line("{}  for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", ind, kUnroll);
      w.line("{}    const kiln_uidx kiln_q = kiln_v + kiln_u * ({});", ind, g);
      w.line("{}    if (kiln_q < kiln_nvec) {{", ind);
      w.line("#pragma unroll");
      w.line("{}      for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", ind, vw);
      std::string call = "kiln_add(kiln_a, kiln_map(kiln_idx(kiln_row), kiln_idx(kiln_q * " + std::to_string(vw) + " + kiln_k)";
      for (int k = 0; k < def.nin; ++k) {
        const Param& p = param(k);
        if (p.raw) continue;
        call += s.kind(k) == OperandKind::scalar ? ", kiln_p_" + p.name
                                                 : fmt::format(", kiln_r_{}[kiln_u][kiln_k]", p.name);
      }
      w.line("{}        {}));", ind, call);
      w.line("{}      }}", ind);
      w.line("{}    }}", ind);
      w.line("{}  }}", ind);
      w.line("{}}}", ind);
      w.line("{}for (kiln_uidx kiln_j = kiln_nvec * {} + {}; kiln_j < kiln_uidx(kiln_n); kiln_j += {}) {{", ind, vw, t, g);
    } else {
      w.line("#pragma unroll {}", kUnroll);
      w.line("{}for (kiln_uidx kiln_j = {}; kiln_j < kiln_uidx(kiln_n); kiln_j += {}) {{", ind, t, g);
    }
    add_element(std::string(ind) + "  ", "kiln_a", "kiln_row", "kiln_j");
    w.line("{}}}", ind);
  }

  void inner() {
    const char* ind = "    ";
    if (s.strategy == ReductionStrategy::inner_warp) {
      w.line("  const kiln_uidx kiln_rpb = blockDim.x >> 5;");
      w.line("  const kiln_uidx kiln_t = threadIdx.x & 31;");
      w.line("  for (kiln_uidx kiln_row = kiln_uidx(blockIdx.x) * kiln_rpb + (threadIdx.x >> 5); kiln_row < kiln_uidx(kiln_m);");
      w.line("       kiln_row += kiln_uidx(gridDim.x) * kiln_rpb) {{");
      out_offsets(ind, "kiln_row");
      w.line("    kiln_acc kiln_a = kiln_init();");
      inner_loop(ind, "kiln_t", "32");
      w.line("    kiln_a = kiln_warp_reduce(kiln_a);");
      w.line("    if (kiln_t == 0) {{");
      post_store("      ", "kiln_a", "kiln_row");
      w.line("    }}");
      w.line("  }}");
      return;
    }
    if (!s.split) {
      w.line("  for (kiln_uidx kiln_row = blockIdx.x; kiln_row < kiln_uidx(kiln_m); kiln_row += gridDim.x) {{");
      out_offsets(ind, "kiln_row");
      w.line("    kiln_acc kiln_a = kiln_init();");
      inner_loop(ind, "threadIdx.x", "blockDim.x");
      w.line("    kiln_a = kiln_block_reduce(kiln_a);");
      w.line("    if (threadIdx.x == 0) {{");
      post_store("      ", "kiln_a", "kiln_row");
      w.line("    }}");
      w.line("  }}");
      return;
    }
    // Split: the grid is exactly M * S blocks; block b works on part b % S of row b / S.
    w.line("  const kiln_uidx kiln_parts = gridDim.x / kiln_uidx(kiln_m);");
    w.line("  const kiln_uidx kiln_row = blockIdx.x / kiln_parts, kiln_part = blockIdx.x % kiln_parts;");
    w.line("  const kiln_uidx kiln_t = kiln_part * blockDim.x + threadIdx.x, kiln_g = kiln_parts * blockDim.x;");
    w.line("  {{");
    out_offsets(ind, "kiln_row");
    w.line("    kiln_acc kiln_a = kiln_init();");
    inner_loop(ind, "kiln_t", "kiln_g");
    w.line("    kiln_a = kiln_block_reduce(kiln_a);");
    split_finish(ind, "kiln_row * kiln_parts + kiln_part", "kiln_row", "kiln_row * kiln_parts + kiln_q",
                 "kiln_parts", true);
    w.line("  }}");
  }

  // Partials of a split row/column: written, counted, combined by the last block to arrive.
  void split_finish(std::string_view ind, std::string_view slot, std::string_view sem,
                    std::string_view read_slot, std::string_view parts, bool block_result) {
    w.line("{}kiln_acc* const kiln_ws = reinterpret_cast<kiln_acc*>(kiln_ws_bytes);", ind);
    w.line("{}__shared__ bool kiln_last;", ind);
    if (block_result) {
      w.line("{}if (threadIdx.x == 0) {{", ind);
      w.line("{}  kiln_ws[{}] = kiln_a;", ind, slot);
      w.line("{}  __threadfence();", ind);
      w.line("{}  kiln_last = atomicInc(kiln_sem + {}, unsigned({}) - 1u) == unsigned({}) - 1u;", ind, sem, parts, parts);
      w.line("{}}}", ind);
      w.line("{}__syncthreads();", ind);
      w.line("{}if (kiln_last) {{", ind);
      w.line("{}  __threadfence();", ind);
      w.line("{}  kiln_acc kiln_b = kiln_init();", ind);
      w.line("{}  for (kiln_uidx kiln_q = threadIdx.x; kiln_q < {}; kiln_q += blockDim.x)", ind, parts);
      w.line("{}    kiln_combine(kiln_b, kiln_load_cg(kiln_ws + {}));", ind, read_slot);
      w.line("{}  kiln_b = kiln_block_reduce(kiln_b);", ind);
      w.line("{}  if (threadIdx.x == 0) {{", ind);
      post_store(std::string(ind) + "    ", "kiln_b", "kiln_row");
      w.line("{}  }}", ind);
      w.line("{}}}", ind);
    } else {
      w.line("{}if (kiln_col < kiln_uidx(kiln_m)) kiln_ws[{}] = kiln_a;", ind, slot);
      w.line("{}__threadfence();", ind);
      w.line("{}__syncthreads();", ind);
      w.line("{}if (threadIdx.x == 0)", ind);
      w.line("{}  kiln_last = atomicInc(kiln_sem + {}, unsigned({}) - 1u) == unsigned({}) - 1u;", ind, sem, parts, parts);
      w.line("{}__syncthreads();", ind);
      w.line("{}if (kiln_last && kiln_col < kiln_uidx(kiln_m)) {{", ind);
      w.line("{}  __threadfence();", ind);
      w.line("{}  kiln_acc kiln_b = kiln_init();", ind);
      w.line("{}  for (kiln_uidx kiln_q = 0; kiln_q < {}; ++kiln_q)", ind, parts);
      w.line("{}    kiln_combine(kiln_b, kiln_load_cg(kiln_ws + {}));", ind, read_slot);
      post_store(std::string(ind) + "  ", "kiln_b", "kiln_col");
      w.line("{}}}", ind);
    }
  }

  // ---- outer: a thread per output element, threads across contiguous columns ----
  void outer() {
    const char* ind = "  ";
    w.line("  const kiln_uidx kiln_col = kiln_uidx(blockIdx.x) * blockDim.x + threadIdx.x;");
    if (s.split) {
      w.line("  const kiln_uidx kiln_chunk = (kiln_uidx(kiln_n) + gridDim.y - 1) / gridDim.y;");
      w.line("  const kiln_uidx kiln_jb = kiln_uidx(blockIdx.y) * kiln_chunk;");
      w.line("  const kiln_uidx kiln_je = kiln_jb + kiln_chunk < kiln_uidx(kiln_n) ? kiln_jb + kiln_chunk : kiln_uidx(kiln_n);");
    } else {
      w.line("  const kiln_uidx kiln_jb = 0, kiln_je = kiln_uidx(kiln_n);");
    }
    out_offsets(ind, "kiln_col");
    w.line("  kiln_acc kiln_a = kiln_init();");
    w.line("  if (kiln_col < kiln_uidx(kiln_m)) {{");
    w.line("#pragma unroll 8");
    w.line("    for (kiln_uidx kiln_j = kiln_jb; kiln_j < kiln_je; ++kiln_j) {{");
    add_element("      ", "kiln_a", "kiln_col", "kiln_j");
    w.line("    }}");
    if (!s.split) post_store("    ", "kiln_a", "kiln_col");
    w.line("  }}");
    if (s.split)
      split_finish(ind, "kiln_uidx(blockIdx.y) * kiln_uidx(kiln_m) + kiln_col", "blockIdx.x",
                   "kiln_q * kiln_uidx(kiln_m) + kiln_col", "gridDim.y", false);
  }
};

}  // namespace

AbiArg reduction_arg(const ReductionSpec& s, int k, bool is_output) {
  if (k == s.nparams || k == s.nparams + 1) return {.kind = AbiKind::index};
  if (k == s.nparams + 2) return {.kind = AbiKind::dims, .ndim = s.out_ndim + s.red_ndim};
  if (k == s.nparams + 3) return {.kind = AbiKind::pointer, .type = uint8, .writable = true};
  if (k == s.nparams + 4) return {.kind = AbiKind::pointer, .type = uint32, .writable = true};
  const auto& o = s.params[std::size_t(k)];
  const dtype t = s.param_dtype(k);
  switch (s.kind(k)) {
    case OperandKind::scalar: return {.kind = AbiKind::value, .type = t};
    case OperandKind::raw_array:
      return {.kind = AbiKind::raw_array, .type = t, .ndim = o.raw_ndim, .contiguous = o.raw_contiguous != 0};
    default:
      return {.kind = AbiKind::strided, .type = t, .ndim = is_output ? s.out_ndim : s.out_ndim + s.red_ndim};
  }
}

int reduction_arg_count(const ReductionSpec& s) { return s.nparams + (s.split ? 5 : 3); }

std::string emit_reduction(const ReductionDefinition& def, const ReductionSpec& s) {
  SourceWriter w(def.name + ".cu");
  // The user's code may name a type no parameter has (a fused expression's float16 map).
  emit_prologue(w, def, s,
                {def.map_expr, def.reduce_expr, def.post_map_expr, def.reduce_type, def.preamble},
                device_source("kiln_reduction"));
  if (def.reduce_type.empty()) w.line("typedef {} _type_reduce;", s.param_dtype(def.nin).device_type());
  else w.line("typedef {} _type_reduce;", def.reduce_type);
  // `has` is false only for a partial that saw no element of a reduction with no identity.
  w.line("struct __align__(8) kiln_acc {{ _type_reduce v; bool has; }};");
  if (s.split) w.line("__device__ unsigned char {}[sizeof(kiln_acc)];", reduction_partial_global);
  Emit e{w, def, s};
  e.signature();
  w.line("  kiln_grid_dependency_wait();");  // see kiln_core.cuh
  w.line("  const kiln_loop_index<kiln_idx> _in_ind{{kiln_idx(kiln_m * kiln_n), 0}}, _out_ind{{kiln_m, 0}};");
  w.line("  (void)_in_ind; (void)_out_ind;");
  e.lambdas();
  if (s.strategy == ReductionStrategy::outer) e.outer();
  else e.inner();
  w.line("}}");
  return w.take();
}

}  // namespace kiln::codegen
