#include "kiln/codegen/nvrtc_defaults.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "kiln/runtime/error.hpp"

namespace kiln::codegen {
namespace {

bool user_sets(const std::vector<std::string>& opts,
               std::initializer_list<std::string_view> kinds) {
  return std::any_of(opts.begin(), opts.end(), [&](const std::string& o) {
    return std::any_of(kinds.begin(), kinds.end(),
                       [&](std::string_view k) { return o.starts_with(k); });
  });
}

}  // namespace

std::vector<std::string> with_nvrtc_defaults(std::vector<std::string> user_options) {
  for (const auto& o : user_options)
    if (o.starts_with("-arch") || o.starts_with("--gpu-architecture") || o == "-code" ||
        o.starts_with("-code=") || o.starts_with("--gpu-code"))
      throw ValueError(fmt::format(
          "NVRTC option '{}': kiln compiles each kernel for the architecture of the device it "
          "runs on; to build for another architecture ahead of time use compile_for(spec, "
          "arch) or `kiln-cache --arch`",
          o));
  std::vector<std::string> out;
  if (!user_sets(user_options, {"--std", "-std"})) out.push_back("--std=c++17");
  if (!user_sets(user_options, {"-ftz", "--ftz"})) out.push_back("-ftz=true");
  // NVRTC's front end skips the CUDA runtime's host types, textures, surfaces and the device
  // runtime (4-8 ms of every compile, a sixth of a small kernel's); nvrtc_compile compiles
  // again without it where a user's code needed them.
  if (!user_sets(user_options, {"-minimal", "--minimal"})) out.push_back("-minimal");
  out.insert(out.end(), user_options.begin(), user_options.end());
  return out;
}

}  // namespace kiln::codegen
