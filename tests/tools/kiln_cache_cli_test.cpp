// kiln-cache end to end: what it compiles is exactly what the library later looks up.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

namespace {

struct Result {
  int status;
  std::string output;
};

Result run_cli(const std::string& args) {
  std::string cmd = std::string(KILN_CACHE_CLI) + " " + args + " 2>&1";
  Result r{0, ""};
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.output += buf;
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

const char* kMyKernel =
    "elementwise --in 'float32 x, float32 y' --out 'float32 z' "
    "--op 'z = (x - 2 > y) ? x * y : x + y' --name my_kernel "
    "--dtypes float32,float32,float32 --vector-width 4 --arch 90";

}  // namespace

TEST_CASE("kiln-cache precompiles a kernel that the library then finds without NVRTC",
          "[tools]") {
  kiln::test::TempDir dir;
  kiln::test::ScopedEnv env("KILN_CACHE_DIR", dir.path().string());
  auto r = run_cli(kMyKernel);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Matchers::Contains("compiled my_kernel for sm_90"));
  CHECK(run_cli(kMyKernel).output.find("found my_kernel") != std::string::npos);

  // The same specialisation, asked for by the library with compiling forbidden: a disk hit.
  kiln::test::ScopedEnv forbid("KILN_DISALLOW_COMPILE", "1");
  kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = (x - 2 > y) ? x * y : x + y",
                            "my_kernel");
  const kiln::dtype f32[] = {kiln::float32, kiln::float32, kiln::float32};
  auto spec = k.make_spec(f32, {.vector_width = 4});
  auto compiles = kiln::cache::stats().nvrtc_compiles.load();
  CHECK(k.compile_for(spec, 90).cubin.size() > 0);
  CHECK(kiln::cache::stats().nvrtc_compiles.load() == compiles);
  // A specialisation it did not precompile is a CacheMissError naming the kernel.
  auto strided = k.make_spec(f32, {.layout = kiln::codegen::Layout::strided, .ndim = 2});
  CHECK_THROWS_AS(k.compile_for(strided, 90), kiln::CacheMissError);

  auto info = run_cli("info");
  CHECK_THAT(info.output, Catch::Matchers::Contains("entries: 1"));
}

TEST_CASE("kiln-cache reports bad input with kiln's message and exit status 2", "[tools]") {
  kiln::test::TempDir dir;
  kiln::test::ScopedEnv env("KILN_CACHE_DIR", dir.path().string());
  auto bad_sig = run_cli(
      "elementwise --in 'float32 x, float32' --out 'float32 z' --op 'z = x' --name k "
      "--dtypes float32,float32");
  CHECK(bad_sig.status == 2);
  CHECK_THAT(bad_sig.output, Catch::Matchers::Contains("expected a parameter name"));
  auto bad_dtype = run_cli(
      "elementwise --in 'float32 x' --out 'float32 z' --op 'z = x' --name k --dtypes float33,float32");
  CHECK(bad_dtype.status == 2);
  CHECK_THAT(bad_dtype.output, Catch::Matchers::Contains("float33"));
  auto bad_code = run_cli(
      "elementwise --in 'float32 x' --out 'float32 z' --op 'z = x +* 1' --name k --dtypes float32,float32");
  CHECK(bad_code.status == 2);
  CHECK_THAT(bad_code.output, Catch::Matchers::Contains("operation(1)"));
  CHECK(run_cli("no-such-command").status != 0);
}

TEST_CASE("kiln-cache devices exits 1 without a GPU", "[tools]") {
  auto r = run_cli("devices");
  CHECK(r.status == (kiln::device_count() > 0 ? 0 : 1));
}
