#pragma once
// A thin, exception-safe wrapper over NVRTC: source -> cubin for one architecture.
// No GPU or driver is needed. This does not look at any cache; see compile_cached.
//
//   CompileRequest req{.source = src, .kernel_name = "k", .arch = 90};
//   try {
//     Binary bin = nvrtc_compile(req);          // bin.cubin is an sm_90 ELF image
//   } catch (const kiln::CompileError& e) {
//     std::cerr << e.what();                    // kernel name, options, NVRTC log, numbered source
//   }
#include <string>
#include <vector>

#include "kiln/cache/binary.hpp"
#include "kiln/cache/compile_request.hpp"

namespace kiln::cache {

/// Throws kiln::ValueError unless NVRTC can compile `req` for its arch: an arch NVRTC cannot
/// target (check_arch, naming those it can), or an architecture option in req.options (the
/// arch is req.arch: kiln compiles for the device's, or ahead of time for the one named).
void check_request(const CompileRequest& req);

/// Compiles req.source with req.options, "-arch=<arch_name(req.arch)>" and
/// default_include_options(), after check_request.
/// Throws kiln::CompileError (what(): kernel name, NVRTC version, every option given to NVRTC
/// including -arch and -I, NVRTC log, source with line numbers) when
/// NVRTC rejects the source, kiln::Error for any other NVRTC failure.
Binary nvrtc_compile(const CompileRequest& req);

struct NvrtcVersion {
  int major = 0;
  int minor = 0;
  /// With the build number when it can be found, e.g. "13.0.88"; else "13.0".
  std::string full;
};

/// The version of the libnvrtc loaded in this process; computed once.
const NvrtcVersion& nvrtc_version();

/// "-I" options for the CUDA headers kernels may include (cuda_fp16.h, cuda_bf16.h,
/// <cuda/std/complex> from the cccl folder). The CUDA include folder is the first that
/// exists of $CUDA_PATH/include, $CUDA_HOME/include, the toolkit kiln was built with,
/// /usr/local/cuda/include.
std::vector<std::string> default_include_options();

/// `source` with each line prefixed by its 1-based number, e.g. "  12 | x[i] = 0;".
std::string number_lines(const std::string& source);

}  // namespace kiln::cache
