// User NVRTC options: -D/-U become source lines; kiln's defaults and what replaces them.
#include <catch2/catch.hpp>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/nvrtc_defaults.hpp"
#include "kiln/codegen/user_macros.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln;
using namespace kiln::codegen;

TEST_CASE("user -D and -U options become source lines, the rest stays NVRTC options", "[codegen]") {
  auto s = split_user_macros({"-DX=1", "--use_fast_math", "-D", "N", "-UFOO",
                              "--define-macro=Y=a b", "--undefine-macro", "BAR", "-DF(a)=a*2"});
  CHECK(s.nvrtc_options == std::vector<std::string>{"--use_fast_math"});
  CHECK(s.macros.lines ==
        "#define X 1\n#define N 1\n#undef FOO\n#define Y a b\n#undef BAR\n#define F(a) a*2\n");
  CHECK_THROWS_AS(split_user_macros({"-D"}), SignatureError);
  CHECK_THROWS_AS(split_user_macros({"-D=3"}), SignatureError);
  // A value must stay one #define line (found by tests/fuzz/fuzz_nvrtc_options).
  CHECK_THROWS_WITH(split_user_macros({"-DX=1\n#include <x>"}), Catch::Contains("line break"));
  CHECK_THROWS_AS(split_user_macros({"-DX=1\r"}), SignatureError);
  CHECK_THROWS_AS(split_user_macros({"-DF(a\n)=a"}), SignatureError);
  CHECK_THROWS_WITH(split_user_macros({"-DX=a\\", "-DY=2"}), Catch::Contains("backslash"));
}

TEST_CASE("NVRTC defaults are CuPy's and -minimal, and user options of the same kind replace them",
          "[codegen]") {
  CHECK(with_nvrtc_defaults({}) ==
        std::vector<std::string>{"--std=c++17", "-ftz=true", "-minimal"});
  CHECK(with_nvrtc_defaults({"--std=c++20", "-ftz=false"}) ==
        std::vector<std::string>{"-minimal", "--std=c++20", "-ftz=false"});
  CHECK(with_nvrtc_defaults({"--use_fast_math"}) ==
        std::vector<std::string>{"--std=c++17", "-ftz=true", "-minimal", "--use_fast_math"});
  CHECK(with_nvrtc_defaults({"-minimal"}) ==
        std::vector<std::string>{"--std=c++17", "-ftz=true", "-minimal"});
}
