#include "kiln/codegen/reduction_emitter.hpp"

#include <fmt/format.h>

#include <functional>

#include "kiln/codegen/device_header.hpp"
#include "kiln/codegen/launch_config.hpp"
#include "kiln_codegen_device_sources.hpp"
#include "lane_group_rows.hpp"
#include "source_writer.hpp"

namespace kiln::codegen {
namespace {

constexpr int kUnroll = 4;  // vectors (or elements) loaded per thread before they are reduced
// outer kernels' blocks have at most this many threads (the shared tree holds one each)
constexpr int kOuterMaxThreads = kOuterMaxBlock;

struct Emit {
  SourceWriter& w;
  const ReductionDefinition& def;
  const ReductionSpec& s;

  const Param& param(int k) const { return def.params[std::size_t(k)]; }
  std::string_view ctype(int k) const { return s.param_dtype(k).device_type(); }
  bool is_array(int k) const { return s.kind(k) == OperandKind::array; }
  bool has_identity() const { return !def.identity.empty(); }
  bool inner() const {
    return s.strategy != ReductionStrategy::outer && s.strategy != ReductionStrategy::folded;
  }
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
      const bool user_name =
          s.kind(k) == OperandKind::raw_array || (s.kind(k) == OperandKind::scalar && p.raw);
      w.line("    {} {}{},", abi_type(reduction_arg(s, k, p.is_output)), user_name ? "" : "kiln_p_",
             p.name);
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
    w.line(
        "  auto kiln_reduce = [&](const _type_reduce& a, const _type_reduce& b) -> _type_reduce "
        "{{");
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
    // kiln_held: the loop knows the state already holds an element (every element of an
    // unrolled step but its first), a constant once unrolled: no test for emptiness, and a
    // state type's cheaper fold (kiln_fold in kiln_reduction.cuh).
    w.line(
        "  auto kiln_add = [&](kiln_acc& kiln_x, const _type_reduce& kiln_v, bool kiln_held = "
        "false) {{");
    if (has_identity()) {
      w.line(
          "    kiln_x.v = kiln_held ? kiln_fold(kiln_x.v, kiln_v, kiln_reduce) : "
          "kiln_reduce(kiln_x.v, kiln_v);");
    } else {
      w.line("    kiln_x.v = (kiln_held || kiln_x.has) ? kiln_reduce(kiln_x.v, kiln_v) : kiln_v;");
      w.line("    kiln_x.has = true;");
    }
    w.line("  }};");
    w.line("  auto kiln_combine = [&](kiln_acc& kiln_x, const kiln_acc& kiln_y) {{");
    if (has_identity())
      w.line("    kiln_x.v = kiln_reduce(kiln_x.v, kiln_y.v);");
    else
      w.line("    if (kiln_y.has) kiln_add(kiln_x, kiln_y.v);");
    w.line("  }};");
    std::string outs = "_type_reduce a, const kiln_idx _i";
    for (int k = def.nin; k < s.nparams; ++k)
      if (!param(k).raw) outs += fmt::format(", {}& {}", ctype(k), param(k).name);
    w.line("  auto kiln_post = [&]({}) {{", outs);
    w.line("    (void)a; (void)_i;");
    w.user("post_map_expr", def.post_map_expr, "  ;};");
    // A partial `kiln_d` lanes down; with an identity `has` is always true and stays put (a
    // sum's tree moves one word a step, not two).
    w.line("  auto kiln_shfl_acc = [&](const kiln_acc& kiln_x, int kiln_d, int kiln_width) {{");
    if (has_identity()) {
      w.line("    kiln_acc kiln_r;");
      w.line("    kiln_r.v = kiln_shfl_down(kiln_x.v, kiln_d, kiln_width);");
      w.line("    kiln_r.has = true;");
      w.line("    return kiln_r;");
    } else {
      w.line("    return kiln_shfl_down(kiln_x, kiln_d, kiln_width);");
    }
    w.line("  }};");
    w.line("  auto kiln_warp_reduce = [&](kiln_acc kiln_x) {{");
    // A large state (moments, argmax's pair) merges in many instructions (moments: divisions):
    // the tree as a loop costs nothing beside the row's loads and halves NVRTC's time
    // (var_mean float64 193 -> 95 ms); small states stay unrolled.
    w.line("#pragma unroll (sizeof(kiln_acc) > 16 ? 1 : 5)");
    w.line(
        "    for (int kiln_d = 16; kiln_d > 0; kiln_d >>= 1) kiln_combine(kiln_x, "
        "kiln_shfl_acc(kiln_x, kiln_d, 32));");
    w.line("    return kiln_x;");
    w.line("  }};");
    w.line("  __shared__ __align__(16) unsigned char kiln_smem_raw[32 * sizeof(kiln_acc)];");
    w.line("  kiln_acc* const kiln_smem = reinterpret_cast<kiln_acc*>(kiln_smem_raw);");
    w.line(
        "  [[maybe_unused]] auto kiln_block_reduce = [&](kiln_acc kiln_x) {{  // thread 0: the "
        "block's");
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
  int last() const { return all_ndim() - 1; }
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
  }

  // A walker over a row's reduced elements (or vectors): a thread starts at `start` and steps
  // by `step`; the position is (run kiln_r, offset kiln_o in the run), the run being the last
  // reduced dim, so stepping costs adds and one compare, never a division.
  bool runs() const { return s.red_ndim > 1; }
  // Rows peeled to 16-byte vectors (red_contiguous 2): kiln_head elements come before the
  // row's first vector.
  bool peeled() const { return s.red_contiguous == 2 && !runs(); }
  const char* head() const { return peeled() ? "kiln_head + " : ""; }
  // Runs read in aligned 16-byte windows (red_contiguous 3): inner_windows.
  bool windowed() const { return s.red_contiguous == 3 && inner(); }
  void walker_setup(std::string_view ind, std::string_view start, std::string_view step, int per) {
    if (!runs()) return;
    w.line("{}const kiln_uidx kiln_L = kiln_uidx(kiln_shape.kiln_v[{}]) / {};", ind, last(), per);
    walker_start(ind, start, step);
  }
  // The walker over `kiln_L` vectors (or windows) a run, from `start` by `step`.
  void walker_start(std::string_view ind, std::string_view start, std::string_view step) {
    w.line("{}const kiln_uidx kiln_Ls = kiln_L ? kiln_L : 1;", ind);
    w.line("{}kiln_uidx kiln_r = kiln_uidx({}) / kiln_Ls;", ind, start);
    w.line("{}kiln_uidx kiln_o = kiln_uidx({}) - kiln_r * kiln_Ls;", ind, start);
    w.line(
        "{}const kiln_uidx kiln_sr = kiln_uidx({}) / kiln_Ls, kiln_so = kiln_uidx({}) - kiln_sr * "
        "kiln_Ls;",
        ind, step, step);
  }
  void walker_advance(std::string_view ind) {
    if (!runs()) return;
    w.line("{}kiln_o += kiln_so; kiln_r += kiln_sr;", ind);
    w.line("{}if (kiln_o >= kiln_Ls) {{ kiln_o -= kiln_Ls; ++kiln_r; }}", ind);
  }
  // kiln_ro_<name>: byte offset of the walker's run (kiln_r) per array input.
  void run_offsets(std::string_view ind) {
    if (!runs()) return;
    if (s.red_ndim == 2) {
      array_inputs([&](int, const Param& p) {
        w.line("{0}const kiln_idx kiln_ro_{1} = kiln_idx(kiln_r) * kiln_p_{1}.kiln_s[{2}];", ind,
               p.name, int(s.out_ndim));
      });
      return;
    }
    w.line("{}kiln_uidx kiln_rr = kiln_r;", ind);
    array_inputs([&](int, const Param& p) { w.line("{}kiln_idx kiln_ro_{} = 0;", ind, p.name); });
    for (int d = last() - 1; d > s.out_ndim; --d) {
      w.line("{}{{ const kiln_uidx kiln_e = kiln_uidx(kiln_shape.kiln_v[{}]);", ind, d);
      w.line("{}  const kiln_idx kiln_c = kiln_idx(kiln_rr % kiln_e); kiln_rr /= kiln_e;", ind);
      array_inputs([&](int, const Param& p) {
        w.line("{0}  kiln_ro_{1} += kiln_c * kiln_p_{1}.kiln_s[{2}];", ind, p.name, d);
      });
      w.line("{}}}", ind);
    }
    array_inputs([&](int, const Param& p) {
      w.line("{0}kiln_ro_{1} += kiln_idx(kiln_rr) * kiln_p_{1}.kiln_s[{2}];", ind, p.name,
             int(s.out_ndim));
    });
  }
  // The position along the reduced axes (C order) of the walker's element (vector) `o`.
  std::string walker_j(std::string_view o, int per) const {
    const std::string off = per > 1 ? fmt::format("{}({}) * {}", head(), o, per) : std::string(o);
    if (!runs()) return off;
    return fmt::format("kiln_r * kiln_uidx(kiln_shape.kiln_v[{}]) + {}", last(), off);
  }
  // Address of input p's element (vector) at the walker's position, offset `o` in the run.
  std::string element_address(int k, const Param& p, std::string_view o, int per) const {
    const std::string base = fmt::format("kiln_p_{}.kiln_p + kiln_oo_{}{}", p.name, p.name,
                                         runs() ? " + kiln_ro_" + p.name : std::string());
    if (s.red_contiguous)
      return fmt::format("reinterpret_cast<const {}*>({}) + {}kiln_idx({}) * {}", ctype(k), base,
                         per > 1 ? head() : "", o, per);
    return fmt::format("reinterpret_cast<const {}*>({} + kiln_idx({}) * kiln_p_{}.kiln_s[{}])",
                       ctype(k), base, o, p.name, last());
  }

  // `held`: a condition, constant once unrolled, that the accumulator holds an element.
  std::string map_call(std::string_view acc, std::string_view row, std::string_view j,
                       const std::function<std::string(int, const Param&)>& value,
                       std::string_view held = {}) const {
    std::string call = fmt::format("kiln_add({}, kiln_map(kiln_idx({}), kiln_idx({})", acc, row, j);
    for (int k = 0; k < def.nin; ++k) {
      const Param& p = param(k);
      if (p.raw) continue;
      call += ", " + (s.kind(k) == OperandKind::scalar ? "kiln_p_" + p.name : value(k, p));
    }
    return call + (held.empty() ? std::string("));") : fmt::format("), {});", held));
  }

  void post_store(std::string_view ind, std::string_view acc, std::string_view row,
                  std::string_view out_extra = {}) {
    std::string call = fmt::format("kiln_post({}.v, kiln_idx({})", acc, row);
    for (int k = def.nin; k < s.nparams; ++k) {
      const Param& p = param(k);
      if (!p.raw)
        call += fmt::format(
            ", *reinterpret_cast<{}*>(kiln_p_{}.kiln_p + kiln_oo_{}{})", ctype(k), p.name, p.name,
            out_extra.empty()
                ? std::string()
                : fmt::format(" + {} * kiln_p_{}.kiln_s[{}]", out_extra, p.name, s.out_ndim - 1));
    }
    w.line("{}{});", ind, call);
  }

  // ---- inner strategies: a group of lanes, a block, or several blocks per output row ----
  // Thread `t` of the row's `g` threads: kUnroll loads in flight (vectors along the runs when
  // the inputs are contiguous there), then their elements mapped and added.
  void inner_loop(std::string_view ind, std::string_view t, std::string_view g) {
    if (windowed()) return inner_windows(ind, t, g);
    const int vw = s.red_contiguous ? s.vector_width : 1;
    if (peeled()) {
      array_inputs([&](int k, const Param& p) {
        w.line(
            "{0}const kiln_uidx kiln_head0 = kiln_uidx((16u - unsigned(reinterpret_cast<unsigned "
            "long long>(kiln_p_{1}.kiln_p + kiln_oo_{1}) & 15u)) & 15u) / sizeof({2});",
            ind, p.name, ctype(k));
      });
      w.line(
          "{}const kiln_uidx kiln_head = kiln_head0 < kiln_uidx(kiln_n) ? kiln_head0 : "
          "kiln_uidx(kiln_n);",
          ind);
      w.line("{}const kiln_uidx kiln_nvec = (kiln_uidx(kiln_n) - kiln_head) / {};", ind, vw);
      w.line("{}for (kiln_uidx kiln_j = {}; kiln_j < kiln_head; kiln_j += {}) {{", ind, t, g);
      w.line("{}  {}", ind, map_call("kiln_a", "kiln_row", "kiln_j", [&](int k, const Param& p) {
               return "*(" + element_address(k, p, "kiln_j", 1) + ")";
             }));
      w.line("{}}}", ind);
    } else {
      w.line("{}const kiln_uidx kiln_nvec = kiln_uidx(kiln_n) / {};", ind, vw);
    }
    walker_setup(ind, t, g, vw);
    w.line("{}for (kiln_uidx kiln_q = {}; kiln_q < kiln_nvec; kiln_q += {} * ({})) {{", ind, t,
           kUnroll, g);
    array_inputs([&](int k, const Param& p) {
      w.line("{}  {} kiln_v_{}[{}][{}];", ind, ctype(k), p.name, kUnroll, vw);
    });
    w.line("{}  kiln_uidx kiln_jj[{}];", ind, kUnroll);
    w.line("#pragma unroll");
    w.line("{}  for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", ind, kUnroll);
    w.line("{}    const kiln_uidx kiln_qu = kiln_q + kiln_u * ({});", ind, g);
    w.line("{}    if (kiln_qu < kiln_nvec) {{", ind);
    std::string in2 = std::string(ind) + "      ";
    run_offsets(in2);
    const std::string o = runs() ? "kiln_o" : "kiln_qu";
    w.line("{}kiln_jj[kiln_u] = {};", in2, walker_j(o, vw));
    array_inputs([&](int k, const Param& p) {
      if (vw > 1)
        w.line("{}kiln_load<{}>(kiln_v_{}[kiln_u], {});", in2, vw, p.name,
               element_address(k, p, o, vw));
      else
        w.line("{}kiln_v_{}[kiln_u][0] = *({});", in2, p.name, element_address(k, p, o, 1));
    });
    w.line("{}    }}", ind);
    walker_advance(std::string(ind) + "    ");
    w.line("{}  }}", ind);
    w.line("#pragma unroll");
    w.line("{}  for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", ind, kUnroll);
    w.line("{}    if (kiln_q + kiln_u * ({}) < kiln_nvec) {{", ind, g);
    w.line("#pragma unroll");
    w.line("{}      for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", ind, vw);
    w.line("{}        {}", ind,
           map_call(
               "kiln_a", "kiln_row", "kiln_jj[kiln_u] + kiln_k",
               [](int, const Param& p) { return fmt::format("kiln_v_{}[kiln_u][kiln_k]", p.name); },
               "kiln_u + kiln_k > 0"));
    w.line("{}      }}", ind);
    w.line("{}    }}", ind);
    w.line("{}  }}", ind);
    w.line("{}}}", ind);
    if (vw > 1 && !runs()) {  // one run: the elements past the last whole vector
      w.line(
          "{}for (kiln_uidx kiln_j = {}kiln_nvec * {} + {}; kiln_j < kiln_uidx(kiln_n); kiln_j += "
          "{}) {{",
          ind, head(), vw, t, g);
      w.line("{}  {}", ind, map_call("kiln_a", "kiln_row", "kiln_j", [&](int k, const Param& p) {
               return "*(" + element_address(k, p, "kiln_j", 1) + ")";
             }));
      w.line("{}}}", ind);
    }
  }

  // Runs in aligned 16-byte windows (red_contiguous 3: one array input, runs of any length and
  // alignment, e.g. the 7 x 7 planes of NCHW batch statistics): a run of L elements whose
  // first sits h elements past a 16-byte boundary spans at most (L + 2F - 2) / F windows of F
  // elements; window o holds the run's elements o * F - h ... o * F - h + F - 1, those outside
  // [0, L) skipped. A window is loaded only when it holds an element of the run, so it never
  // leaves the run's 16-byte granules. One load per F elements where the runs' length or
  // alignment gave one per element: sum over (0, 1, 3) of (354, 480, 8, 49) float16 read 2
  // bytes per load.
  void inner_windows(std::string_view ind, std::string_view t, std::string_view g) {
    const int f = s.vector_width;
    // 1-byte elements: two windows in flight, not four (64 mapped elements a step doubled
    // NVRTC's time for 32 bytes more in flight).
    const int unroll = f >= 16 ? 2 : kUnroll;
    w.line("{}const kiln_uidx kiln_Lr = kiln_uidx(kiln_shape.kiln_v[{}]);", ind, last());
    w.line("{}const kiln_uidx kiln_L = (kiln_Lr + {}) / {};", ind, 2 * f - 2, f);
    if (runs()) {
      w.line("{}const kiln_uidx kiln_nvec = kiln_uidx(kiln_n) / (kiln_Lr ? kiln_Lr : 1) * kiln_L;",
             ind);
      walker_start(ind, t, g);
    } else {
      w.line("{}const kiln_uidx kiln_nvec = kiln_uidx(kiln_n) ? kiln_L : 0;", ind);
    }
    w.line("{}for (kiln_uidx kiln_q = {}; kiln_q < kiln_nvec; kiln_q += {} * ({})) {{", ind, t,
           unroll, g);
    array_inputs([&](int k, const Param& p) {
      w.line("{}  {} kiln_v_{}[{}][{}];", ind, ctype(k), p.name, unroll, f);
    });
    w.line("{}  kiln_idx kiln_e[{}];  // the window's first element in its run (may be < 0)", ind,
           unroll);
    w.line("{}  kiln_uidx kiln_jj[{}];  // the run's first element in the row", ind, unroll);
    w.line("#pragma unroll");
    w.line("{}  for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", ind, unroll);
    w.line("{}    const kiln_uidx kiln_qu = kiln_q + kiln_u * ({});", ind, g);
    w.line("{}    kiln_e[kiln_u] = kiln_idx(kiln_Lr);", ind);
    w.line("{}    kiln_jj[kiln_u] = 0;", ind);
    w.line("{}    if (kiln_qu < kiln_nvec) {{", ind);
    const std::string in2 = std::string(ind) + "      ";
    run_offsets(in2);
    const std::string o = runs() ? "kiln_o" : "kiln_qu";
    array_inputs([&](int k, const Param& p) {
      w.line("{}const char* const kiln_s = kiln_p_{}.kiln_p + kiln_oo_{}{};", in2, p.name, p.name,
             runs() ? " + kiln_ro_" + p.name : std::string());
      w.line(
          "{}const kiln_idx kiln_h = kiln_idx(unsigned(reinterpret_cast<unsigned long "
          "long>(kiln_s) & 15u) / sizeof({}));",
          in2, ctype(k));
      w.line("{}const kiln_idx kiln_e0 = kiln_idx({}) * {} - kiln_h;", in2, o, f);
      if (runs()) w.line("{}kiln_jj[kiln_u] = kiln_r * kiln_Lr;", in2);
      w.line("{}if (kiln_e0 < kiln_idx(kiln_Lr)) {{", in2);
      w.line("{}  kiln_e[kiln_u] = kiln_e0;", in2);
      w.line("{}  kiln_load<{}>(kiln_v_{}[kiln_u], reinterpret_cast<const {}*>(kiln_s) + kiln_e0);",
             in2, f, p.name, ctype(k));
      w.line("{}}}", in2);
    });
    w.line("{}    }}", ind);
    walker_advance(std::string(ind) + "    ");
    w.line("{}  }}", ind);
    w.line("#pragma unroll");
    w.line("{}  for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", ind, unroll);
    w.line("#pragma unroll");
    w.line("{}    for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", ind, f);
    w.line("{}      const kiln_idx kiln_ek = kiln_e[kiln_u] + kiln_k;", ind);
    w.line("{}      if (kiln_ek >= 0 && kiln_ek < kiln_idx(kiln_Lr))", ind);
    w.line("{}        {}", ind,
           map_call("kiln_a", "kiln_row", "kiln_jj[kiln_u] + kiln_uidx(kiln_ek)",
                    [](int, const Param& p) {
                      return fmt::format("kiln_v_{}[kiln_u][kiln_k]", p.name);
                    }));
    w.line("{}    }}", ind);
    w.line("{}  }}", ind);
    w.line("{}}}", ind);
  }

  void inner() {
    const char* ind = "    ";
    if (s.strategy == ReductionStrategy::inner_warp) {
      open_lane_group_rows(w);
      out_offsets(ind, "kiln_live ? kiln_row : 0");
      w.line("    kiln_acc kiln_a = kiln_init();");
      w.line("    if (kiln_live) {{");
      inner_loop("      ", "kiln_t", "kiln_lanes");
      w.line("    }}");
      w.line("    for (int kiln_d = int(kiln_lanes) >> 1; kiln_d > 0; kiln_d >>= 1)");
      w.line("      kiln_combine(kiln_a, kiln_shfl_acc(kiln_a, kiln_d, int(kiln_lanes)));");
      w.line("    if (kiln_live && kiln_t == 0) {{");
      post_store("      ", "kiln_a", "kiln_row");
      w.line("    }}");
      w.line("  }}");
      return;
    }
    if (!s.split) {
      w.line(
          "  for (kiln_uidx kiln_row = blockIdx.x; kiln_row < kiln_uidx(kiln_m); kiln_row += "
          "gridDim.x) {{");
      out_offsets(ind, "kiln_row");
      w.line("    kiln_acc kiln_a = kiln_init();");
      w.line("    {{");
      inner_loop("      ", "threadIdx.x", "blockDim.x");
      w.line("    }}");
      w.line("    kiln_a = kiln_block_reduce(kiln_a);");
      w.line("    if (threadIdx.x == 0) {{");
      post_store("      ", "kiln_a", "kiln_row");
      w.line("    }}");
      w.line("  }}");
      return;
    }
    // Split: the grid is exactly M * S blocks; block b works on part b % S of row b / S.
    w.line("  const kiln_uidx kiln_parts = gridDim.x / kiln_uidx(kiln_m);");
    w.line(
        "  const kiln_uidx kiln_row = blockIdx.x / kiln_parts, kiln_part = blockIdx.x % "
        "kiln_parts;");
    w.line(
        "  const kiln_uidx kiln_t = kiln_part * blockDim.x + threadIdx.x, kiln_g = kiln_parts * "
        "blockDim.x;");
    w.line("  {{");
    out_offsets(ind, "kiln_row");
    w.line("    kiln_acc kiln_a = kiln_init();");
    w.line("    {{");
    inner_loop("      ", "kiln_t", "kiln_g");
    w.line("    }}");
    w.line("    kiln_a = kiln_block_reduce(kiln_a);");
    w.line("    kiln_acc* const kiln_ws = reinterpret_cast<kiln_acc*>(kiln_ws_bytes);");
    w.line("    __shared__ bool kiln_last;");
    w.line("    if (threadIdx.x == 0) {{");
    w.line("      kiln_ws[kiln_row * kiln_parts + kiln_part] = kiln_a;");
    w.line("      __threadfence();");
    w.line(
        "      kiln_last = atomicInc(kiln_sem + kiln_row, unsigned(kiln_parts) - 1u) == "
        "unsigned(kiln_parts) - 1u;");
    w.line("    }}");
    w.line("    __syncthreads();");
    w.line("    if (kiln_last) {{");
    w.line("      __threadfence();");
    w.line("      kiln_acc kiln_b = kiln_init();");
    w.line("      for (kiln_uidx kiln_q = threadIdx.x; kiln_q < kiln_parts; kiln_q += blockDim.x)");
    w.line("        kiln_combine(kiln_b, kiln_load_cg(kiln_ws + kiln_row * kiln_parts + kiln_q));");
    w.line("      kiln_b = kiln_block_reduce(kiln_b);");
    w.line("      if (threadIdx.x == 0) {{");
    post_store("        ", "kiln_b", "kiln_row");
    w.line("      }}");
    w.line("    }}");
    w.line("  }}");
  }

  // ---- folded: the input streamed flat, positions of its period folded per block ----
  // The loop's dims are (kept..., reduced...) with the first reduced dim outermost in memory
  // and every other dim inside its stride P (the period): element e of the dense input is
  // position e % P, whose row and place in the row's inner reduced box never change. The grid
  // (a multiple of the fold unit) steps vector_width * threads elements, whole periods, so each
  // thread's vector_width accumulators keep their positions from the first vector to the last:
  // 16-byte loads of consecutive addresses across the warp whatever the rows' length or
  // alignment. (1101277, 61) float32 summed over axis 0 read a misaligned 4-byte element a
  // lane; (354, 480, 8, 49) float16 over (0, 1, 3) read runs of 98 bytes in windows.
  std::string elem_stride(int k, int d) const {
    return fmt::format("kiln_idx(kiln_p_{}.kiln_s[{}] / kiln_idx(sizeof({})))", param(k).name, d,
                       ctype(k));
  }
  int folded_input() const {
    int in = -1;
    array_inputs([&](int k, const Param&) { in = in < 0 ? k : in; });
    return in;
  }
  // kiln_<var> += the element offset (in the period) of coordinate `idx` over loop dims
  // [from, to), C order.
  void period_offset(std::string_view ind, std::string_view var, std::string_view idx, int from,
                     int to) {
    const int k = folded_input();
    w.line("{}kiln_idx {} = 0;", ind, var);
    if (from >= to) return;
    w.line("{}{{ kiln_uidx kiln_rem = {};", ind, idx);
    for (int d = to - 1; d > from; --d) {
      w.line("{}  {{ const kiln_uidx kiln_e = kiln_uidx(kiln_shape.kiln_v[{}]);", ind, d);
      w.line("{}    {} += kiln_idx(kiln_rem % kiln_e) * {}; kiln_rem /= kiln_e; }}", ind, var,
             elem_stride(k, d));
    }
    w.line("{}  {} += kiln_idx(kiln_rem) * {}; }}", ind, var, elem_stride(k, from));
  }
  // One partial kiln_x per output row kiln_i, kiln_fl lanes a row (kiln_l the lane): `fold`
  // folds the lane's share into kiln_x, the lanes combine by shuffles, and lane 0 runs `sink`.
  void rows_by_lanes(const std::function<void()>& fold, const std::function<void()>& sink) {
    w.line(
        "  for (kiln_uidx kiln_i0 = 0; kiln_i0 < kiln_uidx(kiln_m) * kiln_fl; kiln_i0 += "
        "blockDim.x) {{");
    w.line(
        "    const kiln_uidx kiln_id = kiln_i0 + threadIdx.x, kiln_i = kiln_id / kiln_fl, kiln_l = "
        "kiln_id % kiln_fl;");
    w.line("    kiln_acc kiln_x = kiln_init();");
    fold();
    w.line("    for (int kiln_d = int(kiln_fl) >> 1; kiln_d > 0; kiln_d >>= 1)");
    w.line("      kiln_combine(kiln_x, kiln_shfl_acc(kiln_x, kiln_d, int(kiln_fl)));");
    sink();
    w.line("  }}");
  }
  // Folds `count` slabs of m partials at `src` (slab b's row i at src[b * m + i]) into one
  // partial per row, up to 64 bytes of loads in flight a lane, and runs `sink` with kiln_i and
  // kiln_x.
  void fold_slabs(std::string_view src, std::string_view count, const std::function<void()>& sink) {
    rows_by_lanes(
        [&] {
          w.line("    if (kiln_i < kiln_uidx(kiln_m))");
          w.line(
              "      for (kiln_uidx kiln_b = kiln_l; kiln_b < kiln_uidx({}); kiln_b += kiln_fu * "
              "kiln_fl) {{",
              count);
          w.line("        kiln_acc kiln_t[kiln_fu];");
          w.line("#pragma unroll");
          w.line("        for (int kiln_u = 0; kiln_u < kiln_fu; ++kiln_u)");
          w.line("          if (kiln_b + kiln_u * kiln_fl < kiln_uidx({}))", count);
          w.line(
              "            kiln_t[kiln_u] = kiln_load_cg({} + (kiln_b + kiln_u * kiln_fl) * "
              "kiln_uidx(kiln_m) + kiln_i);",
              src);
          w.line("#pragma unroll");
          w.line("        for (int kiln_u = 0; kiln_u < kiln_fu; ++kiln_u)");
          w.line(
              "          if (kiln_b + kiln_u * kiln_fl < kiln_uidx({})) kiln_combine(kiln_x, "
              "kiln_t[kiln_u]);",
              count);
          w.line("      }}");
        },
        [&] {
          w.line("    if (kiln_i < kiln_uidx(kiln_m) && kiln_l == 0) {{");
          sink();
          w.line("    }}");
        });
  }
  // Whether this block is the last of `count` to reach counter `sem` (the counter wraps back
  // to 0): the others return; the last sees every earlier block's partials.
  void last_block_or_return(std::string_view sem, std::string_view count) {
    w.line("  __threadfence();");
    w.line("  __syncthreads();");
    w.line(
        "  if (threadIdx.x == 0) kiln_last = atomicInc(kiln_sem + {0}, unsigned({1}) - 1u) == "
        "unsigned({1}) - 1u;",
        sem, count);
    w.line("  __syncthreads();");
    w.line("  if (!kiln_last) return;");
    w.line("  __threadfence();");
  }
  void folded() {
    const int vw = s.vector_width, k = folded_input(), od = s.out_ndim;
    const std::string in = param(k).name, t(ctype(k));
    w.line("  __shared__ kiln_acc kiln_fsm[{}];", kFoldPositions);
    w.line("  const kiln_uidx kiln_R = kiln_uidx(kiln_shape.kiln_v[{}]);", od);
    w.line("  const kiln_uidx kiln_nin = kiln_uidx(kiln_n) / kiln_R;");
    w.line("  const kiln_uidx kiln_P = kiln_uidx(kiln_m) * kiln_nin;");
    w.line("  const kiln_uidx kiln_N = kiln_P * kiln_R;");
    w.line("  const kiln_uidx kiln_VT = kiln_uidx(gridDim.x) * blockDim.x * {};", vw);
    w.line("  const kiln_uidx kiln_c = kiln_VT / kiln_P;  // outer rows a step");
    w.line("  const kiln_uidx kiln_e0 = (kiln_uidx(blockIdx.x) * blockDim.x + threadIdx.x) * {};",
           vw);
    w.line("  const {}* const kiln_x_in = reinterpret_cast<const {}*>(kiln_p_{}.kiln_p);", t, t,
           in);
    // Each position's row and place among the row's reduced elements (its outer row aside):
    // only a map that reads _i or _J keeps them.
    w.line("  kiln_idx kiln_fi[{}];", vw);
    w.line("  kiln_uidx kiln_fj[{}];", vw);
    w.line("#pragma unroll");
    w.line("  for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", vw);
    w.line("    const kiln_uidx kiln_r0 = (kiln_e0 + kiln_k) / kiln_P;");
    w.line("    kiln_uidx kiln_q = kiln_e0 + kiln_k - kiln_r0 * kiln_P;");
    w.line("    kiln_idx kiln_row = 0, kiln_jin = 0;");
    // Coordinates by element strides: every dim but the outer reduced one lies in the period.
    for (int d = 0; d < all_ndim(); ++d) {
      if (d == od) continue;
      w.line(
          "    {{ const kiln_idx kiln_c_d = kiln_idx(kiln_q / kiln_uidx({})) % "
          "kiln_idx(kiln_shape.kiln_v[{}]);",
          elem_stride(k, d), d);
      if (d < od)
        w.line("      kiln_row = kiln_row * kiln_idx(kiln_shape.kiln_v[{}]) + kiln_c_d; }}", d);
      else
        w.line("      kiln_jin = kiln_jin * kiln_idx(kiln_shape.kiln_v[{}]) + kiln_c_d; }}", d);
    }
    w.line("    kiln_fi[kiln_k] = kiln_row;");
    w.line("    kiln_fj[kiln_k] = kiln_r0 * kiln_nin + kiln_uidx(kiln_jin);");
    w.line("  }}");
    w.line("  kiln_acc kiln_a[{}];", vw);
    w.line("#pragma unroll");
    w.line("  for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_a[kiln_k] = kiln_init();", vw);
    w.line("  kiln_uidx kiln_s = 0;  // outer rows past each position's first");
    w.line(
        "  for (kiln_uidx kiln_e = kiln_e0; kiln_e < kiln_N; kiln_e += {0} * kiln_VT, kiln_s += "
        "{0} * kiln_c) {{",
        kUnroll);
    w.line("    {} kiln_v[{}][{}];", t, kUnroll, vw);
    w.line("#pragma unroll");
    w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u)", kUnroll);
    w.line(
        "      if (kiln_e + kiln_u * kiln_VT + {} <= kiln_N) kiln_load<{}>(kiln_v[kiln_u], "
        "kiln_x_in + kiln_e + kiln_u * kiln_VT);",
        vw, vw);
    w.line("#pragma unroll");
    w.line("    for (int kiln_u = 0; kiln_u < {}; ++kiln_u)", kUnroll);
    w.line("      if (kiln_e + kiln_u * kiln_VT + {} <= kiln_N)", vw);
    w.line("#pragma unroll");
    w.line("        for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", vw);
    w.line(
        "          {}",
        map_call(
            "kiln_a[kiln_k]", "kiln_fi[kiln_k]",
            "kiln_fj[kiln_k] + (kiln_s + kiln_u * kiln_c) * kiln_nin",
            [](int, const Param&) { return std::string("kiln_v[kiln_u][kiln_k]"); }, "kiln_u > 0"));
    w.line("  }}");
    // The flat input's last, partial vector: the thread whose positions it holds.
    w.line("  {{");
    w.line("    const kiln_uidx kiln_tail = kiln_N / {0} * {0};", vw);
    w.line("    if (kiln_tail < kiln_N && kiln_e0 == kiln_tail % kiln_VT) {{");
    w.line("      const kiln_uidx kiln_st = kiln_tail / kiln_VT * kiln_c;");
    w.line("#pragma unroll");
    w.line("      for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", vw);
    w.line("        if (kiln_tail + kiln_k < kiln_N)");
    w.line("          {}", map_call("kiln_a[kiln_k]", "kiln_fi[kiln_k]",
                                    "kiln_fj[kiln_k] + kiln_st * kiln_nin", [](int, const Param&) {
                                      return std::string("kiln_x_in[kiln_tail + kiln_k]");
                                    }));
    w.line("    }}");
    w.line("  }}");
    // The block's positions (kiln_base on from the period's start), each into one slot, then
    // each row's inner reduced positions into the row's partial.
    w.line("#pragma unroll");
    w.line(
        "  for (int kiln_k = 0; kiln_k < {0}; ++kiln_k) kiln_fsm[threadIdx.x * {0} + kiln_k] = "
        "kiln_a[kiln_k];",
        vw);
    w.line("  __syncthreads();");
    w.line("  const kiln_uidx kiln_BV = blockDim.x * {};", vw);
    w.line("  const kiln_uidx kiln_base = kiln_uidx(blockIdx.x) * kiln_BV % kiln_P;");
    w.line("  for (kiln_uidx kiln_q = threadIdx.x; kiln_q < kiln_P; kiln_q += blockDim.x) {{");
    w.line(
        "    const kiln_uidx kiln_p0 = kiln_q >= kiln_base ? kiln_q - kiln_base : kiln_q + kiln_P "
        "- kiln_base;");
    w.line("    kiln_acc kiln_x = kiln_fsm[kiln_p0];");
    w.line(
        "    for (kiln_uidx kiln_p = kiln_p0 + kiln_P; kiln_p < kiln_BV; kiln_p += kiln_P) "
        "kiln_combine(kiln_x, kiln_fsm[kiln_p]);");
    w.line("    kiln_fsm[kiln_p0] = kiln_x;");
    w.line("  }}");
    w.line("  __syncthreads();");
    // Lanes a row: a power of two up to a warp that the block's threads hold for every row.
    w.line("  kiln_uidx kiln_fl = 1;");
    w.line("  while (kiln_fl < 32 && kiln_fl * 2 * kiln_uidx(kiln_m) <= blockDim.x) kiln_fl *= 2;");
    w.line("  kiln_acc* const kiln_ws = reinterpret_cast<kiln_acc*>(kiln_ws_bytes);");
    rows_by_lanes(
        [&] {
          w.line("    if (kiln_i < kiln_uidx(kiln_m)) {{");
          period_offset("      ", "kiln_ko", "kiln_i", 0, od);
          w.line("      for (kiln_uidx kiln_r = kiln_l; kiln_r < kiln_nin; kiln_r += kiln_fl) {{");
          period_offset("        ", "kiln_ro", "kiln_r", od + 1, all_ndim());
          w.line("        const kiln_uidx kiln_q = kiln_uidx(kiln_ko + kiln_ro);");
          w.line(
              "        kiln_combine(kiln_x, kiln_fsm[kiln_q >= kiln_base ? kiln_q - kiln_base : "
              "kiln_q + kiln_P - kiln_base]);");
          w.line("      }}");
          w.line("    }}");
        },
        [&] {
          w.line(
              "    if (kiln_i < kiln_uidx(kiln_m) && kiln_l == 0) kiln_ws[kiln_uidx(blockIdx.x) * "
              "kiln_uidx(kiln_m) + kiln_i] = kiln_x;");
        });
    // Blocks' partials by groups (the group's last block merges them), then the groups' (the
    // last group's merger): about sqrt(blocks) of each, so that no block waits on many loads
    // (one block folding 130 groups of 61 rows, a load at a time: a third of the kernel).
    w.line("  __shared__ bool kiln_last;");
    w.line("  constexpr int kiln_fit = int(64 / sizeof(kiln_acc));");
    w.line("  constexpr int kiln_fu = kiln_fit < 1 ? 1 : kiln_fit > 8 ? 8 : kiln_fit;");
    w.line("  const kiln_uidx kiln_gsz = kiln_fold_group(gridDim.x);");
    w.line("  const kiln_uidx kiln_groups = (kiln_uidx(gridDim.x) + kiln_gsz - 1) / kiln_gsz;");
    w.line(
        "  const kiln_uidx kiln_grp = kiln_uidx(blockIdx.x) / kiln_gsz, kiln_g0 = kiln_grp * "
        "kiln_gsz;");
    w.line(
        "  const kiln_uidx kiln_gs = kiln_uidx(gridDim.x) - kiln_g0 < kiln_gsz ? "
        "kiln_uidx(gridDim.x) - kiln_g0 : kiln_gsz;");
    last_block_or_return("kiln_grp", "kiln_gs");
    w.line("  kiln_acc* const kiln_ws2 = kiln_ws + kiln_uidx(gridDim.x) * kiln_uidx(kiln_m);");
    fold_slabs("kiln_ws + kiln_g0 * kiln_uidx(kiln_m)", "kiln_gs",
               [&] { w.line("      kiln_ws2[kiln_grp * kiln_uidx(kiln_m) + kiln_i] = kiln_x;"); });
    last_block_or_return("kiln_groups", "kiln_groups");
    fold_slabs("kiln_ws2", "kiln_groups", [&] {
      out_offsets("      ", "kiln_i");
      post_store("      ", "kiln_x", "kiln_i");
    });
  }

  // ---- outer: threads across the output's columns, and down the reduced elements ----
  // Combines the column accumulators of a block's blockDim.y threads into those with
  // threadIdx.y == 0 (a tree in shared memory, one vector component at a time).
  void outer_combine_lambda() {
    const int vw = s.vector_width;
    w.line("  __shared__ kiln_acc kiln_osm[{}];", kOuterMaxThreads);
    w.line("  auto kiln_outer_combine = [&](kiln_acc (&kiln_x)[{}]) {{", vw);
    w.line("    if (blockDim.y == 1) return;");
    w.line("    const kiln_uidx kiln_at = threadIdx.y * blockDim.x + threadIdx.x;");
    w.line("#pragma unroll");
    w.line("    for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", vw);
    w.line("      __syncthreads();");
    w.line("      kiln_osm[kiln_at] = kiln_x[kiln_k];");
    w.line("      __syncthreads();");
    w.line("      for (kiln_uidx kiln_h = blockDim.y >> 1; kiln_h > 0; kiln_h >>= 1) {{");
    w.line("        if (threadIdx.y < kiln_h) {{");
    w.line("          kiln_acc kiln_y = kiln_osm[kiln_at];");
    w.line("          kiln_combine(kiln_y, kiln_osm[kiln_at + kiln_h * blockDim.x]);");
    w.line("          kiln_osm[kiln_at] = kiln_y;");
    w.line("        }}");
    w.line("        __syncthreads();");
    w.line("      }}");
    w.line("      if (threadIdx.y == 0) kiln_x[kiln_k] = kiln_osm[threadIdx.x];");
    w.line("    }}");
    w.line("  }};");
  }

  void outer() {
    const int vw = s.vector_width;
    const char* ind = "  ";
    outer_combine_lambda();
    w.line("  const kiln_uidx kiln_col = (kiln_uidx(blockIdx.x) * blockDim.x + threadIdx.x) * {};",
           vw);
    w.line("  const bool kiln_live = kiln_col < kiln_uidx(kiln_m);");
    if (s.split) {
      w.line("  const kiln_uidx kiln_chunk = (kiln_uidx(kiln_n) + gridDim.y - 1) / gridDim.y;");
      w.line("  const kiln_uidx kiln_jb = kiln_uidx(blockIdx.y) * kiln_chunk;");
      w.line(
          "  const kiln_uidx kiln_je = kiln_jb + kiln_chunk < kiln_uidx(kiln_n) ? kiln_jb + "
          "kiln_chunk : kiln_uidx(kiln_n);");
    } else {
      w.line("  const kiln_uidx kiln_jb = 0, kiln_je = kiln_uidx(kiln_n);");
    }
    out_offsets(ind, "kiln_live ? kiln_col : 0");
    w.line("  kiln_acc kiln_a[{}];", vw);
    w.line("#pragma unroll");
    w.line("  for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_a[kiln_k] = kiln_init();", vw);
    w.line("  if (kiln_live && kiln_jb + threadIdx.y < kiln_je) {{");
    walker_setup("    ", "kiln_jb + threadIdx.y", "blockDim.y", 1);
    // kUnroll rows loaded first, then reduced: the loads stay in flight together whatever
    // branches the reduction takes.
    w.line(
        "    for (kiln_uidx kiln_j = kiln_jb + threadIdx.y; kiln_j < kiln_je; kiln_j += {} * "
        "blockDim.y) {{",
        kUnroll);
    array_inputs([&](int k, const Param& p) {
      w.line("      {} kiln_v_{}[{}][{}];", ctype(k), p.name, kUnroll, vw);
    });
    w.line("#pragma unroll");
    w.line("      for (int kiln_u = 0; kiln_u < {}; ++kiln_u) {{", kUnroll);
    w.line("        if (kiln_j + kiln_u * blockDim.y < kiln_je) {{");
    run_offsets("          ");
    const std::string o = runs() ? "kiln_o" : "(kiln_j + kiln_u * blockDim.y)";
    array_inputs([&](int k, const Param& p) {
      const std::string at = fmt::format(
          "kiln_p_{}.kiln_p + kiln_oo_{}{} + kiln_idx({}) * kiln_p_{}.kiln_s[{}]", p.name, p.name,
          runs() ? " + kiln_ro_" + p.name : std::string(), o, p.name, last());
      if (vw > 1)
        w.line("          kiln_load<{}>(kiln_v_{}[kiln_u], reinterpret_cast<const {}*>({}));", vw,
               p.name, ctype(k), at);
      else
        w.line("          kiln_v_{}[kiln_u][0] = *reinterpret_cast<const {}*>({});", p.name,
               ctype(k), at);
    });
    w.line("        }}");
    walker_advance("        ");
    w.line("      }}");
    w.line("#pragma unroll");
    w.line("      for (int kiln_u = 0; kiln_u < {}; ++kiln_u)", kUnroll);
    w.line("        if (kiln_j + kiln_u * blockDim.y < kiln_je)");
    w.line("#pragma unroll");
    w.line("          for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", vw);
    w.line("            {}",
           map_call(
               "kiln_a[kiln_k]", "kiln_col + kiln_k", "kiln_j + kiln_u * blockDim.y",
               [](int, const Param& p) { return fmt::format("kiln_v_{}[kiln_u][kiln_k]", p.name); },
               "kiln_u > 0"));
    w.line("    }}");
    w.line("  }}");
    w.line("  kiln_outer_combine(kiln_a);");
    if (!s.split) {
      w.line("  if (kiln_live && threadIdx.y == 0) {{");
      w.line("#pragma unroll");
      w.line("    for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", vw);
      post_store("      ", "kiln_a[kiln_k]", "kiln_col + kiln_k", "kiln_k");
      w.line("    }}");
      w.line("  }}");
      return;
    }
    // Split: partials of this part; the last block of the column tile combines every part.
    w.line("  kiln_acc* const kiln_ws = reinterpret_cast<kiln_acc*>(kiln_ws_bytes);");
    w.line("  __shared__ bool kiln_last;");
    w.line("  if (kiln_live && threadIdx.y == 0) {{");
    w.line("#pragma unroll");
    w.line(
        "    for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_ws[kiln_uidx(blockIdx.y) * "
        "kiln_uidx(kiln_m) + kiln_col + kiln_k] = kiln_a[kiln_k];",
        vw);
    w.line("  }}");
    w.line("  __threadfence();");
    w.line("  __syncthreads();");
    w.line("  if (threadIdx.x == 0 && threadIdx.y == 0)");
    w.line("    kiln_last = atomicInc(kiln_sem + blockIdx.x, gridDim.y - 1u) == gridDim.y - 1u;");
    w.line("  __syncthreads();");
    w.line("  if (!kiln_last) return;");
    w.line("  __threadfence();");
    w.line("  kiln_acc kiln_b[{}];", vw);
    w.line("#pragma unroll");
    w.line("  for (int kiln_k = 0; kiln_k < {}; ++kiln_k) kiln_b[kiln_k] = kiln_init();", vw);
    // Several partials' loads in flight per thread: with few column tiles a tile has
    // hundreds of parts, and one load at a time made this block the launch's long tail (mean
    // over (0, 1) of (192, 1255, 256) float32, 1056 parts: 0.46 -> 0.67 of the copy rate).
    // At most 64 bytes of them: 128 raised max's registers from 40 to 55, and the main loop
    // lost a third of its resident blocks.
    w.line("  constexpr int kiln_fit = int(64 / (sizeof(kiln_acc) * {}));", vw);
    w.line("  constexpr int kiln_fu = kiln_fit < 1 ? 1 : kiln_fit > 8 ? 8 : kiln_fit;");
    w.line("  if (kiln_live)");
    w.line(
        "    for (kiln_uidx kiln_q = threadIdx.y; kiln_q < gridDim.y; kiln_q += kiln_fu * "
        "blockDim.y) {{");
    w.line("      kiln_acc kiln_t[kiln_fu][{}];", vw);
    w.line("#pragma unroll");
    w.line("      for (int kiln_u = 0; kiln_u < kiln_fu; ++kiln_u)");
    w.line("        if (kiln_q + kiln_u * blockDim.y < gridDim.y)");
    w.line("#pragma unroll");
    w.line("          for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", vw);
    w.line(
        "            kiln_t[kiln_u][kiln_k] = kiln_load_cg(kiln_ws + (kiln_q + kiln_u * "
        "blockDim.y) * kiln_uidx(kiln_m) + kiln_col + kiln_k);");
    w.line("#pragma unroll");
    w.line("      for (int kiln_u = 0; kiln_u < kiln_fu; ++kiln_u)");
    w.line("        if (kiln_q + kiln_u * blockDim.y < gridDim.y)");
    w.line("#pragma unroll");
    w.line("          for (int kiln_k = 0; kiln_k < {}; ++kiln_k)", vw);
    w.line("            kiln_combine(kiln_b[kiln_k], kiln_t[kiln_u][kiln_k]);");
    w.line("    }}");
    w.line("  kiln_outer_combine(kiln_b);");
    w.line("  if (kiln_live && threadIdx.y == 0) {{");
    w.line("#pragma unroll");
    w.line("    for (int kiln_k = 0; kiln_k < {}; ++kiln_k) {{", vw);
    post_store("      ", "kiln_b[kiln_k]", "kiln_col + kiln_k", "kiln_k");
    w.line("    }}");
    w.line("  }}");
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
    case OperandKind::scalar:
      return {.kind = AbiKind::value, .type = t};
    case OperandKind::raw_array:
      return {.kind = AbiKind::raw_array,
              .type = t,
              .ndim = o.raw_ndim,
              .contiguous = o.raw_contiguous != 0};
    default:
      return {.kind = AbiKind::strided,
              .type = t,
              .ndim = is_output ? s.out_ndim : s.out_ndim + s.red_ndim};
  }
}

int reduction_arg_count(const ReductionSpec& s) { return s.nparams + (s.split ? 5 : 3); }

std::string emit_reduction(const ReductionDefinition& def, const ReductionSpec& s) {
  SourceWriter w(def.name + ".cu");
  // The user's code may name a type no parameter has (a fused expression's float16 map).
  emit_prologue(w, def, s,
                {def.map_expr, def.reduce_expr, def.post_map_expr, def.reduce_type, def.preamble},
                device_source("kiln_reduction"));
  if (def.reduce_type.empty())
    w.line("typedef {} _type_reduce;", s.param_dtype(def.nin).device_type());
  else
    w.line("typedef {} _type_reduce;", def.reduce_type);
  // `has` is false only for a partial that saw no element of a reduction with no identity.
  w.line("struct __align__(8) kiln_acc {{ _type_reduce v; bool has; }};");
  if (s.split) w.line("__device__ unsigned char {}[sizeof(kiln_acc)];", reduction_partial_global);
  Emit e{w, def, s};
  e.signature();
  w.line("  kiln_grid_dependency_wait();");  // see kiln_core.cuh
  w.line(
      "  const kiln_loop_index<kiln_idx> _in_ind{{kiln_idx(kiln_m * kiln_n), 0}}, "
      "_out_ind{{kiln_m, 0}};");
  w.line("  (void)_in_ind; (void)_out_ind;");
  e.lambdas();
  if (s.strategy == ReductionStrategy::outer)
    e.outer();
  else if (s.strategy == ReductionStrategy::folded)
    e.folded();
  else
    e.inner();
  w.line("}}");
  return w.take();
}

}  // namespace kiln::codegen
