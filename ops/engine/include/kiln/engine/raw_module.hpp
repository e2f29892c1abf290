#pragma once
// kiln::RawModule: CuPy's RawModule in C++. A CUDA C++ program (a string or a .cu file) or a
// binary (.cubin, .ptx, .fatbin) whose kernels and __device__ / __constant__ variables you
// reach by name. Compiled lazily, once per device (each device gets its own loaded module).
//
//   kiln::RawModule m(R"(
//     __constant__ float coef[4];
//     template <class T> __global__ void scale(T* x, int n) { ... x[i] *= T(coef[i % 4]); }
//   )", {.name_expressions = {"scale<float>", "scale<double>"}});
//   kiln::RawKernel f = m.get_function("scale<float>");      // "scale< float >" works too
//   kiln::ndarray c = m.get_global("coef", kiln::float32);   // a view of the symbol (shape {4})
//   c.copy_from_host(host_coef.data());
//   f({blocks}, {256}, x, n);
//
// Name expressions are normalised (whitespace that C++ ignores is dropped), so spelling
// variants resolve alike; their lowered (mangled) names are stored in the disk cache entry, so
// a later process loads the binary without running NVRTC. A missing kernel or variable is an
// Error listing the names the module has.
//
// User headers: every #include "..." / <...> the source (and, recursively, each header) names
// that resolves in a -I folder (quoted ones also beside the including file) is read once, at
// construction, and its contents hashed into the cache key: editing a header recompiles, an
// unchanged one hits. Limits: #include with a macro argument is not followed;
// includes under #if are hashed even when not compiled (more recompiles, never stale ones);
// headers edited after construction, within the same process, are not seen. A header NVRTC
// cannot find is a CompileError naming it.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/compile_request.hpp"
#include "kiln/engine/raw_kernel.hpp"
#include "kiln/runtime/dtype.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/shape.hpp"

namespace kiln {

class RawModule {
 public:
  /// CUDA C++ source. Checks options and name expressions, reads user headers; no compile.
  explicit RawModule(std::string_view code, raw_options options = {});
  /// .cubin, .ptx, .fatbin (loaded as they are; no name expressions) or CUDA C++ source.
  static RawModule from_file(const std::filesystem::path& path, raw_options options = {});

  /// A kernel by name expression (as given at construction, any spacing) or by symbol name.
  /// Cheap: the module is compiled and loaded at the first launch.
  RawKernel get_function(std::string_view name) const;
  /// A view of a __device__ / __constant__ variable of the module loaded on the current
  /// device; shape defaults to 1-D over the whole variable. The view's bytes must equal the
  /// variable's size (ValueError otherwise); the view keeps the module alive.
  ndarray get_global(std::string_view name, dtype t, std::optional<Shape> shape = {}) const;

  /// The lowered (mangled) name of a name expression, on the current device's build.
  std::string lowered_name(std::string_view name_expression) const;
  /// The user headers found at construction (resolved paths), whose contents key the cache.
  std::vector<std::filesystem::path> headers() const;
  /// The cache key of the compile for `arch` (what a header change changes).
  Hash128 cache_key(int arch) const;

  // ---- ahead of time (no GPU needed) ----
  std::vector<cache::CompileRequest> compile_requests(int arch) const;

 private:
  explicit RawModule(std::shared_ptr<const detail::RawSource> src);
  std::shared_ptr<const detail::RawSource> src_;
};

/// Whitespace C++ ignores removed: "k< float, double >" -> "k<float,double>",
/// "f<unsigned  int>" -> "f<unsigned int>". How name expressions are compared.
std::string normalize_name_expression(std::string_view expr);

}  // namespace kiln
