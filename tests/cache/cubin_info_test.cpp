// inspect_cubin: the arch and entry points of a cubin, from its ELF headers, never out of bounds.
#include "kiln/cache/cubin_info.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/runtime/error.hpp"

TEST_CASE("inspect_cubin reads the arch and the kernels of an NVRTC cubin", "[cache]") {
  for (int arch : {80, 90}) {
    kiln::cache::CompileRequest req{
        .source =
            "extern \"C\" __global__ void first(float* x) { x[0] = 1; }\n"
            "template <class T> __global__ void second(T* x) { x[0] = T(2); }\n",
        .kernel_name = "first",
        .arch = arch,
        .name_expressions = {"second<int>"}};
    const auto bin = kiln::cache::nvrtc_compile(req);
    const auto info = kiln::cache::inspect_cubin(bin.cubin);
    CHECK(info.arch == arch);
    CHECK(info.kernels.size() == 2);
    CHECK(std::find(info.kernels.begin(), info.kernels.end(), "first") != info.kernels.end());
    CHECK(std::find(info.kernels.begin(), info.kernels.end(), bin.lowered_names[0]) !=
          info.kernels.end());
    // Every truncation is handled: no crash, and never a made-up kernel name.
    for (std::size_t n = 0; n < bin.cubin.size(); n += 97) {
      const auto part = kiln::cache::inspect_cubin(std::string_view(bin.cubin).substr(0, n));
      CHECK(part.kernels.size() <= 2);
    }
  }
  CHECK(kiln::cache::inspect_cubin("not an ELF file").arch == 0);
  CHECK(kiln::cache::inspect_cubin("").kernels.empty());
}

TEST_CASE("check_arch accepts what NVRTC supports and names the list otherwise", "[cache]") {
  const auto& archs = kiln::cache::nvrtc_supported_archs();
  REQUIRE(!archs.empty());
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  CHECK_NOTHROW(kiln::cache::check_arch(90));
  for (int bad : {0, 52, 999, -1}) {
    CHECK_THROWS_AS(kiln::cache::check_arch(bad), kiln::ValueError);
    CHECK_THROWS_WITH(kiln::cache::check_arch(bad),
                      Catch::Matchers::Contains("supported: " + std::to_string(archs.front())));
  }
}
