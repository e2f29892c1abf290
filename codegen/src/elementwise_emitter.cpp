#include "kiln/codegen/elementwise_emitter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "kiln/codegen/device_header.hpp"
#include "kiln/codegen/kernel_abi.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln/codegen/operation_analysis.hpp"
#include "source_writer.hpp"

namespace kiln::codegen {
namespace {

std::string_view ctype(const ElementwiseSpec& s, int k) { return s.param_dtype(k).device_type(); }

std::string other_user_code(const ElementwiseDefinition& def) {
  return def.preamble + "\n" + def.loop_prep + "\n" + def.after_loop + "\n" + def.macros.lines;
}

// ---- kernel signature ----

std::string kernel_param(const ElementwiseDefinition& def, const ElementwiseSpec& s, int k) {
  const Param& p = def.params[std::size_t(k)];
  // Raw parameters keep the user's name (x.size(), x[i]); loop operands are read through
  // kiln_p_<name> and reach the operation as its element.
  const bool user_name =
      s.kind(k) == OperandKind::raw_array || (s.kind(k) == OperandKind::scalar && p.raw);
  return fmt::format("{} {}{}", abi_type(elementwise_arg(s, k, p.is_output)),
                     user_name ? "" : "kiln_p_", p.name);
}

bool is_loop_operand(const ElementwiseSpec& s, const Param& p, int k) {
  return !p.raw && (s.kind(k) == OperandKind::array || s.kind(k) == OperandKind::uniform ||
                    s.kind(k) == OperandKind::scalar);
}

void emit_signature(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  if (s.layout == Layout::packed)
    // Unbounded, a packed kernel of two staged float32 inputs took 106 registers (2 blocks an
    // SM); bounded to 4 blocks it takes 64 with no spill (float64: 3 blocks, 80).
    w.line("extern \"C\" __global__ void __launch_bounds__({}, {}) {}(", kTiledThreads,
           s.widest_array_item() <= 4 ? 4 : 3, def.name);
  else
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
std::string body_call(const ElementwiseDefinition& def, const ElementwiseSpec& s,
                      std::string_view index, F&& element) {
  std::string call = fmt::format("kiln_body(kiln_loop_index<kiln_idx>{{kiln_n, {0}}}, {0}", index);
  for (int k = 0; k < s.nparams; ++k) {
    const Param& p = def.params[std::size_t(k)];
    if (!is_loop_operand(s, p, k)) continue;
    if (s.kind(k) == OperandKind::scalar)
      call += ", kiln_p_" + p.name;
    else if (s.kind(k) == OperandKind::uniform)
      call += ", kiln_u_" + p.name;
    else
      call += ", " + element(k, p);
  }
  return call + ");";
}

void emit_uniform_loads(SourceWriter& w, const ElementwiseDefinition& def,
                        const ElementwiseSpec& s) {
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
  w.line("  for (kiln_uidx kiln_v = kiln_tid; kiln_v < kiln_nvec; kiln_v += {} * kiln_nthreads) {{",
         u);
  arrays([&](int k, const Param& p) {
    w.line("    {} kiln_r_{}[{}][{}];", ctype(s, k), p.name, u, vw);
  });
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
    if (p.is_output)
      w.line("        kiln_store<{0}>(kiln_p_{1} + kiln_w * {0}, kiln_r_{1}[kiln_u]);", vw, p.name);
  });
  w.line("      }}");
  w.line("    }}");
  w.line("  }}");
}

void emit_contiguous(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  std::string first = "kiln_tid";
  if (contiguous_vector_loop(s)) {
    emit_vector_loop(w, def, s);
    first = fmt::format("kiln_nvec * {} + kiln_tid", int(s.vector_width));
  }
  w.line("  for (kiln_uidx kiln_j = {}; kiln_j < kiln_uidx(kiln_n); kiln_j += kiln_nthreads) {{",
         first);
  w.line("    const kiln_idx kiln_i = kiln_idx(kiln_j);");
  w.line("    {}", body_call(def, s, "kiln_i", [](int, const Param& p) {
           return fmt::format("kiln_p_{}[kiln_i]", p.name);
         }));
  w.line("  }}");
}

// ---- strided loop ----

struct LoopOperand {
  const Param* p;
  int k;
  bool load;  // read before the operation (inputs; outputs the operation may read)
};

std::vector<LoopOperand> loop_arrays(const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  std::vector<LoopOperand> out;
  for (int k = 0; k < s.nparams; ++k) {
    const Param& p = def.params[std::size_t(k)];
    if (s.kind(k) != OperandKind::array || p.raw) continue;
    out.push_back({&p, k, !p.is_output || output_needs_load(def, k - def.nin)});
  }
  return out;
}

// Adds coordinate `c` of axis `d` to every operand's byte offset and to the flat index.
// `scale` multiplies the coordinate (the vector width on the last axis of a strided loop).
void emit_offsets(SourceWriter& w, const std::vector<LoopOperand>& ops, std::string_view indent,
                  std::string_view c, std::string_view d, std::string_view slot, int scale) {
  const std::string cs = scale == 1 ? std::string(c) : fmt::format("{} * {}", c, scale);
  for (const auto& o : ops)
    w.line("{0}kiln_o_{1}{2} += ({3}) * kiln_p_{1}.kiln_s[{4}];", indent, o.p->name, slot, cs, d);
  w.line("{0}kiln_i{1} += ({2}) * kiln_shape.kiln_e[{3}];", indent, slot, cs, d);
}

// A thread takes `unroll` vectors of `vector_width` elements along the last axis, spaced by
// the grid (consecutive threads, consecutive vectors: coalesced), unravels each with the
// precomputed divisors (kiln_shape.kiln_d[last] counts vectors), loads every operand of every
// vector, runs the operation, then stores. Each operand's access follows its last-axis stride,
// read once before the loop (uniform across the grid, so the branches never diverge).
void emit_strided(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  const int vw = s.vector_width, u = s.unroll, nd = s.ndim;
  const auto ops = loop_arrays(def, s);
  if (vw > 1)
    for (const auto& o : ops)
      w.line("  const kiln_idx kiln_is_{0} = kiln_p_{0}.kiln_s[{1}];", o.p->name, nd - 1);
  w.line("  const kiln_uidx kiln_items = kiln_uidx(kiln_n) / {};", vw);
  w.line(
      "  for (kiln_uidx kiln_v = kiln_tid; kiln_v < kiln_items; kiln_v += {} * kiln_nthreads) {{",
      u);
  for (const auto& o : ops) {
    w.line("    kiln_idx kiln_o_{}[{}];", o.p->name, u);
    w.line("    {} kiln_r_{}[{}][{}];", ctype(s, o.k), o.p->name, u, vw);
  }
  w.line("    kiln_idx kiln_i[{}];", u);
  // Unravel: out-of-range slots unravel item 0 (their offsets stay in bounds; they are skipped).
  w.line("#pragma unroll");
  w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("      const kiln_uidx kiln_t = kiln_v + kiln_u * kiln_nthreads;");
  w.line("      kiln_uidx kiln_rem = kiln_t < kiln_items ? kiln_t : 0;");
  for (const auto& o : ops) w.line("      kiln_o_{}[kiln_u] = 0;", o.p->name);
  w.line("      kiln_i[kiln_u] = 0;");
  if (nd > 1) {
    w.line("#pragma unroll");
    w.line("      for (int kiln_d = {}; kiln_d > 0; --kiln_d) {{", nd - 1);
    w.line(
        "        const kiln_uidx kiln_q = kiln_fastdiv(kiln_rem, kiln_shape.kiln_m[kiln_d], "
        "kiln_shape.kiln_s[kiln_d]);");
    w.line(
        "        const kiln_idx kiln_c = kiln_idx(kiln_rem - kiln_q * "
        "kiln_uidx(kiln_shape.kiln_d[kiln_d]));");
    w.line("        kiln_rem = kiln_q;");
    w.line("        const kiln_idx kiln_cs = kiln_d == {} ? kiln_c * {} : kiln_c;", nd - 1, vw);
    emit_offsets(w, ops, "        ", "kiln_cs", "kiln_d", "[kiln_u]", 1);
    w.line("      }}");
    emit_offsets(w, ops, "      ", "kiln_idx(kiln_rem)", "0", "[kiln_u]", 1);
  } else {
    emit_offsets(w, ops, "      ", "kiln_idx(kiln_rem)", "0", "[kiln_u]", vw);
  }
  w.line("    }}");
  auto elem = [&](const LoopOperand& o, std::string_view extra) {
    return fmt::format("*reinterpret_cast<{}{}*>(kiln_p_{}.kiln_p + kiln_o_{}[kiln_u]{})",
                       o.p->is_output ? "" : "const ", ctype(s, o.k), o.p->name, o.p->name, extra);
  };
  auto vec_ptr = [&](const LoopOperand& o, std::string_view back) {
    return fmt::format("reinterpret_cast<{}{}*>(kiln_p_{}.kiln_p + kiln_o_{}[kiln_u]){}",
                       o.p->is_output ? "" : "const ", ctype(s, o.k), o.p->name, o.p->name, back);
  };
  // Loads, all issued before the operation.
  w.line("#pragma unroll");
  w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("      if (kiln_v + kiln_u * kiln_nthreads < kiln_items) {{");
  for (const auto& o : ops) {
    if (!o.load) continue;
    const auto& n = o.p->name;
    const auto t = ctype(s, o.k);
    if (vw == 1) {
      w.line("        kiln_r_{}[kiln_u][0] = {};", n, elem(o, ""));
      continue;
    }
    w.line("        if (kiln_is_{} == kiln_idx(sizeof({}))) {{", n, t);
    w.line("          kiln_load<{}>(kiln_r_{}[kiln_u], {});", vw, n, vec_ptr(o, ""));
    w.line("        }} else if (kiln_is_{} == -kiln_idx(sizeof({}))) {{", n, t);
    w.line("          {} kiln_tmp[{}];", t, vw);
    w.line("          kiln_load<{}>(kiln_tmp, {});", vw, vec_ptr(o, fmt::format(" - {}", vw - 1)));
    w.line("#pragma unroll");
    w.line(
        "          for (int kiln_k = 0; kiln_k < {0}; ++kiln_k) kiln_r_{1}[kiln_u][kiln_k] = "
        "kiln_tmp[{2} - kiln_k];",
        vw, n, vw - 1);
    w.line("        }} else if (kiln_is_{} == 0) {{", n);
    w.line("          const {} kiln_one = {};", t, elem(o, ""));
    w.line("#pragma unroll");
    w.line(
        "          for (int kiln_k = 0; kiln_k < {0}; ++kiln_k) kiln_r_{1}[kiln_u][kiln_k] = "
        "kiln_one;",
        vw, n);
    w.line("        }} else {{");
    w.line("#pragma unroll");
    w.line(
        "          for (int kiln_k = 0; kiln_k < {0}; ++kiln_k) kiln_r_{1}[kiln_u][kiln_k] = {2};",
        vw, n, elem(o, fmt::format(" + kiln_k * kiln_is_{}", n)));
    w.line("        }}");
  }
  w.line("      }}");
  w.line("    }}");
  // The operation, then the stores.
  w.line("#pragma unroll");
  w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("      if (kiln_v + kiln_u * kiln_nthreads < kiln_items) {{");
  w.line("#pragma unroll");
  w.line("        for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", vw);
  w.line("          const kiln_idx kiln_j = kiln_i[kiln_u] + kiln_k * kiln_shape.kiln_e[{}];",
         nd - 1);
  w.line("          {}", body_call(def, s, "kiln_j", [](int, const Param& p) {
           return fmt::format("kiln_r_{}[kiln_u][kiln_k]", p.name);
         }));
  w.line("        }}");
  for (const auto& o : ops) {
    if (!o.p->is_output) continue;
    const auto& n = o.p->name;
    const auto t = ctype(s, o.k);
    if (vw == 1) {
      w.line("        {} = kiln_r_{}[kiln_u][0];", elem(o, ""), n);
      continue;
    }
    w.line("        if (kiln_is_{} == kiln_idx(sizeof({}))) {{", n, t);
    w.line("          kiln_store<{}>({}, kiln_r_{}[kiln_u]);", vw, vec_ptr(o, ""), n);
    w.line("        }} else if (kiln_is_{} == -kiln_idx(sizeof({}))) {{", n, t);
    w.line("          {} kiln_tmp[{}];", t, vw);
    w.line("#pragma unroll");
    w.line(
        "          for (int kiln_k = 0; kiln_k < {0}; ++kiln_k) kiln_tmp[{2} - kiln_k] = "
        "kiln_r_{1}[kiln_u][kiln_k];",
        vw, n, vw - 1);
    w.line("          kiln_store<{}>({}, kiln_tmp);", vw, vec_ptr(o, fmt::format(" - {}", vw - 1)));
    w.line("        }} else {{");
    w.line("#pragma unroll");
    w.line(
        "          for (int kiln_k = 0; kiln_k < {0}; ++kiln_k) {2} = kiln_r_{1}[kiln_u][kiln_k];",
        vw, n, elem(o, fmt::format(" + kiln_k * kiln_is_{}", n)));
    w.line("        }}");
  }
  w.line("      }}");
  w.line("    }}");
  w.line("  }}");
}

// ---- gathered loop ----

// Outputs C-contiguous over the loop, inputs anywhere (broadcasts along short or unaligned
// last axes, steps, reversals): a thread takes `unroll` vectors of `vector_width` elements of
// the flat loop, spaced by the grid (coalesced stores), unravels each vector's first element
// once with the precomputed divisors, then walks the vector in groups of unit_cols elements
// (groups never cross a row: the last axis holds whole groups), adding each input's step per
// group and wrapping into the next row with a precomputed step at a group's start (a full
// unravel only where a vector leaves a plane of the last two axes, which the planner keeps
// rare). A last axis of whole vectors (one group) has no wrap to test. `staged` inputs (unit
// steps along the rows, aligned for a group: the planner checks) read each group in one load;
// inputs constant along the rows (staged 2: stride 0 along the last axis) read one element
// per row a vector touches; inputs laid out as the outputs (staged 3: C-contiguous and aligned
// like them) load whole vectors where the outputs store theirs, whatever the rows hold (float32
// x - mean over (0, 2, 3) with rows of 17925: x was read element by element); the others
// element by element. Single elements spread over a warp's
// 16-byte vectors cost the L1 four times the wavefronts of vector loads: float32 (64, 1, 2176)
// broadcast into (64, 480, 2176) ran at 0.65 of the copy rate with the L1 96% busy (ncu, H200),
// 0.88 with vector loads. Choosing the load per input at run time instead (one branch, the same in
// every thread) took 40 registers where either kind alone takes 32, and lost more occupancy than it
// saved (0.56). Every output moves as one vector; the elements past the last whole vector run
// one per thread.
void emit_gathered(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  const int vw = s.vector_width, u = s.unroll, nd = s.ndim, last = nd - 1;
  const int g = s.unit_cols(), groups = vw / g;
  const auto ops = loop_arrays(def, s);
  // Inputs gathered by strides, and inputs laid out as the outputs (read where they are
  // written, so they keep no offsets).
  std::vector<LoopOperand> ins, flat;
  for (const auto& o : ops)
    if (!o.p->is_output) (s.as_output(o.k) ? flat : ins).push_back(o);
  // A vector may cross into the next row, at a group's start; once at most where rows hold a
  // vector or more.
  const bool wraps = nd > 1 && groups > 1;
  const bool one_crossing = wraps && s.gathered_long_rows();
  // Inputs read by whole groups; inputs constant along the rows (staged 2: a column, a
  // per-channel vector) read once per row; the others step element by element.
  auto vector_read = [&](const LoopOperand& o) {
    return g > 1 && s.params[std::size_t(o.k)].staged == OperandSpec::gathered_by_group;
  };
  auto row_constant = [&](const LoopOperand& o) { return nd > 1 && s.row_constant(o.k); };
  // Every input's last-axis stride and (where vectors cross rows) its step from one row's end
  // to the next row's start; the same for the flat index i.
  for (const auto& o : ins) {
    if (vector_read(o))
      w.line("  const kiln_idx kiln_is_{0} = kiln_idx(sizeof({1}));", o.p->name, ctype(s, o.k));
    else if (row_constant(o))
      w.line("  const kiln_idx kiln_is_{0} = 0;", o.p->name);
    else
      w.line("  const kiln_idx kiln_is_{0} = kiln_p_{0}.kiln_s[{1}];", o.p->name, last);
    if (wraps)
      w.line(
          "  const kiln_idx kiln_iw_{0} = kiln_p_{0}.kiln_s[{1}] - kiln_shape.kiln_v[{2}] * "
          "kiln_is_{0};",
          o.p->name, last - 1, last);
  }
  w.line("  const kiln_idx kiln_ie = kiln_shape.kiln_e[{}];", last);
  if (wraps) {
    w.line("  const kiln_idx kiln_iw = kiln_shape.kiln_e[{}] - kiln_shape.kiln_v[{}] * kiln_ie;",
           last - 1, last);
    w.line("  const kiln_idx kiln_nl = kiln_shape.kiln_v[{}], kiln_n2 = kiln_shape.kiln_v[{}];",
           last, last - 1);
  }
  // Unravels flat element `e` into the inputs' offsets, the index and the last two coordinates.
  // Always unrolled: a loop over the dims with a run-time index would move the kernel's
  // parameter arrays to local memory (measured: 0.21-0.26 of the copy rate at ndim >= 3).
  auto unravel = [&](std::string_view indent, std::string_view e) {
    w.line("{}{{", indent);
    w.line("{}  kiln_uidx kiln_rem = {};", indent, e);
    for (const auto& o : ins) w.line("{}  kiln_o_{} = 0;", indent, o.p->name);
    w.line("{}  kiln_ii = 0;", indent);
    if (nd > 1) {
      w.line("#pragma unroll");
      w.line("{}  for (int kiln_d = {}; kiln_d > 0; --kiln_d) {{", indent, last);
      w.line(
          "{}    const kiln_uidx kiln_q = kiln_fastdiv(kiln_rem, kiln_shape.kiln_m[kiln_d], "
          "kiln_shape.kiln_s[kiln_d]);",
          indent);
      w.line(
          "{}    const kiln_idx kiln_c = kiln_idx(kiln_rem - kiln_q * "
          "kiln_uidx(kiln_shape.kiln_d[kiln_d]));",
          indent);
      w.line("{}    kiln_rem = kiln_q;", indent);
      w.line("{}    if (kiln_d == {}) kiln_cl = kiln_c;", indent, last);
      w.line("{}    if (kiln_d == {}) kiln_c2 = kiln_c;", indent, last - 1);
      for (const auto& o : ins)
        w.line("{0}    kiln_o_{1} += kiln_c * kiln_p_{1}.kiln_s[kiln_d];", indent, o.p->name);
      w.line("{}    kiln_ii += kiln_c * kiln_shape.kiln_e[kiln_d];", indent);
      w.line("{}  }}", indent);
    }
    for (const auto& o : ins)
      w.line("{0}  kiln_o_{1} += kiln_idx(kiln_rem) * kiln_p_{1}.kiln_s[0];", indent, o.p->name);
    w.line("{}  kiln_ii += kiln_idx(kiln_rem) * kiln_shape.kiln_e[0];", indent);
    if (nd == 2) w.line("{}  kiln_c2 = kiln_idx(kiln_rem);", indent);
    w.line("{}}}", indent);
  };
  auto elem = [&](const LoopOperand& o, std::string_view off) {
    return fmt::format("*reinterpret_cast<const {}*>(kiln_p_{}.kiln_p + {})", ctype(s, o.k),
                       o.p->name, off);
  };
  // Element `e` of the flat loop in an output or an input laid out as it.
  auto flat_ptr = [&](const LoopOperand& o, std::string_view e) {
    return fmt::format("reinterpret_cast<{}{}*>(kiln_p_{}.kiln_p) + {}",
                       o.p->is_output ? "" : "const ", ctype(s, o.k), o.p->name, e);
  };
  w.line("  const kiln_uidx kiln_items = kiln_uidx(kiln_n) / {};", vw);
  w.line(
      "  for (kiln_uidx kiln_v = kiln_tid; kiln_v < kiln_items; kiln_v += {} * kiln_nthreads) {{",
      u);
  for (const auto& o : ops) w.line("    {} kiln_r_{}[{}][{}];", ctype(s, o.k), o.p->name, u, vw);
  w.line("    kiln_idx kiln_i[{}][{}];", u, vw);
  w.line("#pragma unroll");
  w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("      const kiln_uidx kiln_t = kiln_v + kiln_u * kiln_nthreads;");
  w.line("      if (kiln_t < kiln_items) {{");
  for (const auto& o : flat)
    if (o.load)
      w.line("        kiln_load<{}>(kiln_r_{}[kiln_u], {});", vw, o.p->name,
             flat_ptr(o, fmt::format("kiln_t * {}", vw)));
  for (const auto& o : ins) w.line("        kiln_idx kiln_o_{};", o.p->name);
  w.line("        kiln_idx kiln_ii, kiln_cl = 0, kiln_c2 = 0;");
  w.line("        (void)kiln_cl; (void)kiln_c2;");
  unravel("        ", fmt::format("kiln_t * {}", vw));
  // Inputs constant along the rows: this row's element, again at each row a vector enters.
  auto load_row_constants = [&](std::string_view indent) {
    for (const auto& o : ins)
      if (o.load && row_constant(o))
        w.line("{}kiln_c_{} = {};", indent, o.p->name,
               elem(o, fmt::format("kiln_o_{}", o.p->name)));
  };
  for (const auto& o : ins)
    if (o.load && row_constant(o)) w.line("        {} kiln_c_{};", ctype(s, o.k), o.p->name);
  load_row_constants("        ");
  // Group kiln_g's elements of an input into its registers: `constant` is a row constant's
  // value, `offset` a stepped input's byte offset of the group's first element.
  auto read_group = [&](const LoopOperand& o, std::string_view constant, std::string_view offset) {
    const auto& n = o.p->name;
    if (row_constant(o)) {
      w.line("#pragma unroll");
      w.line(
          "          for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_r_{}[kiln_u][kiln_g * {} + "
          "kiln_k] = {};",
          g, n, g, constant);
    } else if (vector_read(o)) {
      w.line("          {{");
      w.line("            {} kiln_w[{}];", ctype(s, o.k), g);
      w.line(
          "            kiln_load<{}>(kiln_w, reinterpret_cast<const {}*>(kiln_p_{}.kiln_p + {}));",
          g, ctype(s, o.k), n, offset);
      w.line("#pragma unroll");
      w.line(
          "            for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_r_{}[kiln_u][kiln_g * {} + "
          "kiln_k] = kiln_w[kiln_k];",
          g, n, g);
      w.line("          }}");
    } else {
      w.line("          {{");
      w.line("            const kiln_idx kiln_at = {};", offset);
      w.line("#pragma unroll");
      w.line("            for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", g);
      w.line("              kiln_r_{}[kiln_u][kiln_g * {} + kiln_k] = {};", n, g,
             elem(o, fmt::format("kiln_at + kiln_k * kiln_is_{}", n)));
      w.line("          }}");
    }
  };
  if (one_crossing) {
    // Rows of a vector or more: a vector crosses one row end at most, kiln_left elements in.
    // Each input's offset (and each row constant) in this row and in the next, then each
    // group picks its row by a select: no running wrap per group. The next row is one row
    // step on, unless it starts a new plane (unravel again).
    w.line("        const kiln_idx kiln_left = kiln_nl - kiln_cl;");
    for (const auto& o : ins) w.line("        const kiln_idx kiln_a_{0} = kiln_o_{0};", o.p->name);
    w.line("        const kiln_idx kiln_ia = kiln_ii;");
    for (const auto& o : ins)
      if (o.load && row_constant(o))
        w.line("        {} kiln_d_{} = kiln_c_{};", ctype(s, o.k), o.p->name, o.p->name);
    w.line("        if (kiln_left < {}) {{", vw);
    w.line("          if (kiln_c2 + 1 == kiln_n2)  // the next plane: unravel again");
    unravel("            ", fmt::format("kiln_t * {} + kiln_uidx(kiln_left)", vw));
    w.line("          else {{");
    for (const auto& o : ins)
      w.line("            kiln_o_{0} += kiln_left * kiln_is_{0} + kiln_iw_{0};", o.p->name);
    w.line("            kiln_ii += kiln_left * kiln_ie + kiln_iw;");
    w.line("          }}");
    for (const auto& o : ins)
      if (o.load && row_constant(o))
        w.line("          kiln_d_{} = {};", o.p->name,
               elem(o, fmt::format("kiln_o_{}", o.p->name)));
    w.line("        }}");
    w.line("#pragma unroll");
    w.line("        for (int kiln_g = 0; kiln_g < {}; ++kiln_g) {{", groups);
    w.line("          const bool kiln_here = kiln_g * {} < kiln_left;", g);
    auto at = [&](std::string_view first, std::string_view next, std::string_view step) {
      return fmt::format(
          "(kiln_here ? {} + kiln_g * {} * {} : {} + (kiln_g * {} - kiln_left) * {})", first, g,
          step, next, g, step);
    };
    for (const auto& o : ins)
      if (o.load) {
        const auto& n = o.p->name;
        read_group(o, fmt::format("kiln_here ? kiln_c_{0} : kiln_d_{0}", n),
                   at("kiln_a_" + n, "kiln_o_" + n, "kiln_is_" + n));
      }
    w.line("#pragma unroll");
    w.line(
        "          for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_i[kiln_u][kiln_g * {} + "
        "kiln_k] = {} + kiln_k * kiln_ie;",
        g, g, at("kiln_ia", "kiln_ii", "kiln_ie"));
    w.line("        }}");
  } else {
    w.line("#pragma unroll");
    w.line("        for (int kiln_g = 0; kiln_g < {}; ++kiln_g) {{", groups);
    w.line("          if (kiln_g > 0) {{");
    for (const auto& o : ins) w.line("            kiln_o_{0} += {1} * kiln_is_{0};", o.p->name, g);
    w.line("            kiln_ii += {} * kiln_ie;", g);
    if (wraps) {
      // Selects, not a branch: threads of a warp cross rows at different groups (rows of 10
      // float16: a warp ran at 24 of 32 threads, ncu, H100); only a new plane branches.
      w.line("            const bool kiln_wrap = (kiln_cl += {}) == kiln_nl;", g);
      w.line("            kiln_cl = kiln_wrap ? 0 : kiln_cl;");
      for (const auto& o : ins)
        w.line("            kiln_o_{0} += kiln_wrap ? kiln_iw_{0} : kiln_idx(0);", o.p->name);
      w.line("            kiln_ii += kiln_wrap ? kiln_iw : kiln_idx(0);");
      w.line("            kiln_c2 += kiln_wrap;");
      w.line("            if (kiln_c2 == kiln_n2)  // the next plane: unravel again");
      unravel("              ", fmt::format("kiln_t * {} + kiln_uidx(kiln_g * {})", vw, g));
      w.line("            if (kiln_wrap) {{");
      load_row_constants("              ");
      w.line("            }}");
    }
    w.line("          }}");
    for (const auto& o : ins)
      if (o.load) read_group(o, "kiln_c_" + o.p->name, "kiln_o_" + o.p->name);
    w.line("#pragma unroll");
    w.line(
        "          for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_i[kiln_u][kiln_g * {} + "
        "kiln_k] "
        "= kiln_ii + kiln_k * kiln_ie;",
        g, g);
    w.line("        }}");
  }
  for (const auto& o : ops)
    if (o.p->is_output && o.load)
      w.line("        kiln_load<{}>(kiln_r_{}[kiln_u], {});", vw, o.p->name,
             flat_ptr(o, fmt::format("kiln_t * {}", vw)));
  w.line("      }}");
  w.line("    }}");
  w.line("#pragma unroll");
  w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("      const kiln_uidx kiln_t = kiln_v + kiln_u * kiln_nthreads;");
  w.line("      if (kiln_t < kiln_items) {{");
  w.line("#pragma unroll");
  w.line("        for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", vw);
  w.line("          {}", body_call(def, s, "kiln_i[kiln_u][kiln_k]", [](int, const Param& p) {
           return fmt::format("kiln_r_{}[kiln_u][kiln_k]", p.name);
         }));
  w.line("        }}");
  for (const auto& o : ops)
    if (o.p->is_output)
      w.line("        kiln_store<{}>({}, kiln_r_{}[kiln_u]);", vw,
             flat_ptr(o, fmt::format("kiln_t * {}", vw)), o.p->name);
  w.line("      }}");
  w.line("    }}");
  w.line("  }}");
  // The elements past the last whole vector: one per thread.
  w.line(
      "  for (kiln_uidx kiln_t = kiln_items * {} + kiln_tid; kiln_t < kiln_uidx(kiln_n); kiln_t "
      "+= kiln_nthreads) {{",
      vw);
  for (const auto& o : ins) w.line("    kiln_idx kiln_o_{};", o.p->name);
  w.line("    kiln_idx kiln_ii, kiln_cl = 0, kiln_c2 = 0;");
  w.line("    (void)kiln_cl; (void)kiln_c2;");
  unravel("    ", "kiln_t");
  for (const auto& o : ops) {
    if (o.p->is_output)
      w.line("    {0}& kiln_e_{1} = *({2});", ctype(s, o.k), o.p->name, flat_ptr(o, "kiln_t"));
    else if (s.as_output(o.k))
      w.line("    const {} kiln_e_{} = *({});", ctype(s, o.k), o.p->name, flat_ptr(o, "kiln_t"));
    else
      w.line("    const {} kiln_e_{} = {};", ctype(s, o.k), o.p->name,
             elem(o, fmt::format("kiln_o_{}", o.p->name)));
  }
  w.line("    {}", body_call(def, s, "kiln_ii",
                             [](int, const Param& p) { return fmt::format("kiln_e_{}", p.name); }));
  w.line("  }}");
}

// ---- interleaved loop ----

// Axes (batch..., S, L). A thread takes group g of the lines (vector_width = u elements along L
// from col g * u) for all S rows: a line operand (unit steps along L) moves S vectors, one a
// row; an interleaved one (unit steps along S, S elements along L) moves the same S x u
// elements as one contiguous run, S vectors back to back, where element (s, j) is element
// j * S + s of the run: a constant index once S is (`unroll`), so the transposition stays in
// registers; an input constant along L (a per-channel mean) reads one element a row. Which way each
// operand runs is read from its strides once (the same in every thread: the branches never
// diverge), so one kernel serves every mix. Consecutive threads take consecutive groups: every line
// is written in whole vectors across a warp and every run read back to back; an interleaved
// output's runs are handed between the warp's lanes through shared memory first, so that each store
// instruction writes consecutive vectors (stored straight from each lane, 16 bytes every S x 16
// across a warp, float32 NCHW -> NHWC ran at 0.73 of the copy rate, H100). Blocks are 256 threads.
// The rows' ends past the last whole group (L % u elements of each) run one element a thread after
// the groups.
void emit_interleaved(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  const int nd = s.ndim, S = s.interleave(), u = s.vector_width, sax = nd - 2, lax = nd - 1;
  const auto ops = loop_arrays(def, s);
  for (const auto& o : ops)
    w.line(
        "  const bool kiln_run_{0} = kiln_p_{0}.kiln_s[{1}] == kiln_idx(sizeof({2})) && "
        "kiln_p_{0}.kiln_s[{3}] == {4} * kiln_idx(sizeof({2}));",
        o.p->name, sax, ctype(s, o.k), lax, S);
  w.line("  kiln_uidx kiln_batches = 1;");
  for (int d = 0; d < sax; ++d) w.line("  kiln_batches *= kiln_uidx(kiln_shape.kiln_v[{}]);", d);
  w.line("  const kiln_uidx kiln_groups = kiln_batches * kiln_uidx(kiln_shape.kiln_d[{}]);", lax);
  // Adds the batch coordinates of kiln_rem (a batch index) to every offset and to kiln_i.
  auto batch_offsets = [&](std::string_view indent) {
    for (int d = sax - 1; d >= 0; --d) {
      if (d > 0) {
        w.line(
            "{}{{ const kiln_uidx kiln_q = kiln_fastdiv(kiln_rem, kiln_shape.kiln_m[{}], "
            "kiln_shape.kiln_s[{}]);",
            indent, d, d);
        w.line(
            "{}  const kiln_idx kiln_c = kiln_idx(kiln_rem - kiln_q * "
            "kiln_uidx(kiln_shape.kiln_d[{}]));",
            indent, d);
        w.line("{}  kiln_rem = kiln_q;", indent);
      } else {
        w.line("{}{{ const kiln_idx kiln_c = kiln_idx(kiln_rem);", indent);
      }
      emit_offsets(w, ops, std::string(indent) + "  ", "kiln_c", std::to_string(d), "", 1);
      w.line("{}}}", indent);
    }
  };
  auto ptr = [&](const LoopOperand& o, std::string_view offset) {
    return fmt::format("reinterpret_cast<{}{}*>(kiln_p_{}.kiln_p + {})",
                       o.p->is_output ? "" : "const ", ctype(s, o.k), o.p->name, offset);
  };
  auto run_vector = [&](const LoopOperand& o) {
    return ptr(o, fmt::format("kiln_o_{} + kiln_k * {} * kiln_idx(sizeof({}))", o.p->name, u,
                              ctype(s, o.k)));
  };
  auto line_vector = [&](const LoopOperand& o) {
    return ptr(o, fmt::format("kiln_o_{0} + kiln_k * kiln_p_{0}.kiln_s[{1}]", o.p->name, sax));
  };
  // Between a run in memory order (kiln_v) and rows (kiln_r_<name>), `to_rows` or back.
  auto transpose = [&](const LoopOperand& o, bool to_rows) {
    w.line("#pragma unroll");
    w.line("        for (int kiln_row = 0; kiln_row < {}; ++kiln_row)", S);
    w.line("#pragma unroll");
    w.line("          for (int kiln_j = 0; kiln_j < {}; ++kiln_j) {{", u);
    w.line("            const int kiln_e = kiln_j * {} + kiln_row;", S);
    const auto run = fmt::format("kiln_v[kiln_e / {0}][kiln_e % {0}]", u);
    const auto row = fmt::format("kiln_r_{}[kiln_row][kiln_j]", o.p->name);
    w.line("            {} = {};", to_rows ? row : run, to_rows ? run : row);
    w.line("          }}");
  };
  bool outputs = false;
  for (const auto& o : ops) outputs |= o.p->is_output;
  // A warp's runs of an interleaved output leave through shared memory (kiln_w: 32 lanes x S
  // vectors of 16 bytes at most), so that each store instruction writes consecutive vectors.
  if (outputs)
    w.line("  __shared__ __align__(16) unsigned char kiln_sm[{} * {} * 16];", kTiledThreads, S);
  w.line("  const int kiln_lane = int(threadIdx.x & 31);");
  // Warp-uniform trips (the lanes exchange offsets); a lane past the last group takes group
  // 0's place, whose loads are in bounds, and stores nothing.
  w.line(
      "  for (kiln_uidx kiln_g0 = kiln_tid - kiln_lane; kiln_g0 < kiln_groups; kiln_g0 += "
      "kiln_nthreads) {{");
  w.line("    const bool kiln_active = kiln_g0 + kiln_lane < kiln_groups;");
  w.line("    kiln_uidx kiln_rem = kiln_active ? kiln_g0 + kiln_lane : 0;");
  w.line(
      "    const kiln_uidx kiln_q = kiln_fastdiv(kiln_rem, kiln_shape.kiln_m[{0}], "
      "kiln_shape.kiln_s[{0}]);",
      lax);
  w.line(
      "    const kiln_idx kiln_col = kiln_idx(kiln_rem - kiln_q * "
      "kiln_uidx(kiln_shape.kiln_d[{}])) * {};",
      lax, u);
  w.line("    kiln_rem = kiln_q;");
  for (const auto& o : ops)
    w.line("    kiln_idx kiln_o_{0} = kiln_col * kiln_p_{0}.kiln_s[{1}];", o.p->name, lax);
  w.line("    kiln_idx kiln_i = kiln_col * kiln_shape.kiln_e[{}];", lax);
  batch_offsets("    ");
  for (const auto& o : ops) w.line("    {} kiln_r_{}[{}][{}];", ctype(s, o.k), o.p->name, S, u);
  for (const auto& o : ops) {
    if (!o.load) continue;
    // An input constant along L (stride 0: a per-channel value): one element a row.
    if (!o.p->is_output) {
      w.line("    if (kiln_p_{}.kiln_s[{}] == 0) {{", o.p->name, lax);
      w.line("#pragma unroll");
      w.line("      for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", S);
      w.line("        const {} kiln_one = *{};", ctype(s, o.k), line_vector(o));
      w.line("#pragma unroll");
      w.line(
          "        for (int kiln_j = 0; kiln_j < {}; ++kiln_j) kiln_r_{}[kiln_k][kiln_j] = "
          "kiln_one;",
          u, o.p->name);
      w.line("      }}");
      w.line("    }} else");
    }
    w.line("    if (kiln_run_{}) {{", o.p->name);
    w.line("      {} kiln_v[{}][{}];", ctype(s, o.k), S, u);
    w.line("#pragma unroll");
    w.line("      for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", S);
    w.line("        kiln_load<{}>(kiln_v[kiln_k], {});", u, run_vector(o));
    w.line("      {{");
    transpose(o, true);
    w.line("      }}");
    w.line("    }} else {{");
    w.line("#pragma unroll");
    w.line("      for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", S);
    w.line("        kiln_load<{}>(kiln_r_{}[kiln_k], {});", u, o.p->name, line_vector(o));
    w.line("    }}");
  }
  w.line("#pragma unroll");
  w.line("    for (int kiln_row = 0; kiln_row < {}; ++kiln_row)", S);
  w.line("#pragma unroll");
  w.line("      for (int kiln_j = 0; kiln_j < {}; ++kiln_j) {{", u);
  w.line(
      "        const kiln_idx kiln_ij = kiln_i + kiln_row * kiln_shape.kiln_e[{}] + kiln_j * "
      "kiln_shape.kiln_e[{}];",
      sax, lax);
  w.line("        {}", body_call(def, s, "kiln_ij", [](int, const Param& p) {
           return fmt::format("kiln_r_{}[kiln_row][kiln_j]", p.name);
         }));
  w.line("      }}");
  // An interleaved output: each lane's run into the warp's area in memory order, then vector
  // v = k * 32 + lane of the warp's runs to its owner's (lane v / S) place.
  for (const auto& o : ops) {
    if (!o.p->is_output) continue;
    const auto t = ctype(s, o.k);
    w.line("    if (kiln_run_{}) {{", o.p->name);
    w.line("      {} kiln_v[{}][{}];", t, S, u);
    w.line("      {{");
    transpose(o, false);
    w.line("      }}");
    w.line(
        "      {0}* const kiln_w = reinterpret_cast<{0}*>(kiln_sm) + (threadIdx.x & ~31u) * {1};",
        t, S * u);
    w.line("#pragma unroll");
    w.line("      for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", S);
    w.line("        kiln_store<{0}>(kiln_w + (kiln_lane * {1} + kiln_k) * {0}, kiln_v[kiln_k]);", u,
           S);
    w.line("      __syncwarp();");
    w.line("#pragma unroll");
    w.line("      for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", S);
    w.line("        const int kiln_at = kiln_k * 32 + kiln_lane, kiln_owner = kiln_at / {};", S);
    w.line("        const kiln_idx kiln_to = __shfl_sync(0xffffffffu, kiln_o_{}, kiln_owner);",
           o.p->name);
    w.line("        if (__shfl_sync(0xffffffffu, kiln_active, kiln_owner)) {{");
    w.line("          {} kiln_t[{}];", t, u);
    w.line("          kiln_load<{0}>(kiln_t, kiln_w + kiln_at * {0});", u);
    w.line("          kiln_store<{}>({}, kiln_t);", u,
           ptr(o, fmt::format("kiln_to + (kiln_at % {}) * {} * kiln_idx(sizeof({}))", S, u, t)));
    w.line("        }}");
    w.line("      }}");
    w.line("      __syncwarp();  // before the warp's area takes the next run");
    w.line("    }} else if (kiln_active) {{");
    w.line("#pragma unroll");
    w.line("      for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", S);
    w.line("        kiln_store<{}>({}, kiln_r_{}[kiln_k]);", u, line_vector(o), o.p->name);
    w.line("    }}");
  }
  w.line("  }}");
  // The rows' ends: L % u elements of each of the batches x S rows, one a thread.
  w.line("  const kiln_idx kiln_whole = kiln_idx(kiln_shape.kiln_d[{}]) * {};", lax, u);
  w.line("  const kiln_idx kiln_tail = kiln_shape.kiln_v[{}] - kiln_whole;", lax);
  w.line("  const kiln_uidx kiln_ends = kiln_batches * {} * kiln_uidx(kiln_tail);", S);
  w.line("  for (kiln_uidx kiln_t = kiln_tid; kiln_t < kiln_ends; kiln_t += kiln_nthreads) {{");
  w.line("    const kiln_idx kiln_col = kiln_whole + kiln_idx(kiln_t % kiln_uidx(kiln_tail));");
  w.line("    kiln_uidx kiln_rem = kiln_t / kiln_uidx(kiln_tail);");
  w.line("    const kiln_idx kiln_row = kiln_idx(kiln_rem % {});", S);
  w.line("    kiln_rem /= {};", S);
  for (const auto& o : ops)
    w.line(
        "    kiln_idx kiln_o_{0} = kiln_col * kiln_p_{0}.kiln_s[{1}] + kiln_row * "
        "kiln_p_{0}.kiln_s[{2}];",
        o.p->name, lax, sax);
  w.line(
      "    kiln_idx kiln_i = kiln_col * kiln_shape.kiln_e[{}] + kiln_row * kiln_shape.kiln_e[{}];",
      lax, sax);
  batch_offsets("    ");
  for (const auto& o : ops) {
    if (o.load)
      w.line("    {0} kiln_e_{1} = *{2};", ctype(s, o.k), o.p->name, ptr(o, "kiln_o_" + o.p->name));
    else
      w.line("    {} kiln_e_{};", ctype(s, o.k), o.p->name);
  }
  w.line("    {}",
         body_call(def, s, "kiln_i", [](int, const Param& p) { return "kiln_e_" + p.name; }));
  for (const auto& o : ops)
    if (o.p->is_output) w.line("    *{} = kiln_e_{};", ptr(o, "kiln_o_" + o.p->name), o.p->name);
  w.line("  }}");
}

// ---- tiled loop ----

// One access of `n` elements of operand `o` at byte pointer `ptr`, elements `step` bytes
// apart, between memory and `regs` (a T[n] array): one vector when `unit` (the step is one
// element; the planner checked alignment), else one access per element.
void emit_unit_access(SourceWriter& w, const ElementwiseSpec& s, const LoopOperand& o, bool store,
                      int n, std::string_view indent, std::string_view regs, std::string_view ptr,
                      std::string_view unit, std::string_view step) {
  const auto t = ctype(s, o.k);
  const std::string_view cv = store ? "" : "const ";
  auto element = [&](std::string_view at, std::string_view k) {
    const auto mem = fmt::format("*reinterpret_cast<{}{}*>({})", cv, t, at);
    const auto reg = fmt::format("{}[{}]", regs, k);
    return store ? fmt::format("{} = {};", mem, reg) : fmt::format("{} = {};", reg, mem);
  };
  if (n == 1) {
    w.line("{}{}", indent, element(ptr, "0"));
    return;
  }
  w.line("{}if ({}) {{", indent, unit);
  if (store)
    w.line("{}  kiln_store<{}>(reinterpret_cast<{}*>({}), {});", indent, n, t, ptr, regs);
  else
    w.line("{}  kiln_load<{}>({}, reinterpret_cast<const {}*>({}));", indent, n, regs, t, ptr);
  w.line("{}}} else {{", indent);
  w.line("#pragma unroll");
  w.line("{}  for (int kiln_j = 0; kiln_j < {}; ++kiln_j)", indent, n);
  w.line("{}    {}", indent, element(fmt::format("{} + kiln_j * {}", ptr, step), "kiln_j"));
  w.line("{}}}", indent);
}

// Opens the loop over a tiled or packed kernel's tiles (boxes), a block each in turn: their
// count is the tile counts kiln_d of the `tiled` axes times the extents of the batch axes
// 0..nbatch-1. kiln_rem starts as the tile's index past the last tiled axis' tile count.
void emit_tile_loop(SourceWriter& w, std::initializer_list<int> tiled, int nbatch) {
  std::string count;
  for (int d : tiled)
    count += fmt::format("{}kiln_uidx(kiln_shape.kiln_d[{}])", count.empty() ? "" : " * ", d);
  w.line("  kiln_uidx kiln_tiles = {};", count);
  for (int d = 0; d < nbatch; ++d) w.line("  kiln_tiles *= kiln_uidx(kiln_shape.kiln_v[{}]);", d);
  w.line(
      "  for (kiln_uidx kiln_tile = blockIdx.x; kiln_tile < kiln_tiles; kiln_tile += gridDim.x) "
      "{{");
  w.line(
      "    kiln_uidx kiln_rem = kiln_fastdiv(kiln_tile, kiln_shape.kiln_m[{0}], "
      "kiln_shape.kiln_s[{0}]);",
      *(tiled.end() - 1));
}

// The batch axes 0..nbatch-1 of a tiled or packed loop: unravels kiln_rem (the batch index)
// and adds each coordinate to every operand's base kiln_b_<name> and to the flat index kiln_bi.
void emit_batch_offsets(SourceWriter& w, const std::vector<LoopOperand>& all, int nbatch) {
  for (int d = nbatch - 1; d >= 0; --d) {
    w.line("    {{");
    if (d > 0) {
      w.line(
          "      const kiln_uidx kiln_q = kiln_fastdiv(kiln_rem, kiln_shape.kiln_m[{0}], "
          "kiln_shape.kiln_s[{0}]);",
          d);
      w.line(
          "      const kiln_idx kiln_c = kiln_idx(kiln_rem - kiln_q * "
          "kiln_uidx(kiln_shape.kiln_d[{}]));",
          d);
      w.line("      kiln_rem = kiln_q;");
    } else {
      w.line("      const kiln_idx kiln_c = kiln_idx(kiln_rem);");
    }
    for (const auto& o : all)
      w.line("      kiln_b_{0} += kiln_c * kiln_p_{0}.kiln_s[{1}];", o.p->name, d);
    w.line("      kiln_bi += kiln_c * kiln_shape.kiln_e[{}];", d);
    w.line("    }}");
  }
}

// A tile of tr x tc elements of the (rows, cols) axes (tr * tc = 256 threads x K elements; tc
// chosen per call, kiln_shape.kiln_t its log2; tr and tc between K and 256) per block; blocks
// take tiles in turn (col tile fastest, then row tile, then the batch axes, unravelled once per
// tile). Direct accesses move units of ud elements along the cols (ud = 1, 2 for 4-byte
// dtypes, up to 8 for 1- and 2-byte ones: fewer memory instructions): thread t takes cols ud * (t %
// (tc / ud)) of rows t / (tc / ud) + k (256 ud / tc), so operands contiguous along cols are read
// and written in full lines. Staged operands (contiguous along rows) move units of us elements
// along the rows between memory and a shared tile [tc][tr + 1], thread t on rows
// us * (t % (tr / us)) of cols t / (tr / us) + k (256 us / tr), so their accesses run along
// lines too; the odd pitch keeps single-element shared accesses free of bank conflicts (pairs
// of 4-byte elements take two-way conflicts, measured cheaper than the memory instructions
// they save). Each thread's accesses are one pointer and a constant step apart, which keeps the
// registers (and so the occupancy) where a copy has them; along a side over two axes
// (two_axis_sides) the operands not contiguous across the pair add each line's offset from one
// division instead.
void emit_tiled(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  // Axes (batch..., [r2,] rax, [c2,] cax): a side spanning two axes (two_axis_sides) counts
  // its lines over the pair, the outer one (r2, c2) divided off with kiln_d of that axis
  // (the inner extent) wherever an operand is not contiguous across the pair.
  const bool cc = s.cols_span_two(), rc = s.rows_span_two();
  const int nd = s.ndim, cax = nd - 1, c2 = nd - 2, rax = nd - 2 - int(cc), r2 = rax - 1;
  const int nbatch = rax - int(rc);
  const int per_thread = tiled_elements_per_thread(s);
  const int ud = s.unit_cols(), us = s.unit_rows();
  const int kd = per_thread / ud, ks = per_thread / us;  // accesses per thread and operand
  int log2_tile = 0;
  while ((1 << log2_tile) < kTiledThreads * per_thread) ++log2_tile;
  const auto all = loop_arrays(def, s);
  bool staged_in = false, staged_out = false;
  for (const auto& o : all) {
    staged_in |= s.staged(o.k) && o.load;
    staged_out |= s.staged(o.k) && o.p->is_output;
  }
  for (const auto& o : all)
    if (s.staged(o.k)) {
      // Raw storage: a __shared__ array of a class type (complex) may not be constructed.
      w.line("  __shared__ __align__(16) unsigned char kiln_sm_{}[{} * sizeof({})];", o.p->name,
             tiled_shared_elements(s), ctype(s, o.k));
      w.line("  {0}* const kiln_t_{1} = reinterpret_cast<{0}*>(kiln_sm_{1});", ctype(s, o.k),
             o.p->name);
    }
  // Which operands take a unit in one access (uniform across the grid: no divergence).
  for (const auto& o : all) {
    const int n = s.staged(o.k) ? us : ud;
    if (n > 1)
      w.line("  const bool kiln_unit_{0} = kiln_p_{0}.kiln_s[{1}] == kiln_idx(sizeof({2}));",
             o.p->name, s.staged(o.k) ? rax : cax, ctype(s, o.k));
  }
  auto extent = [](bool two, int outer, int inner) {
    return two ? fmt::format("kiln_shape.kiln_v[{}] * kiln_shape.kiln_v[{}]", outer, inner)
               : fmt::format("kiln_shape.kiln_v[{}]", inner);
  };
  w.line("  const kiln_idx kiln_rows = {}, kiln_cols = {};", extent(rc, r2, rax),
         extent(cc, c2, cax));
  w.line("  const int kiln_lc = int(kiln_shape.kiln_t), kiln_lr = {} - kiln_lc;", log2_tile);
  w.line("  const int kiln_pitch = (1 << kiln_lr) + 1;");
  w.line("  const int kiln_th = int(threadIdx.x);");
  const bool runs = s.tiled_runs();
  if (runs) {
    // Element q of a run is col q / rows, row q % rows of the tile: shared index q + col x
    // (pitch - rows), col from a float reciprocal (exact for q < 2^12 and rows <= 256).
    w.line("  const float kiln_frinv = 1.0f / float(kiln_rows);");
    w.line("  const int kiln_fgap = kiln_pitch - int(kiln_rows);");
  }
  // Direct: cols kiln_dc (+ ud), rows kiln_dr + k kiln_dk; staged: rows kiln_sr (+ us), cols
  // kiln_sc + k kiln_sk.
  w.line("  const int kiln_ld = kiln_lc - {}, kiln_ls = kiln_lr - {};", s.log2_unit_cols,
         s.log2_unit_rows);
  w.line(
      "  const int kiln_dc = (kiln_th & ((1 << kiln_ld) - 1)) << {}, kiln_dr = kiln_th >> kiln_ld, "
      "kiln_dk = {} >> kiln_ld;",
      s.log2_unit_cols, kTiledThreads);
  w.line(
      "  const int kiln_sr = (kiln_th & ((1 << kiln_ls) - 1)) << {}, kiln_sc = kiln_th >> kiln_ls, "
      "kiln_sk = {} >> kiln_ls;",
      s.log2_unit_rows, kTiledThreads);
  // kiln_d of the rows and cols axes count their tiles.
  emit_tile_loop(w, {rax, cax}, nbatch);
  w.line(
      "    const kiln_idx kiln_c0 = kiln_idx(kiln_tile - kiln_rem * "
      "kiln_uidx(kiln_shape.kiln_d[{}])) << kiln_lc;",
      cax);
  w.line("    kiln_idx kiln_r0;");
  w.line("    {{");
  w.line(
      "      const kiln_uidx kiln_q = kiln_fastdiv(kiln_rem, kiln_shape.kiln_m[{0}], "
      "kiln_shape.kiln_s[{0}]);",
      rax);
  w.line(
      "      kiln_r0 = kiln_idx(kiln_rem - kiln_q * kiln_uidx(kiln_shape.kiln_d[{}])) << kiln_lr;",
      rax);
  w.line("      kiln_rem = kiln_q;");
  w.line("    }}");
  // The batch axes' offsets (kiln_rem is the batch index).
  for (const auto& o : all) w.line("    char* kiln_b_{0} = kiln_p_{0}.kiln_p;", o.p->name);
  w.line("    kiln_idx kiln_bi = 0;");
  emit_batch_offsets(w, all, nbatch);
  // This thread's first element and step, for each access pattern.
  w.line("    const kiln_idx kiln_drow = kiln_r0 + kiln_dr, kiln_dcol = kiln_c0 + kiln_dc;");
  w.line("    const kiln_idx kiln_srow = kiln_r0 + kiln_sr, kiln_scol = kiln_c0 + kiln_sc;");
  // Whole units: the planner gave units only to an axis that holds whole units.
  w.line("    const bool kiln_dok = kiln_dcol < kiln_cols, kiln_sok = kiln_srow < kiln_rows;");
  // Each thread's base per operand; along a side spanning two axes the operands not
  // contiguous across them add each line's offset at the access (line_offset).
  for (const auto& o : all) {
    const auto& n = o.p->name;
    if (s.staged(o.k)) {
      if (cc) {
        w.line("    char* const kiln_sp_{0} = kiln_b_{0} + kiln_srow * kiln_p_{0}.kiln_s[{1}];", n,
               rax);
        continue;
      }
      w.line(
          "    char* const kiln_sp_{0} = kiln_b_{0} + kiln_srow * kiln_p_{0}.kiln_s[{1}] + "
          "kiln_scol * kiln_p_{0}.kiln_s[{2}];",
          n, rax, cax);
      w.line("    const kiln_idx kiln_sps_{0} = kiln_idx(kiln_sk) * kiln_p_{0}.kiln_s[{1}];", n,
             cax);
    } else {
      if (rc) {
        w.line("    char* const kiln_dp_{0} = kiln_b_{0} + kiln_dcol * kiln_p_{0}.kiln_s[{1}];", n,
               cax);
        continue;
      }
      w.line(
          "    char* const kiln_dp_{0} = kiln_b_{0} + kiln_drow * kiln_p_{0}.kiln_s[{1}] + "
          "kiln_dcol * kiln_p_{0}.kiln_s[{2}];",
          n, rax, cax);
      w.line("    const kiln_idx kiln_dps_{0} = kiln_idx(kiln_dk) * kiln_p_{0}.kiln_s[{1}];", n,
             rax);
    }
  }
  // Line `at` of a side over axes (outer, inner): its quotient and remainder by the inner
  // extent (kiln_d of the outer axis), as kiln_<q>q and kiln_<q>m.
  auto line_offset = [&](std::string_view indent, std::string_view q, std::string_view at,
                         int outer) {
    w.line(
        "{}const kiln_idx kiln_{}q = kiln_idx(kiln_fastdiv(kiln_uidx({}), kiln_shape.kiln_m[{}], "
        "kiln_shape.kiln_s[{}]));",
        indent, q, at, outer, outer);
    w.line("{}const kiln_idx kiln_{}m = kiln_idx({}) - kiln_{}q * kiln_idx(kiln_shape.kiln_d[{}]);",
           indent, q, at, q, outer);
  };
  auto staged_ptr = [&](const std::string& n) {
    return cc ? fmt::format(
                    "kiln_sp_{0} + kiln_cq * kiln_p_{0}.kiln_s[{1}] + kiln_cm * "
                    "kiln_p_{0}.kiln_s[{2}]",
                    n, c2, cax)
              : fmt::format("kiln_sp_{0} + kiln_k * kiln_sps_{0}", n);
  };
  auto direct_ptr = [&](const std::string& n) {
    return rc ? fmt::format(
                    "kiln_dp_{0} + kiln_rq * kiln_p_{0}.kiln_s[{1}] + kiln_rm * "
                    "kiln_p_{0}.kiln_s[{2}]",
                    n, r2, rax)
              : fmt::format("kiln_dp_{0} + kiln_k * kiln_dps_{0}", n);
  };
  auto unit_flag = [&](const LoopOperand& o, int n) {
    return n > 1 ? "kiln_unit_" + o.p->name : std::string("true");
  };
  if (staged_in || staged_out)
    w.line(
        "    if (kiln_tile != blockIdx.x) __syncthreads();  // the last tile's shared reads are "
        "done");
  for (const auto& o : all) w.line("    {} kiln_r_{}[{}][{}];", ctype(s, o.k), o.p->name, kd, ud);
  // Staged loads: a unit down the rows, then each element to its place in the shared tile.
  auto staged_loads = [&] {
    w.line("#pragma unroll");
    w.line("    for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", ks);
    w.line("      if (kiln_sok && kiln_scol + kiln_k * kiln_sk < kiln_cols) {{");
    if (cc) line_offset("        ", "c", "kiln_scol + kiln_k * kiln_sk", c2);
    for (const auto& o : all)
      if (s.staged(o.k) && o.load) {
        const auto& n = o.p->name;
        w.line("        {{");
        w.line("          {} kiln_u[{}];", ctype(s, o.k), us);
        emit_unit_access(w, s, o, false, us, "          ", "kiln_u", staged_ptr(n),
                         unit_flag(o, us), fmt::format("kiln_p_{}.kiln_s[{}]", n, rax));
        w.line("#pragma unroll");
        w.line("          for (int kiln_j = 0; kiln_j < {}; ++kiln_j)", us);
        w.line(
            "            kiln_t_{}[(kiln_sc + kiln_k * kiln_sk) * kiln_pitch + kiln_sr + kiln_j] = "
            "kiln_u[kiln_j];",
            n);
        w.line("        }}");
      }
    w.line("      }}");
  };
  // Runs: a tile's staged operands (every row, `kiln_fn` elements each) as whole 16-byte
  // vectors where each run is aligned for them (`flag`), else element by element.
  auto run_condition = [&](bool outputs, std::string_view flag) {
    // Every row in the tile (the planner's rule; checked so no launch can overrun it).
    w.line("    bool {} = kiln_rows <= (kiln_idx(1) << kiln_lr);", flag);
    for (const auto& o : all)
      if (s.staged(o.k) && (outputs ? o.p->is_output : o.load)) {
        const int v = int(16 / s.param_dtype(o.k).itemsize());
        w.line(
            "    {0} = {0} && kiln_fn % {1} == 0 && (reinterpret_cast<unsigned long "
            "long>(kiln_b_{2} "
            "+ kiln_c0 * kiln_p_{2}.kiln_s[{3}]) & 15) == 0;",
            flag, v, o.p->name, cax);
      }
  };
  auto run_access = [&](const LoopOperand& o, bool store) {
    const auto t = ctype(s, o.k);
    const int v = int(16 / s.param_dtype(o.k).itemsize());
    const int nv = std::max(1, per_thread / v);
    const auto& n = o.p->name;
    w.line("      {{");
    w.line(
        "        {0}* const kiln_f = reinterpret_cast<{0}*>(kiln_b_{1} + kiln_c0 * "
        "kiln_p_{1}.kiln_s[{2}]);",
        t, n, cax);
    w.line("#pragma unroll");
    w.line("        for (int kiln_v = 0; kiln_v < {}; ++kiln_v) {{", nv);
    w.line("          const int kiln_q0 = (kiln_th + kiln_v * {}) * {};", kTiledThreads, v);
    w.line("          if (kiln_q0 < kiln_fn) {{");
    w.line("            {} kiln_u[{}];", t, v);
    if (!store) w.line("            kiln_load<{}>(kiln_u, kiln_f + kiln_q0);", v);
    w.line("#pragma unroll");
    w.line("            for (int kiln_j = 0; kiln_j < {}; ++kiln_j) {{", v);
    w.line("              const int kiln_q = kiln_q0 + kiln_j;");
    w.line(
        "              const int kiln_at = kiln_q + int((float(kiln_q) + 0.5f) * kiln_frinv) * "
        "kiln_fgap;");
    if (store)
      w.line("              kiln_u[kiln_j] = kiln_t_{}[kiln_at];", n);
    else
      w.line("              kiln_t_{}[kiln_at] = kiln_u[kiln_j];", n);
    w.line("            }}");
    if (store) w.line("            kiln_store<{}>(kiln_f + kiln_q0, kiln_u);", v);
    w.line("          }}");
    w.line("        }}");
    w.line("      }}");
  };
  if (runs)
    w.line(
        "    const int kiln_fn = int(min(kiln_idx(1) << kiln_lc, kiln_cols - kiln_c0) * "
        "kiln_rows);");
  // Direct loads, all issued before any store (an output may be an input).
  auto direct_loads = [&] {
    w.line("#pragma unroll");
    w.line("    for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", kd);
    w.line("      if (kiln_dok && kiln_drow + kiln_k * kiln_dk < kiln_rows) {{");
    if (rc) line_offset("        ", "r", "kiln_drow + kiln_k * kiln_dk", r2);
    for (const auto& o : all)
      if (!s.staged(o.k) && o.load) {
        const auto& n = o.p->name;
        emit_unit_access(w, s, o, false, ud, "        ", fmt::format("kiln_r_{}[kiln_k]", n),
                         direct_ptr(n), unit_flag(o, ud),
                         fmt::format("kiln_p_{}.kiln_s[{}]", n, cax));
      }
    w.line("      }}");
  };
  if (runs) {
    // The direct loads first: they do not wait on the branch.
    direct_loads();
    if (staged_in) {
      run_condition(false, "kiln_fin");
      w.line("    if (kiln_fin) {{");
      for (const auto& o : all)
        if (s.staged(o.k) && o.load) run_access(o, false);
      w.line("    }} else {{");
      staged_loads();
      w.line("    }}");
    }
  } else {
    if (staged_in) staged_loads();
    direct_loads();
  }
  if (staged_in) w.line("    __syncthreads();");
  w.line("#pragma unroll");
  w.line("    for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", kd);
  w.line("      const kiln_idx kiln_r = kiln_drow + kiln_k * kiln_dk;");
  w.line("      if (kiln_dok && kiln_r < kiln_rows) {{");
  if (rc) line_offset("        ", "r", "kiln_r", r2);
  w.line("#pragma unroll");
  w.line("        for (int kiln_j = 0; kiln_j < {}; ++kiln_j) {{", ud);
  w.line(
      "          const int kiln_sh = (kiln_dc + kiln_j) * kiln_pitch + kiln_dr + kiln_k * "
      "kiln_dk;  // this element in a shared tile");
  w.line("          (void)kiln_sh;");
  for (const auto& o : all)
    if (s.staged(o.k) && o.load)
      w.line("          kiln_r_{0}[kiln_k][kiln_j] = kiln_t_{0}[kiln_sh];", o.p->name);
  // The flat index is linear along a side over two axes: the planner spans one only where i
  // runs on across the pair too, or where the code never reads i.
  w.line(
      "          const kiln_idx kiln_i = kiln_bi + kiln_r * kiln_shape.kiln_e[{}] + (kiln_dcol + "
      "kiln_j) * kiln_shape.kiln_e[{}];",
      rax, cax);
  w.line("          {}", body_call(def, s, "kiln_i", [](int, const Param& p) {
           return fmt::format("kiln_r_{}[kiln_k][kiln_j]", p.name);
         }));
  for (const auto& o : all)
    if (o.p->is_output && s.staged(o.k))
      w.line("          kiln_t_{0}[kiln_sh] = kiln_r_{0}[kiln_k][kiln_j];", o.p->name);
  w.line("        }}");
  for (const auto& o : all)
    if (o.p->is_output && !s.staged(o.k)) {
      const auto& n = o.p->name;
      emit_unit_access(w, s, o, true, ud, "        ", fmt::format("kiln_r_{}[kiln_k]", n),
                       direct_ptr(n), unit_flag(o, ud),
                       fmt::format("kiln_p_{}.kiln_s[{}]", n, cax));
    }
  w.line("      }}");
  w.line("    }}");
  if (staged_out) {
    // Staged stores: a unit gathered from the shared tile, down the rows again.
    w.line("    __syncthreads();");
    if (runs) {
      run_condition(true, "kiln_fout");
      w.line("    if (kiln_fout) {{");
      for (const auto& o : all)
        if (s.staged(o.k) && o.p->is_output) run_access(o, true);
      w.line("    }} else {{");
    }
    w.line("#pragma unroll");
    w.line("    for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", ks);
    w.line("      if (kiln_sok && kiln_scol + kiln_k * kiln_sk < kiln_cols) {{");
    if (cc) line_offset("        ", "c", "kiln_scol + kiln_k * kiln_sk", c2);
    for (const auto& o : all)
      if (s.staged(o.k) && o.p->is_output) {
        const auto& n = o.p->name;
        w.line("        {{");
        w.line("          {} kiln_u[{}];", ctype(s, o.k), us);
        w.line("#pragma unroll");
        w.line("          for (int kiln_j = 0; kiln_j < {}; ++kiln_j)", us);
        w.line(
            "            kiln_u[kiln_j] = kiln_t_{}[(kiln_sc + kiln_k * kiln_sk) * kiln_pitch + "
            "kiln_sr + kiln_j];",
            n);
        emit_unit_access(w, s, o, true, us, "          ", "kiln_u", staged_ptr(n), unit_flag(o, us),
                         fmt::format("kiln_p_{}.kiln_s[{}]", n, rax));
        w.line("        }}");
      }
    w.line("      }}");
    if (runs) w.line("    }}");
  }
  w.line("  }}");
}

// ---- packed loop ----

// A box of (2^kiln_t elements of A, all of B, all of C), the loop's last three axes, per
// block; blocks take boxes in turn (A's boxes fastest, then the batch axes, unravelled once per
// box). Staged inputs first: each thread walks box elements t, t + 256, ... in the operand's
// own memory order (kiln_box_order: its axes by stride), loads them, and writes each to its
// place in the shared box (PackedBox's pitches). Then every thread walks the box in its own
// order (C fastest), along which direct operands are contiguous: loads, the operation (staged
// values from the shared box), stores. A thread loads kPackedUnroll elements before using any, so
// that many loads stay in flight; indices within a box are decoded with the loop's divisors
// (B's and C's are their extents; A's box extent is a power of two).
void emit_packed(SourceWriter& w, const ElementwiseDefinition& def, const ElementwiseSpec& s) {
  const int nd = s.ndim, ax = nd - 3, bx = nd - 2, cx = nd - 1;
  const int u = kPackedUnroll;
  const auto all = loop_arrays(def, s);
  w.line(
      "  const kiln_idx kiln_na = kiln_shape.kiln_v[{}], kiln_nb = kiln_shape.kiln_v[{}], kiln_nc "
      "= kiln_shape.kiln_v[{}];",
      ax, bx, cx);
  w.line("  const int kiln_la = int(kiln_shape.kiln_t);");
  w.line("  const kiln_idx kiln_ta = kiln_idx(1) << kiln_la;");
  w.line(
      "  const kiln_uidx kiln_box = kiln_uidx(kiln_ta) * kiln_uidx(kiln_nb) * "
      "kiln_uidx(kiln_nc);");
  w.line("  const kiln_idx kiln_pb = kiln_nc | 1, kiln_pa = (kiln_nb * kiln_pb) | 1;");
  w.line("  (void)kiln_pa; (void)kiln_pb;");
  bool staged = false;
  std::string offset = "0";
  for (const auto& o : all)
    if (s.staged(o.k)) {
      const auto& n = o.p->name;
      if (!staged) {
        w.line("  extern __shared__ __align__(16) unsigned char kiln_box_sm[];");
        w.line(
            "  const kiln_uidx kiln_box_sh = (kiln_uidx(kiln_pa) * kiln_uidx(kiln_ta) + 15) / 16 * "
            "16;");
        w.line("  (void)kiln_box_sh;  // one staged operand: no box after it");
      }
      staged = true;
      w.line("  {0}* const kiln_t_{1} = reinterpret_cast<{0}*>(kiln_box_sm + {2});", ctype(s, o.k),
             n, offset);
      offset += fmt::format(" + kiln_box_sh * sizeof({})", ctype(s, o.k));
      w.line(
          "  kiln_box_axis<kiln_idx> kiln_w0_{0}{{kiln_ta, 0, kiln_la, kiln_p_{0}.kiln_s[{1}], "
          "kiln_pa, true}};",
          n, ax);
      w.line(
          "  kiln_box_axis<kiln_idx> kiln_w1_{0}{{kiln_nb, kiln_shape.kiln_m[{1}], "
          "kiln_shape.kiln_s[{1}], kiln_p_{0}.kiln_s[{1}], kiln_pb, false}};",
          n, bx);
      w.line(
          "  kiln_box_axis<kiln_idx> kiln_w2_{0}{{kiln_nc, kiln_shape.kiln_m[{1}], "
          "kiln_shape.kiln_s[{1}], kiln_p_{0}.kiln_s[{1}], 1, false}};",
          n, cx);
      w.line("  kiln_box_order(kiln_w0_{0}, kiln_w1_{0}, kiln_w2_{0});", n);
    }
  emit_tile_loop(w, {ax}, ax);
  w.line(
      "    const kiln_idx kiln_a0 = kiln_idx(kiln_tile - kiln_rem * "
      "kiln_uidx(kiln_shape.kiln_d[{}])) << kiln_la;",
      ax);
  w.line(
      "    const kiln_idx kiln_lim = kiln_na - kiln_a0 < kiln_ta ? kiln_na - kiln_a0 : kiln_ta;");
  for (const auto& o : all)
    w.line("    char* kiln_b_{0} = kiln_p_{0}.kiln_p + kiln_a0 * kiln_p_{0}.kiln_s[{1}];",
           o.p->name, ax);
  w.line("    kiln_idx kiln_bi = kiln_a0 * kiln_shape.kiln_e[{}];", ax);
  emit_batch_offsets(w, all, ax);
  if (staged) {
    w.line(
        "    if (kiln_tile != blockIdx.x) __syncthreads();  // the last box's shared reads are "
        "done");
    // Every staged input's loads in one walk: more of them in flight.
    w.line("    for (kiln_uidx kiln_f = threadIdx.x; kiln_f < kiln_box; kiln_f += {} * {}) {{", u,
           kTiledThreads);
    for (const auto& o : all)
      if (s.staged(o.k)) {
        w.line("      {} kiln_v_{}[{}];", ctype(s, o.k), o.p->name, u);
        w.line("      kiln_uidx kiln_at_{}[{}];", o.p->name, u);
        w.line("      bool kiln_ok_{}[{}];", o.p->name, u);
      }
    w.line("#pragma unroll");
    w.line("      for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
    w.line("        const kiln_uidx kiln_g = kiln_f + kiln_u * {};", kTiledThreads);
    for (const auto& o : all) {
      if (!s.staged(o.k)) continue;
      const auto& n = o.p->name;
      w.line("        {{");
      w.line(
          "          const kiln_uidx kiln_q0 = kiln_fastdiv(kiln_g, kiln_w0_{0}.kiln_m, "
          "kiln_w0_{0}.kiln_sh);",
          n);
      w.line(
          "          const kiln_uidx kiln_q1 = kiln_fastdiv(kiln_q0, kiln_w1_{0}.kiln_m, "
          "kiln_w1_{0}.kiln_sh);",
          n);
      w.line(
          "          const kiln_idx kiln_r0 = kiln_idx(kiln_g - kiln_q0 * "
          "kiln_uidx(kiln_w0_{0}.kiln_n));",
          n);
      w.line(
          "          const kiln_idx kiln_r1 = kiln_idx(kiln_q0 - kiln_q1 * "
          "kiln_uidx(kiln_w1_{0}.kiln_n));",
          n);
      w.line("          const kiln_idx kiln_r2 = kiln_idx(kiln_q1);");
      w.line(
          "          kiln_ok_{0}[kiln_u] = kiln_g < kiln_box && (!kiln_w0_{0}.kiln_chunked || "
          "kiln_r0 < kiln_lim) && (!kiln_w1_{0}.kiln_chunked || kiln_r1 < kiln_lim) && "
          "(!kiln_w2_{0}.kiln_chunked || kiln_r2 < kiln_lim);",
          n);
      w.line(
          "          kiln_at_{0}[kiln_u] = kiln_uidx(kiln_r0 * kiln_w0_{0}.kiln_pitch + kiln_r1 * "
          "kiln_w1_{0}.kiln_pitch + kiln_r2 * kiln_w2_{0}.kiln_pitch);",
          n);
      w.line(
          "          if (kiln_ok_{0}[kiln_u]) kiln_v_{0}[kiln_u] = *reinterpret_cast<const {1}*>("
          "kiln_b_{0} + kiln_r0 * kiln_w0_{0}.kiln_st + kiln_r1 * kiln_w1_{0}.kiln_st + kiln_r2 * "
          "kiln_w2_{0}.kiln_st);",
          n, ctype(s, o.k));
      w.line("        }}");
    }
    w.line("      }}");
    w.line("#pragma unroll");
    w.line("      for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
    for (const auto& o : all)
      if (s.staged(o.k))
        w.line(
            "        if (kiln_ok_{0}[kiln_u]) kiln_t_{0}[kiln_at_{0}[kiln_u]] = "
            "kiln_v_{0}[kiln_u];",
            o.p->name);
    w.line("      }}");
    w.line("    }}");
    w.line("    __syncthreads();");
  }
  // The box in its own order: direct operands along lines, staged ones from the shared box.
  w.line("    for (kiln_uidx kiln_f = threadIdx.x; kiln_f < kiln_box; kiln_f += {} * {}) {{", u,
         kTiledThreads);
  for (const auto& o : all) w.line("      {} kiln_r_{}[{}];", ctype(s, o.k), o.p->name, u);
  w.line("      kiln_idx kiln_i[{}], kiln_a[{}], kiln_bc[{}];", u, u, u);
  w.line("      bool kiln_ok[{}];", u);
  w.line("#pragma unroll");
  w.line("      for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("        const kiln_uidx kiln_g = kiln_f + kiln_u * {};", kTiledThreads);
  w.line(
      "        const kiln_uidx kiln_q = kiln_fastdiv(kiln_g, kiln_shape.kiln_m[{0}], "
      "kiln_shape.kiln_s[{0}]);",
      cx);
  w.line(
      "        const kiln_uidx kiln_qa = kiln_fastdiv(kiln_q, kiln_shape.kiln_m[{0}], "
      "kiln_shape.kiln_s[{0}]);",
      bx);
  w.line("        const kiln_idx kiln_c = kiln_idx(kiln_g - kiln_q * kiln_uidx(kiln_nc));");
  w.line("        const kiln_idx kiln_b = kiln_idx(kiln_q - kiln_qa * kiln_uidx(kiln_nb));");
  w.line("        kiln_a[kiln_u] = kiln_idx(kiln_qa);");
  w.line("        kiln_bc[kiln_u] = kiln_b * kiln_pb + kiln_c;");
  w.line("        kiln_ok[kiln_u] = kiln_g < kiln_box && kiln_a[kiln_u] < kiln_lim;");
  w.line(
      "        kiln_i[kiln_u] = kiln_bi + kiln_a[kiln_u] * kiln_shape.kiln_e[{}] + kiln_b * "
      "kiln_shape.kiln_e[{}] + kiln_c * kiln_shape.kiln_e[{}];",
      ax, bx, cx);
  w.line("        if (kiln_ok[kiln_u]) {{");
  for (const auto& o : all) {
    if (!o.load) continue;
    const auto& n = o.p->name;
    if (s.staged(o.k))
      w.line(
          "          kiln_r_{0}[kiln_u] = kiln_t_{0}[kiln_a[kiln_u] * kiln_pa + kiln_bc[kiln_u]];",
          n);
    else
      w.line(
          "          kiln_r_{0}[kiln_u] = *reinterpret_cast<const {1}*>(kiln_b_{0} + "
          "kiln_a[kiln_u] * kiln_p_{0}.kiln_s[{2}] + kiln_b * kiln_p_{0}.kiln_s[{3}] + kiln_c * "
          "kiln_p_{0}.kiln_s[{4}]);",
          n, ctype(s, o.k), ax, bx, cx);
  }
  w.line("        }}");
  w.line("      }}");
  w.line("#pragma unroll");
  w.line("      for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", u);
  w.line("        if (!kiln_ok[kiln_u]) continue;");
  w.line("        {}", body_call(def, s, "kiln_i[kiln_u]", [](int, const Param& p) {
           return fmt::format("kiln_r_{}[kiln_u]", p.name);
         }));
  bool any_out = false;
  for (const auto& o : all)
    if (o.p->is_output) {
      if (!any_out) {
        // The output's place from its coordinates again (cheaper in registers than keeping
        // each element's offset).
        w.line("        const kiln_uidx kiln_g = kiln_f + kiln_u * {};", kTiledThreads);
        w.line(
            "        const kiln_uidx kiln_q = kiln_fastdiv(kiln_g, kiln_shape.kiln_m[{0}], "
            "kiln_shape.kiln_s[{0}]);",
            cx);
        w.line("        const kiln_idx kiln_c = kiln_idx(kiln_g - kiln_q * kiln_uidx(kiln_nc));");
        w.line("        const kiln_idx kiln_b = kiln_idx(kiln_q) - kiln_a[kiln_u] * kiln_nb;");
      }
      any_out = true;
      w.line(
          "        *reinterpret_cast<{1}*>(kiln_b_{0} + kiln_a[kiln_u] * kiln_p_{0}.kiln_s[{2}] + "
          "kiln_b * kiln_p_{0}.kiln_s[{3}] + kiln_c * kiln_p_{0}.kiln_s[{4}]) = "
          "kiln_r_{0}[kiln_u];",
          o.p->name, ctype(s, o.k), ax, bx, cx);
    }
  w.line("      }}");
  w.line("    }}");
  w.line("  }}");
}

}  // namespace

std::size_t tiled_shared_bytes(const ElementwiseSpec& s) {
  std::size_t bytes = 0;
  for (int k = 0; k < s.nparams; ++k)
    if (s.kind(k) == OperandKind::array && s.staged(k))
      bytes += std::size_t(tiled_shared_elements(s)) * s.param_dtype(k).itemsize();
  return bytes;
}

bool output_needs_load(const ElementwiseDefinition& def, int k) {
  return !writes_before_reading(def.operation, def.output(k).name, other_user_code(def));
}

AbiArg elementwise_arg(const ElementwiseSpec& s, int k, bool is_output) {
  if (k == s.nparams) return {.kind = AbiKind::index};
  if (k == s.nparams + 1) return {.kind = AbiKind::loop_dims, .ndim = s.ndim};
  const auto& o = s.params[std::size_t(k)];
  const dtype t = s.param_dtype(k);
  switch (s.kind(k)) {
    case OperandKind::scalar:
      return {.kind = AbiKind::value, .type = t};
    case OperandKind::uniform:
      return {.kind = AbiKind::pointer, .type = t};
    case OperandKind::raw_array:
      return {.kind = AbiKind::raw_array,
              .type = t,
              .ndim = o.raw_ndim,
              .contiguous = o.raw_contiguous != 0};
    case OperandKind::array:
    default:
      if (s.layout != Layout::contiguous)
        return {.kind = AbiKind::strided, .type = t, .ndim = s.ndim};
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
  } else if (s.layout == Layout::packed) {
    emit_packed(w, def, s);
  } else {
    w.line("  const kiln_uidx kiln_tid = kiln_uidx(blockIdx.x) * blockDim.x + threadIdx.x;");
    w.line("  const kiln_uidx kiln_nthreads = kiln_uidx(gridDim.x) * blockDim.x;");
    if (s.layout == Layout::strided)
      emit_strided(w, def, s);
    else if (s.layout == Layout::gathered)
      emit_gathered(w, def, s);
    else if (s.layout == Layout::interleaved)
      emit_interleaved(w, def, s);
    else
      emit_contiguous(w, def, s);
  }
  w.user("after_loop", def.after_loop);
  w.line("}}");
  return w.take();
}

}  // namespace kiln::codegen
