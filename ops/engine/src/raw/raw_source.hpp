#pragma once
// Internal: what a RawModule / RawKernel is built from (user source or a binary image), its
// hash (computed once, at construction) and its loaded module per device, through the one
// loaded-kernel cache (call/kernel_cache.hpp).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/compile_request.hpp"
#include "kiln/cache/loaded_kernels.hpp"
#include "kiln/engine/raw_kernel.hpp"
#include "kiln/runtime/hash128.hpp"

namespace kiln::detail {

struct UserHeaders {
  std::vector<std::filesystem::path> files;  // resolved, in discovery order
  std::string digest;                        // hex; empty when there are none
};

/// The user headers `source` includes, recursively: quoted names beside the including file
/// (`source_dir` for the source itself; may be empty) then in -I folders, angled names in -I
/// folders only. Headers not found there (CUDA's, the system's) are left to NVRTC.
UserHeaders scan_user_headers(std::string_view source, const std::filesystem::path& source_dir,
                              const std::vector<std::string>& options);

/// The -I / --include-path folders of an NVRTC option list.
std::vector<std::filesystem::path> include_dirs(const std::vector<std::string>& options);

struct RawSource {
  enum class Kind { source, cubin, ptx, fatbin };
  Kind kind = Kind::source;
  std::string code;    // CUDA C++ text, or the image bytes
  std::string origin;  // for messages: "<string>" or the file
  std::vector<std::string> options;
  std::vector<std::string> name_expressions;  // normalised
  UserHeaders headers;
  bool cooperative = false;    // how its kernels launch (not part of the hash)
  bool arch_specific = false;  // compiled for sm_XXa (nvrtc_archs.hpp)
  Hash128 hash;

  /// Source: checks options (no -arch), normalises name expressions, scans headers.
  static std::shared_ptr<RawSource> from_code(std::string code, raw_options&& opts,
                                              std::string origin,
                                              const std::filesystem::path& dir = {});
  static std::shared_ptr<RawSource> from_file(const std::filesystem::path& path,
                                              raw_options&& opts);

  cache::CompileRequest request(int arch) const;
  /// The module loaded on `device` (compiled or loaded on the first call).
  const cache::LoadedKernel& module_on(int device) const;
  /// The symbol for a kernel or variable name: the lowered name of a name expression, else
  /// the name itself.
  std::string symbol(const cache::LoadedKernel& module, std::string_view name) const;
  /// "has no kernel 'x'; its kernels: a, b; name expressions: f<float> -> _Z..."
  std::string missing_message(const cache::LoadedKernel& module, std::string_view what,
                              std::string_view name) const;
};

}  // namespace kiln::detail
