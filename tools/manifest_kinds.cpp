// The manifest kinds: kind name -> function(entry) -> compile requests, each through its
// kind's ahead-of-time entry point; a new kind is one function and one row.
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/kiln.hpp"
#include "manifest.hpp"

namespace kiln::tools {
namespace {
using nlohmann::json;

// Parameter indices fit the 64 bits of a tiled layout's staged mask.
constexpr int kMaxParams = 64;

// Reads an entry's fields by name and type; what() of its errors names the field. finish()
// rejects any field nobody asked for (a typo must not silently compile something else).
class Fields {
 public:
  /// `known`: every field of this kind, checked first so a misspelt field is named as such
  /// (not reported as a missing one).
  Fields(const json& j, std::initializer_list<const char*> known) : j_(j) {
    std::set<std::string> all{"kind", "comment"};
    all.insert(known.begin(), known.end());
    for (const auto& [k, v] : j_.items())
      if (!all.count(k)) {
        std::string list;
        for (const auto& u : all) list += (list.empty() ? "" : ", ") + u;
        throw kiln::ValueError("unknown field '" + k + "' (fields of this kind: " + list + ")");
      }
    take("kind"), take("comment");
  }

  bool has(const char* f) const { return j_.contains(f); }

  std::string str(const char* f, bool required, std::string def = {}) {
    const json* v = take(f);
    if (!v) return required ? missing(f) : def;
    if (!v->is_string()) bad(f, "a string");
    return v->get<std::string>();
  }
  bool boolean(const char* f, bool def) {
    const json* v = take(f);
    if (!v) return def;
    if (!v->is_boolean()) bad(f, "true or false");
    return v->get<bool>();
  }
  /// An integer in [lo, hi] (checked_int: never wrapped).
  int integer(const char* f, int def, long long lo, long long hi) {
    const json* v = take(f);
    if (!v) return def;
    return checked_int(*v, "field '" + std::string(f) + "'", lo, hi);
  }
  std::vector<std::string> strings(const char* f) {
    const json* v = take(f);
    if (!v) return {};
    if (!v->is_array() ||
        !std::all_of(v->begin(), v->end(), [](const json& x) { return x.is_string(); }))
      bad(f, "a list of strings");
    return v->get<std::vector<std::string>>();
  }
  /// A list of integers, each in [lo, hi].
  std::vector<int> ints(const char* f, long long lo, long long hi) {
    const json* v = take(f);
    if (!v) return {};
    if (!v->is_array()) bad(f, "a list of integers");
    std::vector<int> out;
    for (std::size_t k = 0; k < v->size(); ++k)
      out.push_back(checked_int(
          (*v)[k], "field '" + std::string(f) + "[" + std::to_string(k) + "]'", lo, hi));
    return out;
  }
  const json* take(const char* f) {
    used_.insert(f);
    auto it = j_.find(f);
    return it == j_.end() ? nullptr : &*it;
  }
  void finish() const {
    for (const auto& [k, v] : j_.items())
      if (!used_.count(k)) {
        std::string known;
        for (const auto& u : used_) known += (known.empty() ? "" : ", ") + u;
        throw kiln::ValueError("unknown field '" + k + "' (fields of this kind: " + known + ")");
      }
  }
  [[noreturn]] static void bad(const std::string& f, const char* what) {
    throw kiln::ValueError("field '" + f + "' must be " + what);
  }

 private:
  [[noreturn]] std::string missing(const char* f) {
    throw kiln::ValueError("missing field '" + std::string(f) + "'");
  }
  const json& j_;
  std::set<std::string> used_;
};

std::vector<kiln::dtype> dtype_list(const json& v, const std::string& field) {
  if (!v.is_array() || v.empty()) Fields::bad(field, "a non-empty list of dtype names");
  std::vector<kiln::dtype> out;
  for (const auto& d : v) {
    if (!d.is_string()) Fields::bad(field, "a list of dtype names such as \"float32\"");
    kiln::dtype t;
    if (!kiln::dtype::try_from_name(d.get<std::string>(), t))
      throw kiln::TypeError("unknown dtype '" + d.get<std::string>() + "' in '" + field +
                            "' (NumPy names: bool, int8..int64, uint8..uint64, float16, bfloat16, "
                            "float32, float64, complex64, complex128)");
    out.push_back(t);
  }
  return out;
}

std::vector<PrecompileJob> expand_elementwise(const Manifest&, const ManifestEntry& e, int arch) {
  Fields f(e.json,
           {"name", "in_params", "out_params", "operation", "preamble", "loop_prep", "after_loop",
            "reduce_dims", "no_return", "return_tuple", "options", "dtypes", "scalar_inputs",
            "uniform_inputs", "max_ndim", "index64", "raw_ndim", "layout"});
  elementwise_kernel_options opts;
  const std::string in = f.str("in_params", true), out = f.str("out_params", true);
  const std::string op = f.str("operation", true), name = f.str("name", true);
  opts.preamble = f.str("preamble", false);
  opts.loop_prep = f.str("loop_prep", false);
  opts.after_loop = f.str("after_loop", false);
  opts.reduce_dims = f.boolean("reduce_dims", true);
  opts.no_return = f.boolean("no_return", false);        // call-side only: same kernels
  opts.return_tuple = f.boolean("return_tuple", false);  // call-side only: same kernels
  opts.options = f.strings("options");

  aot_target base;
  base.scalar_inputs = f.ints("scalar_inputs", 0, kMaxParams - 1);
  base.uniform_inputs = f.ints("uniform_inputs", 0, kMaxParams - 1);
  base.max_ndim = f.integer("max_ndim", base.max_ndim, 1, kMaxNdim);
  base.index64 = f.boolean("index64", base.index64);
  base.raw_ndim = f.integer("raw_ndim", base.raw_ndim, 0, kMaxNdim);
  if (const json* l = f.take("layout")) {
    if (!l->is_object())
      Fields::bad("layout", "an object such as {\"layout\": \"strided\", \"ndim\": 2}");
    Fields lf(*l, {"layout", "ndim", "index_bits", "vector_width", "raw_ndim", "staged",
                   "row_constant", "as_output", "unit_cols", "unit_rows", "long_rows",
                   "two_axis_sides", "runs", "interleave"});
    elementwise_layout exact;
    const std::string kind = lf.str("layout", false, "contiguous");
    if (kind != "contiguous" && kind != "strided" && kind != "tiled" && kind != "gathered" &&
        kind != "packed" && kind != "interleaved")
      throw kiln::ValueError("field 'layout.layout' is '" + kind +
                             "'; it is \"contiguous\", \"strided\", \"tiled\", \"gathered\", "
                             "\"packed\" or \"interleaved\"");
    exact.layout = kind == "strided"       ? codegen::Layout::strided
                   : kind == "tiled"       ? codegen::Layout::tiled
                   : kind == "gathered"    ? codegen::Layout::gathered
                   : kind == "packed"      ? codegen::Layout::packed
                   : kind == "interleaved" ? codegen::Layout::interleaved
                                           : codegen::Layout::contiguous;
    exact.ndim = lf.integer("ndim", 1, 1, kMaxNdim);
    exact.index_bits = lf.integer("index_bits", 32, 32, 64);
    exact.vector_width = lf.integer("vector_width", 1, 1, 16);
    exact.raw_ndim = lf.integer("raw_ndim", base.raw_ndim, 0, kMaxNdim);
    for (int k : lf.ints("staged", 0, kMaxParams - 1)) exact.staged |= std::uint64_t(1) << k;
    for (int k : lf.ints("row_constant", 0, kMaxParams - 1))
      exact.row_constant |= std::uint64_t(1) << k;
    for (int k : lf.ints("as_output", 0, kMaxParams - 1)) exact.as_output |= std::uint64_t(1) << k;
    exact.long_rows = lf.boolean("long_rows", false);
    exact.unit_cols = lf.integer("unit_cols", 1, 1, 16);  // make_spec checks the dtypes
    exact.unit_rows = lf.integer("unit_rows", 1, 1, 8);
    exact.two_axis_sides = lf.integer("two_axis_sides", 0, 0, 3);
    exact.runs = lf.boolean("runs", false);
    exact.interleave = lf.integer("interleave", 0, 0, codegen::kMaxInterleave);
    lf.finish();
    base.only = exact;
  }
  const json* bindings = f.take("dtypes");
  if (!bindings)
    throw kiln::ValueError(
        "missing field 'dtypes' (a list of dtype lists, one per binding to build)");
  f.finish();
  if (!bindings->is_array() || bindings->empty())
    Fields::bad("dtypes", "a non-empty list of dtype lists, e.g. [[\"float32\", \"float32\"]]");
  // One binding may be written flat: ["float32", "float32"].
  const json list = (*bindings)[0].is_string() ? json::array({*bindings}) : *bindings;

  const ElementwiseKernel k(in, out, op, name, opts);
  std::vector<PrecompileJob> jobs;
  for (std::size_t b = 0; b < list.size(); ++b) {
    aot_target t = base;
    t.dtypes = dtype_list(list[b], "dtypes[" + std::to_string(b) + "]");
    for (const auto& spec : k.specs(t)) {
      PrecompileJob job;
      job.request = k.compile_request(spec, arch);
      job.variant = describe(spec);
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

// The dtype bindings of an entry: a list of dtype lists, or one list written flat.
json bindings_of(const json* bindings) {
  if (!bindings)
    throw kiln::ValueError(
        "missing field 'dtypes' (a list of dtype lists, one per binding to build)");
  if (!bindings->is_array() || bindings->empty())
    Fields::bad("dtypes", "a non-empty list of dtype lists, e.g. [[\"float32\", \"float32\"]]");
  return (*bindings)[0].is_string() ? json::array({*bindings}) : *bindings;
}

std::vector<PrecompileJob> expand_reduction(const Manifest&, const ManifestEntry& e, int arch) {
  Fields f(e.json, {"name", "in_params", "out_params", "map_expr", "reduce_expr", "post_map_expr",
                    "identity", "reduce_type", "preamble", "options", "dtypes", "scalar_inputs",
                    "max_ndim", "index64"});
  reduction_kernel_options opts;
  const std::string in = f.str("in_params", true), out = f.str("out_params", true);
  const std::string map = f.str("map_expr", true), reduce = f.str("reduce_expr", true);
  const std::string post = f.str("post_map_expr", true), identity = f.str("identity", false);
  const std::string name = f.str("name", true);
  opts.reduce_type = f.str("reduce_type", false);
  opts.preamble = f.str("preamble", false);
  opts.options = f.strings("options");
  aot_target base;
  base.scalar_inputs = f.ints("scalar_inputs", 0, kMaxParams - 1);
  base.max_ndim = f.integer("max_ndim", base.max_ndim, 1, kMaxNdim);
  base.index64 = f.boolean("index64", base.index64);
  const json list = bindings_of(f.take("dtypes"));
  f.finish();
  const ReductionKernel k(in, out, map, reduce, post, identity, name, opts);
  std::vector<PrecompileJob> jobs;
  for (std::size_t b = 0; b < list.size(); ++b) {
    aot_target t = base;
    t.dtypes = dtype_list(list[b], "dtypes[" + std::to_string(b) + "]");
    for (auto& req : k.compile_requests(t, arch)) {
      PrecompileJob job;
      job.request = std::move(req);
      job.variant = "binding " + std::to_string(b);
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

std::vector<PrecompileJob> expand_raw(const Manifest& m, const ManifestEntry& e, int arch) {
  Fields f(e.json, {"code", "file", "name", "name_expressions", "options", "arch_specific"});
  const bool has_code = f.has("code"), has_file = f.has("file");
  if (has_code == has_file) throw kiln::ValueError("give exactly one of 'code' and 'file'");
  raw_options opts;
  opts.options = f.strings("options");
  opts.name_expressions = f.strings("name_expressions");
  opts.arch_specific = f.boolean("arch_specific", false);
  const std::string name = f.str("name", false);
  const std::string code = f.str("code", false), file = f.str("file", false);
  f.finish();
  const std::filesystem::path path = has_file ? std::filesystem::path(file).is_absolute()
                                                    ? std::filesystem::path(file)
                                                    : m.path.parent_path() / file
                                              : std::filesystem::path();
  std::vector<cache::CompileRequest> reqs;
  if (!name.empty()) {
    const RawKernel k =
        has_file ? RawKernel::from_file(path, name, opts) : RawKernel(code, name, opts);
    reqs = k.compile_requests(arch);
  } else {
    const RawModule mod = has_file ? RawModule::from_file(path, opts) : RawModule(code, opts);
    reqs = mod.compile_requests(arch);
  }
  std::vector<PrecompileJob> jobs;
  for (auto& req : reqs) {
    PrecompileJob job;
    job.request = std::move(req);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// An exact recorded compile: what record mode writes. The arch comes from the command line
// (arch-specific when the recorded kernel was: that is its need, not the device's).
std::vector<PrecompileJob> expand_source(const Manifest&, const ManifestEntry& e, int arch) {
  Fields f(e.json, {"source", "kernel_name", "options", "name_expressions", "made_by", "cache",
                    "recorded_arch", "arch_specific"});
  PrecompileJob job;
  job.request.source = f.str("source", true);
  job.request.kernel_name = f.str("kernel_name", true);
  job.request.options = f.strings("options");
  job.request.name_expressions = f.strings("name_expressions");
  job.request.kind = f.str("made_by", false, "source");
  job.request.arch = f.boolean("arch_specific", false) ? cache::arch_specific(arch) : arch;
  f.take("cache");  // hit/compiled when recorded: for humans
  if (const json* r = f.take("recorded_arch")) manifest_arch(*r, "field 'recorded_arch'");
  f.finish();
  // The checks compile_cached makes, made now: an -arch option or an arch NVRTC cannot target
  // is an error in the manifest, found before anything compiles.
  cache::check_request(job.request);
  job.variant = job.request.kind == "source" ? "" : "recorded " + job.request.kind;
  return {std::move(job)};
}

// The format reserves "expression" entries (docs/manifest.md), but expression text is not
// parsed: the exact expression kernels come from recording the program.
std::vector<PrecompileJob> expand_expression(const Manifest&, const ManifestEntry&, int) {
  throw kiln::ValueError(
      "kind 'expression' cannot be precompiled from a manifest entry: expression text is not "
      "parsed; run the program once with KILN_CACHE_RECORD=FILE and precompile FILE (its "
      "'source' entries are the exact expression kernels)");
}

constexpr ManifestKind kKinds[] = {
    {"elementwise", expand_elementwise}, {"reduction", expand_reduction}, {"raw", expand_raw},
    {"expression", expand_expression},   {"source", expand_source},
};

}  // namespace

std::string describe(const codegen::ElementwiseSpec& s) {
  // " 0 2": the parameters staged (tiled, packed) or, gathered, read each way
  auto params_where = [&](auto&& pick) {
    std::string out;
    for (int k = 0; k < s.nparams; ++k)
      if (pick(k)) out += " " + std::to_string(k);
    return out;
  };
  const std::string staged = params_where([&](int k) { return s.staged(k); });
  std::string v = s.layout == codegen::Layout::contiguous
                      ? "contiguous w" + std::to_string(s.vector_width)
                      : "strided ndim " + std::to_string(s.ndim);
  if (s.layout == codegen::Layout::strided && s.vector_width > 1)
    v += " w" + std::to_string(s.vector_width);
  if (s.layout == codegen::Layout::gathered) {
    v = "gathered ndim " + std::to_string(s.ndim) + " w" + std::to_string(s.vector_width);
    if (s.log2_unit_cols) v += " groups of " + std::to_string(s.unit_cols());
    if (s.gathered_long_rows()) v += " long rows";
    const std::string groups = params_where([&](int k) {
      return s.params[std::size_t(k)].staged == codegen::OperandSpec::gathered_by_group;
    });
    const std::string constants = params_where([&](int k) { return s.row_constant(k); });
    const std::string as_output = params_where([&](int k) { return s.as_output(k); });
    if (!groups.empty()) v += ", whole groups" + groups;
    if (!constants.empty()) v += ", row constants" + constants;
    if (!as_output.empty()) v += ", as the output" + as_output;
  }
  if (s.layout == codegen::Layout::packed)
    v = "packed ndim " + std::to_string(s.ndim) + " staged" + staged;
  if (s.layout == codegen::Layout::interleaved)
    v = "interleaved " + std::to_string(s.interleave()) + " ndim " + std::to_string(s.ndim) + " w" +
        std::to_string(s.vector_width);
  if (s.layout == codegen::Layout::tiled) {
    v = staged.empty() ? "row tiles" : "tiled staged" + staged;
    if (s.ndim > 2) v += " ndim " + std::to_string(s.ndim);
    if (s.log2_unit_cols) v += " cols by " + std::to_string(s.unit_cols());
    if (s.log2_unit_rows) v += " rows by " + std::to_string(s.unit_rows());
    if (s.cols_span_two()) v += " cols over two axes";
    if (s.rows_span_two()) v += " rows over two axes";
    if (s.tiled_runs()) v += " as runs";
  }
  const std::string uniforms =
      params_where([&](int k) { return s.kind(k) == codegen::OperandKind::uniform; });
  if (!uniforms.empty()) v += ", one element" + uniforms;
  return v + " i" + std::to_string(s.index_bits);
}

std::span<const ManifestKind> manifest_kinds() { return kKinds; }

}  // namespace kiln::tools
