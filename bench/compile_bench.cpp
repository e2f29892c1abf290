// kiln_compile_bench: cold compile time (NVRTC, no GPU needed) of the kernels kiln generates,
// as ONE JSON object on stdout. For each kernel family, every spec its ahead-of-time entry
// point lists (or every Nth, --every N) is compiled from source once, and the family reports
// the fewest, median and most milliseconds, how many specs passed its target (issue 16:
// elementwise 60 ms, reductions and row kernels 150 ms) and its slowest specs with NVRTC's own
// split of their time (front end, NVVM optimizer, ptxas; NVRTC's -time).
//
//   kiln_compile_bench [--arch 90] [--every 4] [--family NAME[,NAME...]] [--list]
//
// The figures are this machine's: one compile at a time on one core, nothing cached (NVRTC
// directly, never kiln's kernel cache).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/engine/fused_reduction.hpp"
#include "kiln/engine/row_kernel.hpp"
#include "kiln/kiln.hpp"
#include "manifest.hpp"

namespace {

using namespace kiln;
using bench::json_number;
using bench::json_string;
using tools::describe;  // elementwise variants, as kiln-cache names them

// A view with no memory: specs and sources read only dtypes (and, for trees, shapes); views at
// other offsets are other leaves.
ndarray no_memory(const Shape& s, dtype t, std::int64_t offset = 0) {
  return ndarray(nullptr, s, c_strides(s, std::int64_t(t.itemsize())), offset, t);
}

struct Request {
  std::string variant;
  cache::CompileRequest req;
};

struct Family {
  std::string name, kind;  // kind: "elementwise" (60 ms) or "reduction" (150 ms)
  std::function<std::vector<Request>()> requests;
};

double target_ms(const Family& f) { return f.kind == "elementwise" ? 60 : 150; }

std::string describe(const codegen::ReductionSpec& s) {
  static const char* strategies[] = {"inner_warp", "inner_block", "outer", "folded"};
  return fmt::format("{}{} out {} red {} w{} contiguous {} i{}", strategies[int(s.strategy)],
                     s.split ? " split" : "", s.out_ndim, s.red_ndim, s.vector_width,
                     s.red_contiguous, s.index_bits);
}
std::string describe(const codegen::RowSpec& s) {
  return fmt::format("group {} w{} items {}{}{}{} cluster {} out {} i{}", s.group, s.vector_width,
                     s.items, s.wide ? " wide" : "", s.shared ? " shared" : "",
                     s.shifted ? " shifted" : "", s.cluster, s.out_ndim, s.index_bits);
}

template <class K, class Spec>
std::vector<Request> requests_of(const K& k, const std::vector<Spec>& specs, int arch) {
  std::vector<Request> out;
  for (const auto& s : specs) out.push_back({describe(s), k.compile_request(s, arch)});
  return out;
}

// A row kernel's binding from its leaves (scalars are the definition's fixed dtypes).
aot_target row_target(const RowKernel& k, const expr& e) {
  aot_target t{.max_ndim = 1, .index64 = false};
  const auto leaves = aot::row_kernel_leaves(e);
  for (std::size_t j = 0; j < leaves.size(); ++j) {
    t.dtypes.push_back(leaves[j].is_array() ? leaves[j].array().dtype()
                                            : k.definition().params[j].fixed);
    if (!leaves[j].is_array()) t.scalar_inputs.push_back(int(j));
  }
  t.dtypes.push_back(e.dtype());
  return t;
}

std::vector<Family> families(int arch) {
  std::vector<Family> f;
  const aot_target small{.max_ndim = 3, .index64 = false};
  for (dtype t : {float32, float16}) {
    f.push_back({fmt::format("elementwise x - y {}", t.name()), "elementwise", [=] {
                   static const ElementwiseKernel k("T x, T y", "T z", "z = x - y", "cold_sub");
                   aot_target b = small;
                   b.dtypes = {t, t};
                   return requests_of(k, k.specs(b), arch);
                 }});
  }
  f.push_back(
      {"expression sin(x) * 5 + y * y float32", "elementwise", [=] {
         const auto x = lazy(no_memory({64, 64}, float32)), y = lazy(no_memory({64, 64}, float32));
         const ElementwiseKernel& k = aot::expression_kernel(sin(x) * 5 + y * y);
         aot_target b = small;
         b.dtypes = {float32, float32};
         return requests_of(k, k.specs(b), arch);
       }});
  auto builtin = [](const char* name) -> const ReductionKernel& {
    for (const ReductionKernel* k : aot::builtin_reductions())
      if (k->name() == name) return *k;
    throw std::runtime_error(std::string("no builtin reduction ") + name);
  };
  f.push_back({"sum float32", "reduction", [=] {
                 const ReductionKernel& k = builtin("kiln_sum");
                 return requests_of(
                     k, k.specs({.dtypes = {float32, float32}, .max_ndim = 3, .index64 = false}),
                     arch);
               }});
  f.push_back({"var_mean float32", "reduction", [=] {
                 const ReductionKernel& k = builtin("kiln_var_mean");
                 return requests_of(k,
                                    k.specs({.dtypes = {float32, int64, float32, float32},
                                             .scalar_inputs = {1},
                                             .max_ndim = 3,
                                             .index64 = false}),
                                    arch);
               }});
  f.push_back({"mean and var together float32 (kiln::fuse)", "reduction", [=] {
                 const auto x = lazy(no_memory({8, 16, 4, 4}, float32));
                 const expr stats[] = {mean(x, {0, 2, 3}), var(x, {0, 2, 3})};
                 const ReductionKernel& k = aot::multi_reduction(stats);
                 return requests_of(k,
                                    k.specs({.dtypes = {float32, int64, float32, float32},
                                             .scalar_inputs = {1},
                                             .max_ndim = 2,
                                             .index64 = false}),
                                    arch);
               }});
  using RowExpr = std::function<lazy_expr(const lazy_expr&, const lazy_expr&, const lazy_expr&)>;
  auto rows = [=](const char* name, RowExpr make) {
    return Family{fmt::format("rows {} float32", name), "reduction", [=] {
                    const auto x = lazy(no_memory({64, 4096}, float32));
                    const auto g = lazy(no_memory({4096}, float32)),
                               b = lazy(no_memory({4096}, float32, 4096 * 4));
                    const lazy_expr e = make(x, g, b);
                    const RowKernel* k = aot::row_kernel(e);
                    if (!k) throw std::runtime_error(std::string(name) + " is no row kernel");
                    return requests_of(*k, k->specs(row_target(*k, e)), arch);
                  }};
  };
  f.push_back(rows("softmax", [](const lazy_expr& x, const lazy_expr&, const lazy_expr&) {
    return exp(x - max(x, -1, true)) / sum(exp(x - max(x, -1, true)), -1, true);
  }));
  f.push_back(rows("log_softmax", [](const lazy_expr& x, const lazy_expr&, const lazy_expr&) {
    return (x - max(x, -1, true)) - log(sum(exp(x - max(x, -1, true)), -1, true));
  }));
  f.push_back(rows("layer_norm", [](const lazy_expr& x, const lazy_expr& g, const lazy_expr& b) {
    return (x - mean(x, -1, true)) / sqrt(var(x, -1, true) + 1e-5f) * g + b;
  }));
  return f;
}

struct Timed {
  std::string variant;
  double ms = 0, frontend = 0, nvvm = 0, ptxas = 0;
};

// NVRTC's -time CSV: "file, phase, value, ms" rows.
void read_phases(const std::filesystem::path& csv, Timed& t) {
  std::ifstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream row(line);
    std::string file, phase, value;
    std::getline(row, file, ',');
    std::getline(row, phase, ',');
    std::getline(row, value, ',');
    const double ms = std::atof(value.c_str());
    if (phase.find("Frontend") != std::string::npos) t.frontend += ms;
    if (phase.find("NVVM") != std::string::npos) t.nvvm += ms;
    if (phase.find("PTX") != std::string::npos) t.ptxas += ms;
  }
}

Timed compile_timed(const Request& r, const std::filesystem::path& csv) {
  Timed t{.variant = r.variant};
  cache::CompileRequest req = r.req;
  std::filesystem::remove(csv);
  req.options.push_back("-time=" + csv.string());
  const auto t0 = std::chrono::steady_clock::now();
  const auto bin = cache::nvrtc_compile(req);
  t.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (bin.cubin.empty()) throw std::runtime_error("empty cubin for " + r.variant);
  read_phases(csv, t);
  return t;
}

// The CPU's model name and cores (compile times are this machine's).
std::string host_cpu() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return fmt::format("{}, {} cores", model, ::sysconf(_SC_NPROCESSORS_ONLN));
}

int usage() {
  std::fprintf(stderr,
               "usage: kiln_compile_bench [--arch N] [--every N] [--family NAME[,NAME...]] "
               "[--list]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int arch = 90, every = 4;
  std::string only;
  bool list = false;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    auto count = [&](int& v) {
      if (k + 1 >= argc) return false;
      const std::string s = argv[++k];
      if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
        return false;
      v = std::atoi(s.c_str());
      return v > 0;
    };
    if (a == "--arch") {
      if (!count(arch)) return usage();
    } else if (a == "--every") {
      if (!count(every)) return usage();
    } else if (a == "--family" && k + 1 < argc) {
      only = argv[++k];
    } else if (a == "--list") {
      list = true;
    } else {
      return usage();
    }
  }
  const auto all = families(arch);
  // --family names known families, else nothing would run and the report would be empty.
  for (std::size_t at = 0; !only.empty() && at <= only.size();) {
    const std::size_t end = std::min(only.find(',', at), only.size());
    const std::string name = only.substr(at, end - at);
    if (std::none_of(all.begin(), all.end(), [&](const Family& f) { return f.name == name; })) {
      std::fprintf(stderr, "kiln_compile_bench: no family '%s' (--list names them)\n",
                   name.c_str());
      return 2;
    }
    at = end + 1;
  }
  if (list) {
    for (const auto& f : all) std::printf("%s\n", f.name.c_str());
    return 0;
  }
  char tmpl[] = "/tmp/kiln-compile-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  const std::filesystem::path csv = std::filesystem::path(tmpl) / "time.csv";
  std::string out =
      fmt::format("{{\"arch\": {}, \"every\": {}, \"nvrtc\": {}, \"host\": {}, \"families\": [",
                  arch, every, json_string(cache::nvrtc_version().full), json_string(host_cpu()));
  int failed = 0, n = 0;
  for (const auto& f : all) {
    if (!only.empty() && ("," + only + ",").find("," + f.name + ",") == std::string::npos) continue;
    std::vector<Timed> t;
    std::string error;
    try {
      const auto reqs = f.requests();
      for (std::size_t i = 0; i < reqs.size(); i += std::size_t(every))
        t.push_back(compile_timed(reqs[i], csv));
    } catch (const std::exception& e) {
      error = e.what();
      ++failed;
    }
    std::sort(t.begin(), t.end(), [](const Timed& a, const Timed& b) { return a.ms < b.ms; });
    const double target = target_ms(f);
    const auto over =
        std::count_if(t.begin(), t.end(), [&](const Timed& x) { return x.ms > target; });
    out +=
        fmt::format("{}{{\"family\": {}, \"target_ms\": {}, \"compiled\": {}, \"over_target\": {}",
                    n++ ? ", " : "", json_string(f.name), json_number(target), t.size(), over);
    if (!t.empty()) {
      out += fmt::format(", \"min_ms\": {}, \"median_ms\": {}, \"max_ms\": {}, \"slowest\": [",
                         json_number(t.front().ms), json_number(t[t.size() / 2].ms),
                         json_number(t.back().ms));
      for (std::size_t i = 0; i < std::min<std::size_t>(3, t.size()); ++i) {
        const Timed& s = t[t.size() - 1 - i];
        out += fmt::format(
            "{}{{\"variant\": {}, \"ms\": {}, \"frontend_ms\": {}, \"nvvm_ms\": {}, \"ptxas_ms\": "
            "{}}}",
            i ? ", " : "", json_string(s.variant), json_number(s.ms), json_number(s.frontend),
            json_number(s.nvvm), json_number(s.ptxas));
      }
      out += "]";
    }
    if (!error.empty()) out += ", \"error\": " + json_string(error);
    out += "}";
    std::fprintf(stderr, "%s: %zu compiled\n", f.name.c_str(), t.size());
  }
  out += "]}";
  std::printf("%s\n", out.c_str());
  std::filesystem::remove_all(tmpl);
  return failed ? 1 : 0;
}
