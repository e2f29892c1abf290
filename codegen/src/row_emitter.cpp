#include "kiln/codegen/row_emitter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "kiln/codegen/device_header.hpp"
#include "kiln_codegen_device_sources.hpp"
#include "lane_group_rows.hpp"
#include "source_writer.hpp"

namespace kiln::codegen {
namespace {

// Where element_loop calls its body: per vector before its elements, per element, after them.
enum class At { before, each, after };

struct Emit {
  SourceWriter& w;
  const RowDefinition& def;
  const RowSpec& s;

  int nd() const { return s.out_ndim + 1; }
  int vw() const { return s.vector_width; }
  const Param& param(int k) const { return def.params[std::size_t(k)]; }
  std::string_view ctype(int k) const { return s.param_dtype(k).device_type(); }
  bool is_array(int k) const { return s.kind(k) == OperandKind::array; }
  // A streamed row (items 0) is too long for registers: every phase reads it again, from L2
  // while the rows in flight fit there.
  bool streamed() const { return s.items == 0; }
  // A streamed row's outputs pass: its reads are the row's last and its writes are never read
  // back here, so both go evict-first. Measured on an H200, log_softmax of (2097, 32000)
  // float32: 0.285 -> 0.263 ms.
  bool last_pass(std::uint32_t use) const { return streamed() && use == kRowOutputsUse; }
  // Inputs more than one phase (or a phase and the outputs) read: kept in registers.
  bool cached(int j) const {
    const std::uint32_t u = def.leaf_use[std::size_t(j)];
    return !streamed() && is_array(j) && __builtin_popcount(u) > 1;
  }
  bool columns() const { return s.group == kRowColumns; }
  // A row split over a cluster of blocks: kiln_t and kiln_lanes count the cluster's threads
  // (a row's vectors are dealt over all of them), kiln_bt and kiln_bl the block's own (its
  // warps' tree and its shared slots).
  int cluster() const { return s.cluster > 1 ? int(s.cluster) : 1; }
  bool clustered() const { return cluster() > 1; }
  std::string_view block_t() const { return clustered() ? "kiln_bt" : "kiln_t"; }
  std::string_view block_lanes() const { return clustered() ? "kiln_bl" : "kiln_lanes"; }
  // A thread's held slot kiln_i (its vectors past the registers' in shared memory).
  std::string held_slot() const {
    return fmt::format("(kiln_i * {} + {}) * {}", block_lanes(), block_t(), vw());
  }
  // Column rows taken vector_width at a time (kRowColumns with vector_width > 1): a lane group
  // holds that many adjacent rows, element kiln_k of a vector being row kiln_k's, so each
  // reduction keeps a state per row and every position along the rows is one element.
  bool across() const { return columns() && vw() > 1; }
  // Elements a vector moves along the row: the vector's width, one for rows taken across.
  int along() const { return across() ? 1 : vw(); }
  bool shifted() const { return s.shifted != 0; }
  // Where a row's windows end: its elements, past its shift (kiln_h) when shifted.
  std::string_view end() const { return shifted() ? "kiln_end" : "kiln_uidx(kiln_n)"; }
  // The load of leaf j's vector (window) at kiln_e0 into `dst`.
  std::string load_line(int j, std::string_view dst, bool last) const {
    if (shifted())
      return fmt::format(
          "kiln_window_load<{}, {}>({}, {}, kiln_idx(kiln_e0), kiln_p_{}.kiln_s[{}], "
          "kiln_h, kiln_idx(kiln_n));",
          last ? "true" : "false", vw(), dst, row_pointer(j), param(j).name, nd() - 1);
    return fmt::format("{}<{}>({}, {}, kiln_idx(kiln_e0), kiln_p_{}.kiln_s[{}]);", row_load(last),
                       vw(), dst, row_pointer(j), param(j).name, nd() - 1);
  }
  // The load of a row's vector: a column row's takes the row's step (any), the others' unit
  // steps or none; `last`: a streamed row's last pass (evict-first).
  std::string_view row_load(bool last) const {
    if (columns()) return "kiln_column_load";
    return last ? "kiln_row_load_last" : "kiln_row_load";
  }
  bool reads(int j, std::uint32_t use) const { return (def.leaf_use[std::size_t(j)] & use) != 0; }
  static std::uint32_t phase_use(int p) { return 1u << p; }
  std::string row_pointer(int k) const {
    return fmt::format("kiln_p_{0}.kiln_p + kiln_oo_{0}", param(k).name);
  }

  // A last-phase reduction whose input (cast to its part's T) the outputs compute again
  // (softmax's exp(x - max)): each thread keeps its elements' values in registers, so the
  // outputs read them instead of computing them twice. Only a call-shaped input with the
  // exact text (a whole subexpression: the printer parenthesizes everything), kept in the
  // registers of a cached input it takes over (kept_into) or in 64 bytes a thread of its own.
  bool keeps(std::size_t r) const {
    const auto& red = def.reductions[r];
    // Rows held partly in shared memory recompute it: a kept value there would be a store and
    // a load per element.
    if (streamed() || s.shared || red.phase != def.nphases - 1) return false;
    const std::string cast = fmt::format("kiln_cast<{}>(", red.part.in.device_type());
    if (!red.input.starts_with(cast)) return false;
    bool used = false;
    for (const auto& o : def.outputs) used = used || o.find(red.input) != std::string::npos;
    if (!used) return false;
    return kept_into(r) >= 0 || int(s.items) * vw() * int(red.part.in.itemsize()) <= 64;
  }
  // The cached input whose registers reduction r's kept values overwrite, or -1: one of the
  // same type that the kept input reads and nothing reads after it (the phase has no other
  // reduction, the outputs read only the kept values). Softmax's x: 8 float4 a thread stay
  // 32 registers, where kept values of their own took 103 registers against 73 and ran slower
  // than computing exp twice (H200, (16384, 4096): 0.174 ms against 0.148).
  int kept_into(std::size_t r) const {
    const auto& red = def.reductions[r];
    for (std::size_t q = 0; q < def.reductions.size(); ++q)
      if (q != r && def.reductions[q].phase == red.phase) return -1;
    for (int j = 0; j < def.nin; ++j) {
      if (!cached(j) || s.param_dtype(j) != red.part.in || !names(red.input, param(j).name))
        continue;
      bool read_after = false;
      for (const auto& o : def.outputs)
        read_after = read_after || names(with_kept(o, r, "kiln_kept"), param(j).name);
      if (!read_after) return j;
    }
    return -1;
  }
  std::string kept_value(std::size_t r) const {
    const int j = kept_into(r);
    return j >= 0 ? fmt::format("kiln_c_{}[kiln_i][kiln_k]", j)
                  : fmt::format("kiln_x{}[kiln_i][kiln_k]", r);
  }
  static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
  // Whether `text` holds the identifier `name` (not as part of a longer one).
  static bool names(const std::string& text, const std::string& name) {
    for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      const std::size_t end = at + name.size();
      if ((at == 0 || !name_char(text[at - 1])) && (end == text.size() || !name_char(text[end])))
        return true;
    }
    return false;
  }
  // `t` with reduction r's input replaced by `kept`.
  std::string with_kept(std::string t, std::size_t r, const std::string& kept) const {
    const std::string& in = def.reductions[r].input;
    for (std::size_t at = t.find(in); at != std::string::npos;) {
      if (at && name_char(t[at - 1])) {  // inside a longer name
        at = t.find(in, at + 1);
        continue;
      }
      t.replace(at, in.size(), kept);
      at = t.find(in, at + kept.size());
    }
    return t;
  }
  // An output's text with every kept input replaced by its registers.
  std::string output_text(int o) const {
    std::string t = def.outputs[std::size_t(o)];
    for (std::size_t r = 0; r < def.reductions.size(); ++r)
      if (keeps(r)) t = with_kept(std::move(t), r, kept_value(r));
    return t;
  }

  void signature() {
    // The loader gives kernels with this global the shared memory their launches ask for.
    if (s.shared) w.line("extern \"C\" __device__ int kiln_dynamic_shared_memory = 1;");
    // A wide block holds 512 threads of rows of 4096+ elements: alone on its SM, a row's
    // phases (reductions, barriers) leave memory idle; two blocks overlap them. Measured on an
    // H200, softmax of (4096, 16384) float32: 0.62 -> 0.89 of the copy rate (64 registers, a
    // few bytes of spills, against 71). Narrower blocks keep the one bound: asking them for more
    // blocks spilled layer norm's registers and ran slower (0.88 -> 0.82).
    // Column rows: bound so their registers leave room for 8 blocks an SM where a lane holds up
    // to 8 words of a row (32 registers, no spills on sm_90), else 4 (64); unbounded, the
    // compiler took 62-177 registers a thread. Measured on an H200 (layout sweep), softmax over
    // 21 channels of (32, 21, 256, 256) float32, fraction of the copy rate: 4 lanes of 8
    // elements 0.42 unbounded, 0.49 bound to 32 registers; 2 lanes of 16 bound to 64, 0.56.
    if (columns()) {
      int widest = 1;
      for (int k = 0; k < s.nparams; ++k)
        if (is_array(k)) widest = std::max(widest, int(s.param_dtype(k).itemsize()));
      // Rows taken across count the words of all their rows (at most 32: 8 float4 a lane)
      // and their accumulators and results (row_state_words): under 32 registers float16
      // standardizing over 4 channels (4 rows of 4 a lane) spilled 92 bytes, float32
      // standardizing over 2 (4 rows of 2) 20. Measured on an H200 (layout sweep), 32 -> 64:
      // float16 standardizing over 4 channels of (256, 4, 256, 256) 0.35 -> 0.38 of the copy
      // rate, float16 softmax over 2 of (128, 2, 512, 512) 0.56 -> 0.57.
      const int words =
          int(s.items) * vw() * widest / 4 + (vw() > 1 ? vw() * row_state_words(def) : 0);
      w.line("extern \"C\" __global__ void __launch_bounds__(256, {}) {}(", words <= 8 ? 8 : 4,
             def.name);
    } else if (s.wide) {
      // A row split over a cluster: the cluster's size is the kernel's own (a plain launch).
      const std::string dims = clustered() ? fmt::format("KILN_CLUSTER_DIMS({}) ", cluster()) : "";
      w.line("extern \"C\" __global__ void {}__launch_bounds__({}, 2) {}(", dims, kMaxRowLanes,
             def.name);
    } else {
      w.line("extern \"C\" __global__ void __launch_bounds__({}) {}(", s.group ? 256 : kMaxRowLanes,
             def.name);
    }
    for (int k = 0; k < s.nparams; ++k)
      w.line("    {} {}{},", abi_type(row_arg(s, k)), is_array(k) ? "kiln_p_" : "", param(k).name);
    w.line("    {} kiln_m,", abi_type(row_arg(s, s.nparams)));
    w.line("    {} kiln_n,", abi_type(row_arg(s, s.nparams + 1)));
    w.line("    {} kiln_shape) {{", abi_type(row_arg(s, s.nparams + 2)));
  }

  void out_offsets(std::string_view ind) {
    w.line("{}kiln_uidx kiln_rem = kiln_live ? kiln_row : 0;", ind);
    for (int k = 0; k < s.nparams; ++k)
      if (is_array(k)) w.line("{}kiln_idx kiln_oo_{} = 0;", ind, param(k).name);
    for (int d = s.out_ndim - 1; d >= 0; --d) {
      w.line("{}{{ const kiln_uidx kiln_e = kiln_uidx(kiln_shape.kiln_v[{}]);", ind, d);
      w.line("{}  const kiln_idx kiln_c = kiln_idx({});", ind,
             d ? "kiln_rem % kiln_e" : "kiln_rem");
      if (d) w.line("{}  kiln_rem /= kiln_e;", ind);
      for (int k = 0; k < s.nparams; ++k)
        if (is_array(k))
          w.line("{0}  kiln_oo_{1} += kiln_c * kiln_p_{1}.kiln_s[{2}];", ind, param(k).name, d);
      w.line("{}}}", ind);
    }
  }

  // The elements of vector kiln_i a phase (or the outputs, `use`) reads: registers for cached
  // leaves, a load for the others; `body` runs before the vector's elements, once per element
  // kiln_k with in<j> defined, and after them.
  template <class Body>
  void element_loop(std::string_view ind0, std::uint32_t use, Body&& body) {
    std::string ind(ind0);
    auto emit_loads = [&](std::string_view at, const char* slot) {
      for (int j = 0; j < def.nin; ++j)
        if (is_array(j) && !cached(j) && reads(j, use))
          w.line("{}{}", at, load_line(j, fmt::format("kiln_u_{}{}", j, slot), last_pass(use)));
    };
    if (streamed()) {
      int bytes = 0;
      for (int j = 0; j < def.nin; ++j)
        if (is_array(j) && reads(j, use)) bytes += vw() * int(s.param_dtype(j).itemsize());
      // Chunks of `loads` vectors a thread: the chunk's loads first, in flight together, then
      // its elements (a plain loop kept one load in flight). Up to 48 bytes a thread: more
      // spilled registers under the wide blocks' bound of 64. Measured on an H200,
      // log_softmax of (2097, 32000) float32, chunks of 1, 2, 3, 4, 8: 0.265, 0.198, 0.192,
      // 0.234 (spilling), 0.487 ms.
      const int loads = std::clamp(48 / std::max(bytes, 1), 1, 3);
      w.line(
          "{}for (kiln_uidx kiln_b = kiln_t * {}; kiln_b < {}; kiln_b += kiln_lanes "
          "* {}) {{",
          ind, vw(), end(), vw() * loads);
      for (int j = 0; j < def.nin; ++j)
        if (is_array(j) && !cached(j) && reads(j, use))
          w.line("{}  {} kiln_u_{}[{}][{}];", ind, ctype(j), j, loads, vw());
      for (int pass = 0; pass < 2; ++pass) {
        w.line("#pragma unroll");
        w.line("{}  for (int kiln_i = 0; kiln_i < {}; ++kiln_i) {{", ind, loads);
        w.line("{}    const kiln_uidx kiln_e0 = kiln_b + kiln_uidx(kiln_i) * kiln_lanes * {};", ind,
               vw());
        w.line("{}    if (kiln_live && kiln_e0 < {}) {{", ind, end());
        if (pass == 0) {
          emit_loads(ind + "      ", "[kiln_i]");
          w.line("{}    }}", ind);
          w.line("{}  }}", ind);
        }
      }
      ind += "  ";
    } else {
      w.line("#pragma unroll");
      w.line("{}for (int kiln_i = 0; kiln_i < {}; ++kiln_i) {{", ind, int(s.items));
      w.line("{}  const kiln_uidx kiln_e0 = (kiln_uidx(kiln_i) * kiln_lanes + kiln_t) * {};", ind,
             along());
      w.line("{}  if (kiln_live && kiln_e0 < {}) {{", ind, end());
      for (int j = 0; j < def.nin; ++j)
        if (is_array(j) && !cached(j) && reads(j, use))
          w.line("{}    {} kiln_u_{}[{}];", ind, ctype(j), j, vw());
      emit_loads(ind + "    ", "");
    }
    elements(ind, use, false, body);
    if (streamed()) w.line("{}}}", ind0);
    if (!s.shared) return;
    // The vectors past the registers' (lanes * items): cached leaves from shared memory, each
    // thread its own slots (written by the same thread, so no barrier).
    // Not unrolled: unrolled by two, layer norm's phases spilled under the wide bound.
    w.line("#pragma unroll 1");
    w.line("{}for (kiln_uidx kiln_i = 0; kiln_i < kiln_held; ++kiln_i) {{", ind);
    w.line("{}  const kiln_uidx kiln_e0 = ((kiln_uidx({}) + kiln_i) * kiln_lanes + kiln_t) * {};",
           ind, int(s.items), vw());
    w.line("{}  if (kiln_live && kiln_e0 < {}) {{", ind, end());
    for (int j = 0; j < def.nin; ++j) {
      if (!is_array(j) || !reads(j, use)) continue;
      w.line("{}    {} kiln_{}_{}[{}];", ind, ctype(j), cached(j) ? "h" : "u", j, vw());
      if (cached(j))
        w.line("{}    kiln_load<{}>(kiln_h_{}, kiln_sh_{} + {});", ind, vw(), j, j, held_slot());
    }
    emit_loads(ind + "    ", "");
    elements(ind, use, true, body);
  }

  // Rows taken across: in<nin + r>, row kiln_k's result of each reduction before phase p.
  void row_results(const std::string& ind, int p) {
    for (std::size_t r = 0; r < def.reductions.size(); ++r)
      if (def.reductions[r].phase < p)
        w.line("{}[[maybe_unused]] const kiln_r{}::U in{} = kiln_y{}[kiln_k];", ind, r,
               def.nin + int(r), r);
  }

  // The elements of one vector (the caller opened its loop and its `if`, which this closes):
  // body before, per element (in<j> defined from registers, shared memory or a load), after.
  template <class Body>
  void elements(const std::string& ind, std::uint32_t use, bool held, Body&& body) {
    body(ind + "    ", At::before);
    w.line("#pragma unroll");
    w.line("{}    for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", ind, vw());
    if (shifted()) {
      // The element's place in the row; a window's elements outside it are skipped.
      w.line("{}      const kiln_idx kiln_ei = kiln_idx(kiln_e0 + kiln_uidx(kiln_k) - kiln_h);",
             ind);
      w.line("{}      const bool kiln_ok = kiln_uidx(kiln_ei) < kiln_uidx(kiln_n);", ind);
    }
    for (int j = 0; j < def.nin; ++j) {
      if (!is_array(j) || !reads(j, use)) continue;
      if (held && cached(j))
        w.line("{}      const {} {} = kiln_h_{}[kiln_k];", ind, ctype(j), param(j).name, j);
      else
        w.line("{}      const {} {} = kiln_{}_{}{}[kiln_k];", ind, ctype(j), param(j).name,
               cached(j) ? "c" : "u", j, cached(j) || streamed() ? "[kiln_i]" : "");
    }
    if (across()) {
      // Each element is its own row's: the results of the phases before, that row's.
      row_results(ind + "      ", use == kRowOutputsUse ? def.nphases : __builtin_ctz(use));
      if (use == kRowOutputsUse)
        for (std::size_t i = 0; i < def.divisors.size(); ++i)
          w.line("{}      const kiln_row_divisor& kiln_dv{} = kiln_dvs{}[kiln_k];", ind, i, i);
    }
    body(ind + "      ", At::each);
    w.line("{}    }}", ind);
    body(ind + "    ", At::after);
    w.line("{}  }}", ind);
    w.line("{}}}", ind);
  }

  // Reduction r's ddof as its post takes it: the parameter, or 0.
  std::string ddof_arg(std::size_t r) const {
    const int d = def.reductions[r].ddof;
    return d >= 0 ? fmt::format("(long long){}", param(d).name) : "0";
  }

  void phase(int p) {
    const char* ind = "    ";
    const auto& reds = def.reductions;
    for (std::size_t r = 0; r < reds.size(); ++r) {
      if (reds[r].phase != p) continue;
      if (across()) {
        w.line("{}kiln_r{}::acc kiln_a{}[{}];", ind, r, r, vw());
        w.line("#pragma unroll");
        w.line("{}for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_a{}[kiln_k] = kiln_r{}::init();",
               ind, vw(), r, r);
      } else {
        w.line("{}kiln_r{}::acc kiln_a{} = kiln_r{}::init();", ind, r, r, r);
      }
      if (keeps(r) && kept_into(r) < 0)
        w.line("{}kiln_r{}::T kiln_x{}[{}][{}];", ind, r, r, int(s.items), vw());
    }
    const std::string_view guard = shifted() ? "if (kiln_ok) " : "";
    const std::string_view position = shifted()  ? "kiln_ei"
                                      : across() ? "kiln_e0"
                                                 : "(kiln_e0 + kiln_k)";
    const std::string_view k = across() ? "[kiln_k]" : "";
    element_loop(ind, phase_use(p), [&](const std::string& in, At at) {
      if (at != At::each) return;
      for (std::size_t r = 0; r < reds.size(); ++r) {
        if (reds[r].phase != p) continue;
        if (keeps(r)) {
          const std::string kept = kept_value(r);
          w.line("{}{} = {};", in, kept, reds[r].input);
          w.line("{}{}kiln_r{}::add(kiln_a{}{}, kiln_r{}::map({}, (long long){}));", in, guard, r,
                 r, k, r, kept, position);
        } else {
          w.line("{}{}kiln_r{}::add(kiln_a{}{}, kiln_r{}::map({}, (long long){}));", in, guard, r,
                 r, k, r, reds[r].input, position);
        }
      }
    });
    // Lanes combine toward lane 0 of their warp (or group); a block's warps then go through
    // shared memory, where warp 0 combines them; every lane of a row then takes the same
    // total, so every lane computes the outputs from the same value.
    auto each = [&](auto&& f) {
      for (std::size_t r = 0; r < reds.size(); ++r)
        if (reds[r].phase == p) f(r);
    };
    // Trees as loops (not unrolled): the same speed here, and far less code for NVRTC. Rows
    // taken across: a tree per row, each lane group's shuffles for all of them.
    if (across()) {
      each([&](std::size_t r) {
        w.line("#pragma unroll");
        w.line("{}for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", ind, vw());
        w.line("#pragma unroll 1");
        w.line("{}  for (int kiln_d = int(kiln_lanes) >> 1; kiln_d > 0; kiln_d >>= 1)", ind);
        w.line(
            "{}    kiln_r{}::combine(kiln_a{}[kiln_k], kiln_shfl_down(kiln_a{}[kiln_k], kiln_d, "
            "int(kiln_lanes)));",
            ind, r, r, r);
        w.line("{}  kiln_a{}[kiln_k] = kiln_shfl_first(kiln_a{}[kiln_k], int(kiln_lanes));", ind, r,
               r);
        w.line("{}}}", ind);
        w.line("{}kiln_r{}::U kiln_y{}[{}];", ind, r, r, vw());
        w.line("#pragma unroll");
        w.line("{}for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", ind, vw());
        w.line(
            "{}  kiln_r{}::post(kiln_a{}[kiln_k].v, kiln_y{}[kiln_k], {}, (long long)kiln_n, 1);",
            ind, r, r, r, ddof_arg(r));
      });
      return;
    }
    each([&](std::size_t r) {
      w.line("#pragma unroll 1");
      w.line("{}for (int kiln_d = {}; kiln_d > 0; kiln_d >>= 1)", ind,
             s.group ? "int(kiln_lanes) >> 1" : "16");
      w.line("{}  kiln_r{}::combine(kiln_a{}, kiln_shfl_down(kiln_a{}, kiln_d, {}));", ind, r, r, r,
             s.group ? "int(kiln_lanes)" : "32");
    });
    if (s.group) {
      each([&](std::size_t r) {
        w.line("{}kiln_a{} = kiln_shfl_first(kiln_a{}, int(kiln_lanes));", ind, r, r);
      });
    } else {
      const auto t = block_t();
      each([&](std::size_t r) {
        w.line("{}if (({} & 31) == 0) kiln_sm{}[{} >> 5] = kiln_a{};", ind, t, r, t, r);
      });
      w.line("{}__syncthreads();", ind);
      w.line("{}if ({} < 32) {{", ind, t);
      each([&](std::size_t r) {
        w.line("{}  kiln_a{} = {} < ({} >> 5) ? kiln_sm{}[{}] : kiln_r{}::init();", ind, r, t,
               block_lanes(), r, t, r);
        w.line("#pragma unroll 1");
        w.line("{}  for (int kiln_d = 16; kiln_d > 0; kiln_d >>= 1)", ind);
        w.line("{}    kiln_r{}::combine(kiln_a{}, kiln_shfl_down(kiln_a{}, kiln_d));", ind, r, r,
               r);
        w.line("{}  if ({} == 0) kiln_sm{}[32] = kiln_a{};", ind, t, r, r);
      });
      w.line("{}}}", ind);
      if (!clustered()) {
        w.line("{}__syncthreads();", ind);
        each([&](std::size_t r) { w.line("{}kiln_a{} = kiln_sm{}[32];", ind, r, r); });
      } else {
        // The cluster's blocks: every block merges all their totals in rank order (the same
        // value in each), then waits until every block has read them before a later phase or
        // row writes its total again (or the block exits). One barrier a phase (totals in two
        // slots by row parity, one barrier before the blocks exit) measured no faster on an
        // H200: softmax of (2048, 50257) float32 0.650, 0.644 -> 0.626, 0.629 of the copy rate.
        w.line("{}kiln_cluster_sync();", ind);
        each([&](std::size_t r) {
          w.line("{}kiln_a{} = kiln_r{}::init();", ind, r, r);
          w.line("#pragma unroll 1");
          w.line("{}for (unsigned kiln_q = 0; kiln_q < {}; ++kiln_q)", ind, cluster());
          w.line("{}  kiln_r{}::combine(kiln_a{}, *kiln_cluster_peer(&kiln_sm{}[32], kiln_q));",
                 ind, r, r, r);
        });
        w.line("{}kiln_cluster_sync();", ind);
      }
    }
    each([&](std::size_t r) {
      w.line("{}kiln_r{}::U kiln_y{};", ind, r, r);
      w.line("{}kiln_r{}::post(kiln_a{}.v, kiln_y{}, {}, (long long)kiln_n, 1);", ind, r, r, r,
             ddof_arg(r));
      w.line("{}const kiln_r{}::U in{} = kiln_y{};", ind, r, def.nin + int(r), r);
    });
  }

  // The outputs' divisors (kiln_row_divisor), made once a row after the last phase: for rows
  // taken across, one a row of the lane's.
  void divisors() {
    const auto& dv = def.divisors;
    if (dv.empty()) return;
    if (!across()) {
      for (std::size_t i = 0; i < dv.size(); ++i)
        w.line("    const kiln_row_divisor kiln_dv{}({});", i, dv[i]);
      return;
    }
    for (std::size_t i = 0; i < dv.size(); ++i)
      w.line("    kiln_row_divisor kiln_dvs{}[{}];", i, vw());
    w.line("#pragma unroll");
    w.line("    for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", vw());
    row_results("      ", def.nphases);
    for (std::size_t i = 0; i < dv.size(); ++i)
      w.line("      kiln_dvs{}[kiln_k] = kiln_row_divisor({});", i, dv[i]);
    w.line("    }}");
  }

  void outputs() {
    const char* ind = "    ";
    divisors();
    element_loop(ind, kRowOutputsUse, [&](const std::string& in, At at) {
      for (int o = 0; o < def.nout; ++o) {
        const int k = def.nin + o;
        if (at == At::before) {
          w.line("{}{} kiln_s{}[{}];", in, ctype(k), o, vw());
        } else if (at == At::each) {
          w.line("{}kiln_s{}[kiln_k] = {};", in, o, output_text(o));
        } else if (columns()) {
          w.line("{}kiln_column_store<{}>({}, kiln_idx(kiln_e0), kiln_p_{}.kiln_s[{}], kiln_s{});",
                 in, vw(), row_pointer(k), param(k).name, nd() - 1, o);
        } else if (shifted()) {
          w.line(
              "{}kiln_window_store<{}, {}>({}, kiln_idx(kiln_e0), kiln_h, kiln_idx(kiln_n), "
              "kiln_s{});",
              in, last_pass(kRowOutputsUse) ? "true" : "false", vw(), row_pointer(k), o);
        } else {
          w.line("{}{}<{}>(reinterpret_cast<{}*>({}) + kiln_e0, kiln_s{});", in,
                 last_pass(kRowOutputsUse) ? "kiln_row_store_last" : "kiln_store", vw(), ctype(k),
                 row_pointer(k), o);
        }
      }
    });
  }

  // The row loop of a row split over a cluster: a row a cluster, the clusters striding over
  // kiln_m rows; every block of a cluster runs every iteration (the cluster's barriers).
  void open_cluster_rows() {
    const int c = cluster();
    w.line("  const kiln_uidx kiln_bt = threadIdx.x, kiln_bl = blockDim.x;");
    w.line(
        "  const kiln_uidx kiln_t = kiln_uidx(kiln_cluster_rank()) * blockDim.x + threadIdx.x, "
        "kiln_lanes = blockDim.x * {};",
        c);
    w.line("  for (kiln_uidx kiln_row = kiln_uidx(blockIdx.x) / {0}; kiln_row < kiln_uidx(kiln_m);",
           c);
    w.line("       kiln_row += kiln_uidx(gridDim.x) / {}) {{", c);
    w.line("    const bool kiln_live = true;");
  }

  void body() {
    if (!s.group)
      for (std::size_t r = 0; r < def.reductions.size(); ++r)
        w.line("  __shared__ kiln_r{}::acc kiln_sm{}[33];", r,
               r);  // a slot per warp, then the total
    if (s.shared) {
      // Vectors a thread holds in shared memory (the launch gives lanes * kiln_held of each
      // cached leaf, in leaf order), past the items a thread holds in registers.
      w.line("  extern __shared__ __align__(16) unsigned char kiln_dynamic[];");
      // Shifted rows: windows for the widest shift (the plan's shared bytes count the same).
      if (shifted())
        w.line("  const kiln_uidx kiln_nvec = (kiln_uidx(kiln_n) + {}) / {};", 2 * vw() - 2, vw());
      else
        w.line("  const kiln_uidx kiln_nvec = kiln_uidx(kiln_n) / {};", vw());
      // Threads of the row: the block's, or its cluster's.
      const std::string threads =
          clustered() ? fmt::format("(blockDim.x * {})", cluster()) : "blockDim.x";
      w.line("  const kiln_uidx kiln_in_registers = kiln_uidx({}) * {};", int(s.items), threads);
      w.line(
          "  const kiln_uidx kiln_held = kiln_nvec > kiln_in_registers ? (kiln_nvec - "
          "kiln_in_registers + {0} - 1) / {0} : 0;",
          threads);
      int offset = 0;  // bytes of one vector slot of the leaves before
      for (int j = 0; j < def.nin; ++j) {
        if (!cached(j)) continue;
        w.line(
            "  {0}* const kiln_sh_{1} = reinterpret_cast<{0}*>(kiln_dynamic + kiln_held * "
            "blockDim.x * {2});",
            ctype(j), j, offset);
        offset += vw() * int(s.param_dtype(j).itemsize());
      }
    }
    if (clustered())
      open_cluster_rows();
    else
      open_lane_group_rows(w);
    out_offsets("    ");
    if (shifted()) {
      const int o = def.nin;  // the first output
      w.line("    const unsigned kiln_h = kiln_shift_of<{}, {}>({});", vw(), ctype(o),
             row_pointer(o));
      w.line("    const kiln_uidx kiln_end = kiln_uidx(kiln_n) + kiln_h;");
    }
    bool copies = false;
    for (int j = 0; j < def.nin && s.shared; ++j) {
      if (!cached(j)) continue;
      // Before the registers' loads: a leaf that moves along the row (a step of one element)
      // by copies that hold no registers (vectors of 4 bytes or more), all in flight together;
      // otherwise (a per-row value, vectors of 1 or 2 bytes) through registers, by fours.
      const int bytes = vw() * int(s.param_dtype(j).itemsize());
      const std::string step = fmt::format("kiln_p_{}.kiln_s[{}]", param(j).name, nd() - 1);
      auto fill = [&](std::string_view ind, bool copy) {
        w.line("#pragma unroll {}", copy ? 1 : 4);
        w.line("{}for (kiln_uidx kiln_i = 0; kiln_i < kiln_held; ++kiln_i) {{", ind);
        w.line(
            "{}  const kiln_uidx kiln_e0 = ((kiln_uidx({}) + kiln_i) * kiln_lanes + kiln_t) * {};",
            ind, int(s.items), vw());
        w.line("{}  if (kiln_live && kiln_e0 < {}) {{", ind, end());
        const std::string slot = fmt::format("kiln_sh_{} + {}", j, held_slot());
        if (copy) {
          w.line("{}    kiln_row_copy<{}>({}, reinterpret_cast<const {}*>({}) + {});", ind, bytes,
                 slot, ctype(j), row_pointer(j),
                 shifted() ? "(kiln_idx(kiln_e0) - kiln_idx(kiln_h))" : "kiln_e0");
        } else {
          w.line("{}    {} kiln_v[{}];", ind, ctype(j), vw());
          w.line("{}    {}", ind, load_line(j, "kiln_v", false));
          w.line("{}    kiln_store<{}>({}, kiln_v);", ind, vw(), slot);
        }
        w.line("{}  }}", ind);
        w.line("{}}}", ind);
      };
      if (bytes >= 4) {
        copies = true;
        // Shifted: copied only where the leaf sits as the row's shift says (whole windows).
        if (shifted())
          w.line("    if ({} != 0 && kiln_shift_of<{}, {}>({}) == kiln_h) {{", step, vw(), ctype(j),
                 row_pointer(j));
        else
          w.line("    if ({} != 0) {{", step);
        fill("      ", true);
        w.line("    }} else {{");
        fill("      ", false);
        w.line("    }}");
      } else {
        fill("    ", false);
      }
    }
    for (int j = 0; j < def.nin; ++j) {
      if (!cached(j)) continue;
      w.line("    {} kiln_c_{}[{}][{}];", ctype(j), j, int(s.items), vw());
      w.line("#pragma unroll");
      w.line("    for (int kiln_i = 0; kiln_i < {}; ++kiln_i) {{", int(s.items));
      w.line("      const kiln_uidx kiln_e0 = (kiln_uidx(kiln_i) * kiln_lanes + kiln_t) * {};",
             along());
      w.line("      if (kiln_live && kiln_e0 < {})", end());
      w.line("        {}", load_line(j, fmt::format("kiln_c_{}[kiln_i]", j), false));
      w.line("    }}");
    }
    if (copies) w.line("    kiln_row_wait();");
    for (int p = 0; p < def.nphases; ++p) phase(p);
    outputs();
    w.line("  }}");
  }
};

}  // namespace

AbiArg row_arg(const RowSpec& s, int k) {
  if (k == s.nparams || k == s.nparams + 1) return {.kind = AbiKind::index};
  if (k == s.nparams + 2) return {.kind = AbiKind::dims, .ndim = s.out_ndim + 1};
  const dtype t = s.param_dtype(k);
  if (s.kind(k) == OperandKind::scalar) return {.kind = AbiKind::value, .type = t};
  return {.kind = AbiKind::strided, .type = t, .ndim = s.out_ndim + 1};
}

int row_arg_count(const RowSpec& s) { return s.nparams + 3; }

std::string emit_rows(const RowDefinition& def, const RowSpec& s) {
  SourceWriter w(def.name + ".cu");
  std::string support(device_source("kiln_reduction"));
  support += device_source("kiln_rows");
  if (s.cluster > 1) support += device_source("kiln_cluster");
  std::vector<ReductionPart> rparts;
  for (const auto& r : def.reductions) rparts.push_back(r.part);
  const std::string parts = reduction_parts_text(rparts);
  emit_prologue(w, def, s, {def.preamble, parts}, support);
  w.raw(parts);
  Emit e{w, def, s};
  e.signature();
  e.body();
  w.line("}}");
  return w.take();
}

}  // namespace kiln::codegen
