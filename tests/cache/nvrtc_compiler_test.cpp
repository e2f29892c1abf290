// The NVRTC wrapper: cubin for the asked arch, lowered names, CUDA headers found, errors
// that show the kernel name, the log and the numbered source. Runs without a GPU.
#include "kiln/cache/nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "cache_test_support.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln::cache;
using Catch::Matchers::Contains;
using kiln::cache::testing::ScopedEnv;
using kiln::cache::testing::tiny_request;

TEST_CASE("nvrtc compiles a trivial kernel to an sm_90 cubin", "[cache]") {
  const Binary bin = nvrtc_compile(tiny_request());
  REQUIRE(bin.cubin.size() > 64);
  CHECK(bin.cubin.substr(0, 4) ==
        "\x7f"
        "ELF");
  CHECK(bin.lowered_names.empty());
}

TEST_CASE("nvrtc returns lowered names parallel to the name expressions", "[cache]") {
  CompileRequest req;
  req.kernel_name = "fill";
  req.source = "template <class T> __global__ void fill(T* x) { x[0] = T(1); }\n";
  req.name_expressions = {"fill<float>", "fill<int>"};
  const Binary bin = nvrtc_compile(req);
  REQUIRE(bin.lowered_names.size() == 2);
  CHECK(bin.lowered_names[0] == "_Z4fillIfEvPT_");
  CHECK(bin.lowered_names[1] == "_Z4fillIiEvPT_");
}

TEST_CASE("nvrtc finds cuda_fp16.h through the default include options", "[cache]") {
  const auto opts = default_include_options();
  REQUIRE_FALSE(opts.empty());
  CHECK(opts[0].rfind("-I", 0) == 0);
  CHECK(std::filesystem::exists(opts[0].substr(2) + "/cuda_fp16.h"));
  CompileRequest req = tiny_request();
  req.source =
      "#include <cuda_fp16.h>\nextern \"C\" __global__ void h(__half* x) { x[0] = "
      "__float2half(1.f); }\n";
  req.kernel_name = "h";
  CHECK(nvrtc_compile(req).cubin.size() > 64);
}

TEST_CASE("default include options prefer CUDA_PATH when it exists", "[cache]") {
  kiln::cache::testing::TempDir fake;
  std::filesystem::create_directories(fake.path() / "include" / "cccl");
  {
    ScopedEnv cuda_path("CUDA_PATH", fake.path().string());
    const auto opts = default_include_options();
    REQUIRE(opts.size() == 2);
    CHECK(opts[0] == "-I" + (fake.path() / "include").string());
    CHECK(opts[1] == "-I" + (fake.path() / "include" / "cccl").string());
  }
  {
    ScopedEnv cuda_path("CUDA_PATH", (fake.path() / "missing").string());
    ScopedEnv cuda_home("CUDA_HOME", std::nullopt);
    CHECK(default_include_options()[0] != "-I" + (fake.path() / "missing" / "include").string());
  }
}

TEST_CASE("nvrtc syntax error throws CompileError with name, options, log and numbered source",
          "[cache]") {
  CompileRequest req;
  req.kernel_name = "broken_kernel";
  req.options = {"-std=c++17", "-DKILN_TEST_OPTION=3"};
  req.source =
      "// line 1\nextern \"C\" __global__ void broken_kernel(float* x) {\n  x[0] = 1 +;\n}\n";
  try {
    nvrtc_compile(req);
    FAIL("expected kiln::CompileError");
  } catch (const kiln::CompileError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Contains("broken_kernel"));
    CHECK_THAT(what, Contains("sm_90"));
    // Every option NVRTC got, on its own line, so the compile can be reproduced.
    CHECK_THAT(what, Contains("\n-std=c++17\n"));
    CHECK_THAT(what, Contains("\n-DKILN_TEST_OPTION=3\n"));
    CHECK_THAT(what, Contains("\n-arch=sm_90\n"));
    for (const auto& inc : default_include_options()) CHECK_THAT(what, Contains("\n" + inc + "\n"));
    CHECK_THAT(what, Contains(nvrtc_version().full + " options"));
    // Listed once: a second copy on one line made the message longer, not clearer.
    auto count = [&](const std::string& s) {
      std::size_t n = 0;
      for (auto at = what.find(s); at != std::string::npos; at = what.find(s, at + 1)) ++n;
      return n;
    };
    CHECK(count("-DKILN_TEST_OPTION=3") == 1);
    CHECK(count("-arch=sm_90") == 1);
    CHECK(count("options ---") == 1);
    CHECK_FALSE(e.log().empty());
    CHECK_THAT(what, Contains(e.log()));
    CHECK_THAT(e.log(), Contains("expected an expression"));
    CHECK_THAT(what, Contains("  3 |   x[0] = 1 +;"));
    CHECK_THAT(what, Contains("  1 | // line 1"));
    CHECK(e.source() == req.source);
  }
}

// kiln's generated kernels compile with -minimal (codegen::with_nvrtc_defaults); user code in
// them may still use the runtime's host types, which -minimal leaves out.
TEST_CASE("a source that needs what -minimal leaves out compiles again without it", "[cache]") {
  CompileRequest req;
  req.kernel_name = "uses_cuda_error";
  req.options = {"--std=c++17", "-minimal"};
  req.source =
      "extern \"C\" __global__ void uses_cuda_error(int* x) { cudaError_t e = cudaSuccess; "
      "x[0] = int(e); }\n";
  // Precondition: NVRTC itself refuses it with -minimal (else this test would prove nothing).
  nvrtcProgram prog = nullptr;
  REQUIRE(nvrtcCreateProgram(&prog, req.source.c_str(), "k.cu", 0, nullptr, nullptr) ==
          NVRTC_SUCCESS);
  const char* opts[] = {"--std=c++17", "-minimal", "-arch=sm_90"};
  CHECK(nvrtcCompileProgram(prog, 3, opts) == NVRTC_ERROR_COMPILATION);
  nvrtcDestroyProgram(&prog);

  const Binary bin = nvrtc_compile(req);
  CHECK(bin.cubin.substr(0, 4) ==
        "\x7f"
        "ELF");

  // A real error is still reported, with the log of the compile without -minimal.
  req.source = "extern \"C\" __global__ void uses_cuda_error(int* x) { x[0] = 1 +; }\n";
  try {
    nvrtc_compile(req);
    FAIL("expected kiln::CompileError");
  } catch (const kiln::CompileError& e) {
    CHECK_THAT(e.log(), Contains("expected an expression"));
    CHECK_THAT(std::string(e.what()), !Contains("\n-minimal\n"));
  }
}

TEST_CASE("nvrtc version reports major.minor and a full version starting with them", "[cache]") {
  const NvrtcVersion& v = nvrtc_version();
  CHECK(v.major >= 12);
  const std::string mm = std::to_string(v.major) + "." + std::to_string(v.minor);
  CHECK(v.full.rfind(mm, 0) == 0);
  INFO("full version: " << v.full);
  // On this toolkit the build number is available (library name or dist-info); warn otherwise.
  if (v.full == mm) WARN("NVRTC build number not found; keys use " << mm);
  CHECK(&nvrtc_version() == &v);
}

TEST_CASE("number_lines prefixes every line with its number", "[cache]") {
  CHECK(number_lines("a\nb") == "  1 | a\n  2 | b\n");
  const std::string many(11, '\n');
  CHECK(number_lines(many).find("  12 | \n") != std::string::npos);
}
