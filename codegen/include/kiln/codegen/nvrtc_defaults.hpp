#pragma once
// kiln's default NVRTC options for generated kernels: CuPy's "--std=c++17" and "-ftz=true"
// (flush float32 denormals to zero, as CuPy's kernels do), and "-minimal" (NVRTC leaves out
// the CUDA runtime's host types such as cudaError_t, textures, surfaces and the device
// runtime: a faster compile; where a user's code needs them, kiln compiles again without it).
// A user option of the same kind replaces the default (e.g. "--std=c++20", "-ftz=false"). An
// architecture option (-arch, --gpu-architecture, -code) is a ValueError: kiln picks the
// device's architecture.
//
//   with_nvrtc_defaults({"--use_fast_math"});
//   // {"--std=c++17", "-ftz=true", "-minimal", "--use_fast_math"}
#include <string>
#include <vector>

namespace kiln::codegen {

std::vector<std::string> with_nvrtc_defaults(std::vector<std::string> user_options);

}  // namespace kiln::codegen
