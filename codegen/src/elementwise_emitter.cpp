#include "kiln/codegen/elementwise_emitter.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kiln/codegen/device_header.hpp"
#include "kiln/codegen/kernel_abi.hpp"
#include "kiln/codegen/operation_analysis.hpp"
#include "source_writer.hpp"

namespace kiln::codegen {
namespace {

std::string_view ctype(const ElementwiseSpec& s, int k) { return s.param_dtype(k).device_type(); }

std::string other_user_code(const ElementwiseDefinition& def) {
  return def.preamble + "\n" + def.loop_prep + "\n" + def.after_loop + "\n" +
         def.macros.lines;
}

// ---- kernel signature ----

std::string kernel_param(const ElementwiseDefinition& def, const ElementwiseSpec& s, int k) {
  const Param& p = def.params[std::size_t(k)];
  // Raw parameters keep the user's name (x.size(), x[i]); loop operands are read through
  // kiln_p_<name> and reach the operation as its element.
  const bool user_name = s.kind(k) == OperandKind::raw_array || (s.kind(k) == OperandKind::scalar && p.raw);
  return fmt::format("{} {}{}", abi_type(elementwise_arg(s, k, p.is_output)), user_name ? "" : "kiln_p_", p.name);
}

bool is_loop_operand(const ElementwiseSpec& s, const Param& p, int k) {
  return !p.raw && (s.kind(k) == OperandKind::array || s.kind(k) == OperandKind::uniform ||
                    s.kind(k) == OperandKind::scalar);
}

void emit_signature(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  w.line("extern \"C\" __global__ void {}(", def.name);
  for (int k = 0; k < s.nparams; ++k) w.line("    {},", kernel_param(def, s, k));
  const bool shaped = s.layout != Layout::contiguous;
  w.line("    {} kiln_n{}", abi_type(elementwise_arg(s, s.nparams)), shaped ? "," : ") {");
  if (shaped) w.line("    {} kiln_shape) {{", abi_type(elementwise_arg(s, s.nparams + 1)));
}

// The user's operation as a lambda: one copy of the text (one set of #line-mapped errors)
// serves the vector loop, the tail and the strided loop. Inputs by value, outputs by
// reference, as CuPy binds them.
void emit_body_lambda(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  std::string params = "const kiln_loop_index<kiln_idx> _ind, const kiln_idx i";
  for (int k = 0; k < s.nparams; ++k) {
    const Param& p = def.params[std::size_t(k)];
    if (!is_loop_operand(s, p, k)) continue;
    params += p.is_output ? fmt::format(", {}& {}", ctype(s, k), p.name)
                          : fmt::format(", const {} {}", ctype(s, k), p.name);
  }
  w.line("  auto kiln_body = [&]({}) {{", params);
  w.line("    (void)_ind; (void)i;");
  w.user("operation", def.operation, "  ;};");
}

// Arguments of one kiln_body call; `element(k)` spells parameter k's element.
template <class F>
std::string body_call(const ElementwiseDefinition& def, const ElementwiseSpec& s, std::string_view index,
                      F&& element) {
  std::string call = fmt::format("kiln_body(kiln_loop_index<kiln_idx>{{kiln_n, {0}}}, {0}", index);
  for (int k = 0; k < s.nparams; ++k) {
    const Param& p = def.params[std::size_t(k)];
    if (!is_loop_operand(s, p, k)) continue;
    if (s.kind(k) == OperandKind::scalar) call += ", kiln_p_" + p.name;
    else if (s.kind(k) == OperandKind::uniform) call += ", kiln_u_" + p.name;
    else call += ", " + element(k, p);
  }
  return call + ");";
}

void emit_uniform_loads(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  for (int k = 0; k < s.nparams; ++k)
    if (s.kind(k) == OperandKind::uniform && !def.params[std::size_t(k)].raw)
      w.line("  const {0} kiln_u_{1} = *kiln_p_{1};", ctype(s, k), def.params[std::size_t(k)].name);
}

// ---- contiguous loops ----

void emit_vector_loop(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  const int vw = s.vector_width, u = s.unroll;
  auto arrays = [&](auto&& f) {
    for (int k = 0; k < s.nparams; ++k)
      if (s.kind(k) == OperandKind::array && !def.params[std::size_t(k)].raw)
        f(k, def.params[std::size_t(k)]);
  };
  w.line("  const kiln_uidx kiln_nvec = kiln_uidx(kiln_n) / {};", vw);
  w.line("  for (kiln_uidx kiln_v = kiln_tid; kiln_v < kiln_nvec; kiln_v += {} * kiln_nthreads) {{", u);
  arrays([&](int k, const Param& p) { w.line("    {} kiln_r_{}[{}][{}];", ctype(s, k), p.name, u, vw); });
  w.line("#pragma unroll");
  w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("      const kiln_uidx kiln_w = kiln_v + kiln_u * kiln_nthreads;");
  w.line("      if (kiln_w < kiln_nvec) {{");
  arrays([&](int k, const Param& p) {
    if (!p.is_output || output_needs_load(def, k - def.nin))
      w.line("        kiln_load<{0}>(kiln_r_{1}[kiln_u], kiln_p_{1} + kiln_w * {0});", vw, p.name);
  });
  w.line("      }}");
  w.line("    }}");
  w.line("#pragma unroll");
  w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("      const kiln_uidx kiln_w = kiln_v + kiln_u * kiln_nthreads;");
  w.line("      if (kiln_w < kiln_nvec) {{");
  w.line("#pragma unroll");
  w.line("        for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", vw);
  w.line("          const kiln_idx kiln_i = kiln_idx(kiln_w * {} + kiln_k);", vw);
  w.line("          {}", body_call(def, s, "kiln_i", [](int, const Param& p) {
           return fmt::format("kiln_r_{}[kiln_u][kiln_k]", p.name);
         }));
  w.line("        }}");
  arrays([&](int, const Param& p) {
    if (p.is_output) w.line("        kiln_store<{0}>(kiln_p_{1} + kiln_w * {0}, kiln_r_{1}[kiln_u]);", vw, p.name);
  });
  w.line("      }}");
  w.line("    }}");
  w.line("  }}");
}

void emit_contiguous(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  std::string first = "kiln_tid";
  if (s.vector_width > 1) {
    emit_vector_loop(w, def, s);
    first = fmt::format("kiln_nvec * {} + kiln_tid", int(s.vector_width));
  }
  w.line("  for (kiln_uidx kiln_j = {}; kiln_j < kiln_uidx(kiln_n); kiln_j += kiln_nthreads) {{", first);
  w.line("    const kiln_idx kiln_i = kiln_idx(kiln_j);");
  w.line("    {}", body_call(def, s, "kiln_i", [](int, const Param& p) {
           return fmt::format("kiln_p_{}[kiln_i]", p.name);
         }));
  w.line("  }}");
}

// ---- strided loop ----

void emit_strided(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  std::vector<const Param*> arrays;
  std::vector<int> index;
  for (int k = 0; k < s.nparams; ++k)
    if (s.kind(k) == OperandKind::array && !def.params[std::size_t(k)].raw) {
      arrays.push_back(&def.params[std::size_t(k)]);
      index.push_back(k);
    }
  w.line("  for (kiln_uidx kiln_j = kiln_tid; kiln_j < kiln_uidx(kiln_n); kiln_j += kiln_nthreads) {{");
  w.line("    kiln_uidx kiln_rem = kiln_j;");
  for (auto* p : arrays) w.line("    kiln_idx kiln_o_{} = 0;", p->name);
  w.line("#pragma unroll");
  w.line("    for (int kiln_d = {} - 1; kiln_d > 0; --kiln_d) {{", int(s.ndim));
  w.line("      const kiln_uidx kiln_e = kiln_uidx(kiln_shape.kiln_v[kiln_d]);");
  w.line("      const kiln_idx kiln_c = kiln_idx(kiln_rem % kiln_e);");
  w.line("      kiln_rem /= kiln_e;");
  for (auto* p : arrays) w.line("      kiln_o_{0} += kiln_c * kiln_p_{0}.kiln_s[kiln_d];", p->name);
  w.line("    }}");
  for (auto* p : arrays) w.line("    kiln_o_{0} += kiln_idx(kiln_rem) * kiln_p_{0}.kiln_s[0];", p->name);
  w.line("    const kiln_idx kiln_i = kiln_idx(kiln_j);");
  w.line("    {}", body_call(def, s, "kiln_i", [&](int k, const Param& p) {
           return fmt::format("*reinterpret_cast<{}{}*>(kiln_p_{}.kiln_p + kiln_o_{})",
                              p.is_output ? "" : "const ", ctype(s, k), p.name, p.name);
         }));
  w.line("  }}");
}

// ---- tiled loop ----

// A 32x32 tile of the (rows, cols) loop per block of 32x8 threads, each thread 4 rows. The
// operation always runs at (row ty + 8k, col tx), so operands contiguous along cols are read
// and written directly in full lines; staged operands (contiguous along rows) are moved
// between memory and a padded shared tile by threads running down the rows (tx is the row),
// so their accesses are full lines too and the shared reads are free of bank conflicts.
void emit_tiled(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  struct Operand {
    const Param* p;
    int k;
    bool staged, load;
  };
  std::vector<Operand> ops;
  bool staged_in = false, staged_out = false;
  for (int k = 0; k < s.nparams; ++k) {
    const Param& p = def.params[std::size_t(k)];
    if (s.kind(k) != OperandKind::array || p.raw) continue;
    const bool load = !p.is_output || output_needs_load(def, k - def.nin);
    ops.push_back({&p, k, s.staged(k), load});
    staged_in |= s.staged(k) && load;
    staged_out |= s.staged(k) && p.is_output;
  }
  auto at = [&](const Operand& o, std::string_view r, std::string_view c) {
    return fmt::format("*reinterpret_cast<{0}{1}*>(kiln_p_{2}.kiln_p + {3} * kiln_p_{2}.kiln_s[0] + {4} * kiln_p_{2}.kiln_s[1])",
                       o.p->is_output ? "" : "const ", ctype(s, o.k), o.p->name, r, c);
  };
  for (const auto& o : ops)
    if (o.staged) {
      // Raw storage: a __shared__ array of a class type (complex) may not be constructed.
      w.line("  __shared__ __align__(16) unsigned char kiln_sm_{}[32 * 33 * sizeof({})];", o.p->name, ctype(s, o.k));
      w.line("  {0} (*const kiln_t_{1})[33] = reinterpret_cast<{0} (*)[33]>(kiln_sm_{1});", ctype(s, o.k), o.p->name);
    }
  w.line("  const kiln_idx kiln_rows = kiln_shape.kiln_v[0], kiln_cols = kiln_shape.kiln_v[1];");
  w.line("  const int kiln_tx = int(threadIdx.x), kiln_ty = int(threadIdx.y);");
  w.line("  const kiln_idx kiln_c0 = kiln_idx(blockIdx.x) * 32;");
  w.line("  const kiln_uidx kiln_tiles = (kiln_uidx(kiln_rows) + 31) / 32;");
  // grid.y stops at 65535 tiles: blocks loop over the rest.
  w.line("  for (kiln_uidx kiln_tr = blockIdx.y; kiln_tr < kiln_tiles; kiln_tr += gridDim.y) {{");
  w.line("    const kiln_idx kiln_r0 = kiln_idx(kiln_tr) * 32;");
  if (staged_in || staged_out) w.line("    if (kiln_tr != blockIdx.y) __syncthreads();  // the last tile's shared reads are done");
  for (const auto& o : ops) w.line("    {} kiln_r_{}[4];", ctype(s, o.k), o.p->name);
  // Staged loads: tx runs down the rows.
  if (staged_in) {
    w.line("#pragma unroll");
    w.line("    for (int kiln_k = 0; kiln_k < 4; ++kiln_k) {{");
    w.line("      const kiln_idx kiln_r = kiln_r0 + kiln_tx, kiln_c = kiln_c0 + kiln_ty + 8 * kiln_k;");
    w.line("      if (kiln_r < kiln_rows && kiln_c < kiln_cols) {{");
    for (const auto& o : ops)
      if (o.staged && o.load) w.line("        kiln_t_{}[kiln_ty + 8 * kiln_k][kiln_tx] = {};", o.p->name, at(o, "kiln_r", "kiln_c"));
    w.line("      }}");
    w.line("    }}");
  }
  // Direct loads, all issued before any store (an output may be an input).
  w.line("#pragma unroll");
  w.line("    for (int kiln_k = 0; kiln_k < 4; ++kiln_k) {{");
  w.line("      const kiln_idx kiln_r = kiln_r0 + kiln_ty + 8 * kiln_k, kiln_c = kiln_c0 + kiln_tx;");
  w.line("      if (kiln_r < kiln_rows && kiln_c < kiln_cols) {{");
  for (const auto& o : ops)
    if (!o.staged && o.load) w.line("        kiln_r_{}[kiln_k] = {};", o.p->name, at(o, "kiln_r", "kiln_c"));
  w.line("      }}");
  w.line("    }}");
  if (staged_in) w.line("    __syncthreads();");
  w.line("#pragma unroll");
  w.line("    for (int kiln_k = 0; kiln_k < 4; ++kiln_k) {{");
  w.line("      const kiln_idx kiln_r = kiln_r0 + kiln_ty + 8 * kiln_k, kiln_c = kiln_c0 + kiln_tx;");
  w.line("      if (kiln_r < kiln_rows && kiln_c < kiln_cols) {{");
  for (const auto& o : ops)
    if (o.staged && o.load) w.line("        kiln_r_{0}[kiln_k] = kiln_t_{0}[kiln_tx][kiln_ty + 8 * kiln_k];", o.p->name);
  w.line("        const kiln_idx kiln_i = kiln_r * kiln_cols + kiln_c;");
  w.line("        {}", body_call(def, s, "kiln_i", [](int, const Param& p) {
           return fmt::format("kiln_r_{}[kiln_k]", p.name);
         }));
  for (const auto& o : ops)
    if (o.p->is_output) {
      if (o.staged) w.line("        kiln_t_{0}[kiln_tx][kiln_ty + 8 * kiln_k] = kiln_r_{0}[kiln_k];", o.p->name);
      else w.line("        {} = kiln_r_{}[kiln_k];", at(o, "kiln_r", "kiln_c"), o.p->name);
    }
  w.line("      }}");
  w.line("    }}");
  if (staged_out) {
    // Staged stores: tx runs down the rows again.
    w.line("    __syncthreads();");
    w.line("#pragma unroll");
    w.line("    for (int kiln_k = 0; kiln_k < 4; ++kiln_k) {{");
    w.line("      const kiln_idx kiln_r = kiln_r0 + kiln_tx, kiln_c = kiln_c0 + kiln_ty + 8 * kiln_k;");
    w.line("      if (kiln_r < kiln_rows && kiln_c < kiln_cols) {{");
    for (const auto& o : ops)
      if (o.staged && o.p->is_output) w.line("        {} = kiln_t_{}[kiln_ty + 8 * kiln_k][kiln_tx];", at(o, "kiln_r", "kiln_c"), o.p->name);
    w.line("      }}");
    w.line("    }}");
  }
  w.line("  }}");
}

}  // namespace

std::size_t tiled_shared_bytes(const ElementwiseSpec& s) {
  std::size_t bytes = 0;
  for (int k = 0; k < s.nparams; ++k)
    if (s.kind(k) == OperandKind::array && s.staged(k)) bytes += 32 * 33 * s.param_dtype(k).itemsize();
  return bytes;
}

bool output_needs_load(const ElementwiseDefinition& def, int k) {
  return !writes_before_reading(def.operation, def.output(k).name, other_user_code(def));
}

AbiArg elementwise_arg(const ElementwiseSpec& s, int k, bool is_output) {
  if (k == s.nparams) return {.kind = AbiKind::index};
  if (k == s.nparams + 1) return {.kind = AbiKind::dims, .ndim = s.ndim};
  const auto& o = s.params[std::size_t(k)];
  const dtype t = s.param_dtype(k);
  switch (s.kind(k)) {
    case OperandKind::scalar: return {.kind = AbiKind::value, .type = t};
    case OperandKind::uniform: return {.kind = AbiKind::pointer, .type = t};
    case OperandKind::raw_array:
      return {.kind = AbiKind::raw_array, .type = t, .ndim = o.raw_ndim, .contiguous = o.raw_contiguous != 0};
    case OperandKind::array:
    default:
      if (s.layout != Layout::contiguous) return {.kind = AbiKind::strided, .type = t, .ndim = s.ndim};
      return {.kind = AbiKind::pointer, .type = t, .writable = is_output};
  }
}

int elementwise_arg_count(const ElementwiseSpec& s) {
  return s.nparams + (s.layout == Layout::contiguous ? 1 : 2);
}

std::string emit_elementwise(const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  SourceWriter w(def.name + ".cu");
  emit_prologue(w, def, s, {def.operation, def.preamble, def.loop_prep, def.after_loop});
  emit_signature(w, def, s);
  w.line("  kiln_grid_dependency_wait();");  // before anything reads memory (loop_prep too)
  w.line("  const kiln_loop_index<kiln_idx> _ind{{kiln_n, 0}};");
  w.line("  (void)_ind;");
  w.user("loop_prep", def.loop_prep);
  emit_body_lambda(w, def, s);
  emit_uniform_loads(w, def, s);
  if (s.layout == Layout::tiled) {
    emit_tiled(w, def, s);
  } else {
    w.line("  const kiln_uidx kiln_tid = kiln_uidx(blockIdx.x) * blockDim.x + threadIdx.x;");
    w.line("  const kiln_uidx kiln_nthreads = kiln_uidx(gridDim.x) * blockDim.x;");
    if (s.layout == Layout::strided) emit_strided(w, def, s);
    else emit_contiguous(w, def, s);
  }
  w.user("after_loop", def.after_loop);
  w.line("}}");
  return w.take();
}

}  // namespace kiln::codegen
