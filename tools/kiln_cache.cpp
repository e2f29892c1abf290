// kiln-cache: fills and inspects kiln's on-disk kernel cache, so a deployed program never waits
// on NVRTC. Runs without a GPU.
//
//   kiln-cache info
//   kiln-cache devices                  # exit 0 when there is a GPU, 1 when there is none
//   kiln-cache elementwise --in "float32 x, float32 y" --out "float32 z" \
//       --op "z = (x - 2 > y) ? x * y : x + y" --name my_kernel \
//       --dtypes float32,float32,float32 --arch 90 --vector-width 4
//
// `elementwise` generates and compiles one specialisation of an ElementwiseKernel (the dtypes
// of its arguments and a layout class) into $KILN_CACHE_DIR; the same kernel called by a program
// with arrays of that class is then a disk-cache hit (check with KILN_DISALLOW_COMPILE=1).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kiln/cache/cache_config.hpp"
#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/kiln.hpp"

namespace {

struct ElementwiseArgs {
  std::string in_params, out_params, operation, name, preamble;
  std::vector<std::string> dtypes, options;
  std::vector<int> scalars;
  int arch = 90, ndim = 1, index_bits = 32, vector_width = 1, raw_ndim = 1;
  bool strided = false;
};

int run_info() {
  auto cfg = kiln::cache::CacheConfig::from_env();
  std::uintmax_t entries = 0, bytes = 0;
  std::error_code ec;
  if (!cfg.in_memory_only && std::filesystem::exists(cfg.dir, ec))
    for (const auto& e : std::filesystem::recursive_directory_iterator(cfg.dir, ec))
      if (e.is_regular_file(ec) && e.path().extension() == ".kbin") {
        ++entries;
        bytes += e.file_size(ec);
      }
  std::printf("cache folder: %s%s\nentries: %ju (%ju bytes)\nNVRTC: %s\n", cfg.dir.c_str(),
              cfg.in_memory_only ? " (KILN_CACHE_IN_MEMORY: not used)" : "", entries, bytes,
              kiln::cache::nvrtc_version().full.c_str());
  return 0;
}

int run_devices() {
  int n = kiln::device_count();
  if (n == 0) {
    std::printf("no GPU: %s\n", kiln::no_device_reason().c_str());
    return 1;
  }
  for (int d = 0; d < n; ++d) {
    const auto& p = kiln::device_properties(d);
    std::printf("GPU %d: %s, sm_%d\n", d, p.name.c_str(), p.arch());
  }
  return 0;
}

int run_elementwise(const ElementwiseArgs& a) {
  kiln::elementwise_options opts;
  opts.preamble = a.preamble;
  opts.options = a.options;
  kiln::ElementwiseKernel k(a.in_params, a.out_params, a.operation, a.name, opts);
  std::vector<kiln::dtype> dtypes;
  for (const auto& d : a.dtypes) dtypes.push_back(kiln::dtype::from_name(d));
  kiln::elementwise_layout layout{
      .layout = a.strided ? kiln::codegen::Layout::strided : kiln::codegen::Layout::contiguous,
      .ndim = a.ndim,
      .index_bits = a.index_bits,
      .vector_width = a.vector_width,
      .raw_ndim = a.raw_ndim};
  auto spec = k.make_spec(dtypes, layout);
  for (int s : a.scalars) {
    if (s < 0 || s >= k.nin())
      throw kiln::ValueError("--scalars: " + std::to_string(s) + " is not an input parameter");
    spec.set_param(s, spec.param_dtype(s), kiln::codegen::OperandKind::scalar);
  }
  auto before = kiln::cache::stats().nvrtc_compiles.load();
  auto binary = k.compile_for(spec, a.arch);
  bool compiled = kiln::cache::stats().nvrtc_compiles.load() > before;
  std::printf("%s %s for sm_%d: %zu-byte cubin (%s) in %s\n", compiled ? "compiled" : "found",
              a.name.c_str(), a.arch, binary.cubin.size(), compiled ? "NVRTC" : "already cached",
              kiln::cache::CacheConfig::from_env().dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln-cache: precompile and inspect kiln's kernel cache (no GPU needed)"};
  app.require_subcommand(1);
  auto* info = app.add_subcommand("info", "where the cache is, how many entries it has");
  auto* devices = app.add_subcommand("devices", "list GPUs; exit status 1 when there is none");
  auto* ew = app.add_subcommand("elementwise", "compile one ElementwiseKernel specialisation");
  ElementwiseArgs a;
  ew->add_option("--in", a.in_params, "input parameters, e.g. \"float32 x, T y\"")->required();
  ew->add_option("--out", a.out_params, "output parameters, e.g. \"float32 z\"")->required();
  ew->add_option("--op", a.operation, "the operation, e.g. \"z = x + y\"")->required();
  ew->add_option("--name", a.name, "kernel name")->required();
  ew->add_option("--dtypes", a.dtypes, "dtype of each argument (inputs, then outputs)")
      ->required()->delimiter(',');
  ew->add_option("--scalars", a.scalars, "indices of inputs passed as scalars")->delimiter(',');
  ew->add_option("--arch", a.arch, "compute capability, e.g. 90 for sm_90")->capture_default_str();
  ew->add_flag("--strided", a.strided, "strided layout (default: contiguous)");
  ew->add_option("--ndim", a.ndim, "strided: collapsed dimensions")->capture_default_str();
  ew->add_option("--index-bits", a.index_bits, "32 or 64")->check(CLI::IsMember({32, 64}));
  ew->add_option("--vector-width", a.vector_width, "contiguous: elements per 16-byte vector");
  ew->add_option("--raw-ndim", a.raw_ndim, "ndim of raw array parameters");
  ew->add_option("--preamble", a.preamble, "code before the kernel");
  ew->add_option("--option", a.options, "an NVRTC option (repeatable)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (info->parsed()) return run_info();
    if (devices->parsed()) return run_devices();
    return run_elementwise(a);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln-cache: %s\n", e.what());
    return 2;
  }
}
