// Architectures: one check (a ValueError listing NVRTC's archs) for every entry point, and
// arch-specific targets (sm_90a) named, keyed, compiled and recognised apart from sm_90.
#include <catch2/catch.hpp>

#include "cache_test_support.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/cubin_info.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln::cache;
using namespace kiln::cache::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("arch names and texts tell sm_90 from sm_90a", "[cache]") {
  CHECK(arch_name(90) == "sm_90");
  CHECK(arch_name(arch_specific(90)) == "sm_90a");
  CHECK(arch_text(arch_specific(100)) == "100a");
  CHECK(base_arch(arch_specific(90)) == 90);
  CHECK(is_arch_specific(arch_specific(120)));
  CHECK_FALSE(is_arch_specific(120));
  CHECK(parse_arch("90") == 90);
  CHECK(parse_arch("sm_80") == 80);
  CHECK(parse_arch("90a") == arch_specific(90));
  CHECK(parse_arch("sm_100a") == arch_specific(100));
  CHECK_THAT(supported_archs_text(), Contains("90, 90a, 100, 100a"));
}

TEST_CASE("an arch NVRTC cannot target is a ValueError listing those it can", "[cache]") {
  for (const char* bad : {"52", "80a", "86a", "999", "0", "abc", "", "sm_", "90b", "9 0", "-90",
                          "4294967386", "65626"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_arch(bad), kiln::ValueError);
    CHECK_THROWS_WITH(parse_arch(bad), Contains("supported: ") && Contains("90a"));
  }
  CHECK_THROWS_WITH(check_arch(arch_specific(80)), Contains("sm_80a is not an architecture"));
  CHECK_NOTHROW(check_arch(arch_specific(90)));
}

TEST_CASE("a device loads generic cubins of its major version and arch-specific ones of its own",
          "[cache]") {
  CHECK(arch_loads_on(80, 86));
  CHECK(arch_loads_on(90, 90));
  CHECK_FALSE(arch_loads_on(86, 80));
  CHECK_FALSE(arch_loads_on(90, 100));
  CHECK(arch_loads_on(arch_specific(90), 90));
  CHECK_FALSE(arch_loads_on(arch_specific(90), 100));
  CHECK_FALSE(arch_loads_on(arch_specific(100), 103));
}

TEST_CASE("sm_90a compiles apart from sm_90 - its own key, cubin and recognised arch", "[cache]") {
  TempDir tmp;
  CompileRequest generic = tiny_request("9401");
  CompileRequest specific = generic;
  specific.arch = arch_specific(90);
  CHECK_FALSE(cache_key(generic) == cache_key(specific));
  const Binary a = compile_cached(generic, disk_config(tmp.path()));
  const Binary b = compile_cached(specific, disk_config(tmp.path()));
  const CubinInfo ia = inspect_cubin(a.cubin), ib = inspect_cubin(b.cubin);
  CHECK(ia.arch == 90);
  CHECK(ib.arch == arch_specific(90));
  CHECK(ib.kernels == std::vector<std::string>{"k"});
  // The NVRTC that made it, as the entry records it.
  CHECK(ia.tool_version.starts_with(std::to_string(nvrtc_version().major) + "." +
                                    std::to_string(nvrtc_version().minor)));
  // wgmma needs sm_90a: the generic target refuses it, the arch-specific one compiles it.
  CompileRequest wgmma;
  wgmma.kernel_name = "fence";
  wgmma.source =
      "extern \"C\" __global__ void fence() { asm volatile(\"wgmma.fence.sync.aligned;\"); }\n";
  wgmma.arch = 90;
  CHECK_THROWS_AS(nvrtc_compile(wgmma), kiln::CompileError);
  wgmma.arch = arch_specific(90);
  CHECK(inspect_cubin(nvrtc_compile(wgmma).cubin).arch == arch_specific(90));
}

TEST_CASE("compile_cached checks the arch and refuses arch options before NVRTC runs", "[cache]") {
  TempDir tmp;
  CompileRequest req = tiny_request("9402");
  const auto compiles = stats().nvrtc_compiles.load();
  req.arch = 52;
  KILN_CHECK_THROWS(compile_cached(req, disk_config(tmp.path())), kiln::ValueError,
                    Contains("sm_52 is not an architecture") && Contains("supported: "));
  req.arch = 90;
  for (const char* opt : {"-arch=sm_80", "--gpu-architecture=sm_80", "-code=sm_80", "-arch"}) {
    req.options = {opt};
    INFO(opt);
    KILN_CHECK_THROWS(compile_cached(req, disk_config(tmp.path())), kiln::ValueError,
                      Contains(opt) && Contains("supported: "));
    CHECK_THROWS_AS(nvrtc_compile(req), kiln::ValueError);
  }
  CHECK(stats().nvrtc_compiles.load() == compiles);
  CHECK(fs::is_empty(tmp.path()));
}
