#pragma once
// What to compile: one CUDA C++ translation unit, its NVRTC options and target architecture.
// Everything in a CompileRequest except kernel_name and kind goes into its cache key.
//
//   kiln::cache::CompileRequest req{
//       .source = R"(extern "C" __global__ void k(float* x) { x[0] = 1; })",
//       .kernel_name = "k",
//       .options = {"-std=c++17"},
//       .arch = 90};
//   kiln::cache::Binary bin = kiln::cache::compile_cached(req);
#include <string>
#include <vector>

namespace kiln::cache {

struct CompileRequest {
  /// The full CUDA C++ source.
  std::string source;
  /// Used in error messages and logs only; not part of the cache key.
  std::string kernel_name;
  /// NVRTC options, without the arch (that is `arch`) and without kiln's default include
  /// folders (nvrtc_compile adds them).
  std::vector<std::string> options;
  /// Compute capability as major*10+minor: 90 compiles with "-arch=sm_90" to a cubin.
  int arch = 90;
  /// Template instantiations or overloads to keep, e.g. "f<float>"; their mangled names
  /// come back in Binary::lowered_names, in the same order.
  std::vector<std::string> name_expressions;
  /// Bytes that change the binary without being in `source` or `options`, e.g. a digest of
  /// the user headers the source includes: hashed into the key (when not empty), never given
  /// to NVRTC.
  std::string key_extra;
  /// Which kernel kind generated it ("elementwise", "raw", ...), for kiln-cache and record
  /// mode (KILN_CACHE_RECORD); not part of the cache key.
  std::string kind;
};

}  // namespace kiln::cache
