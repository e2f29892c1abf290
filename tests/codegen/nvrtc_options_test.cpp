// User NVRTC options: -D/-U become source lines; kiln's defaults and what replaces them.
#include <catch2/catch.hpp>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/nvrtc_defaults.hpp"
#include "kiln/codegen/user_macros.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln;
using namespace kiln::codegen;

TEST_CASE("user -D and -U options become source lines, the rest stays NVRTC options", "[codegen]") {
  auto s = split_user_macros({"-DX=1", "--use_fast_math", "-D", "N", "-UFOO", "--define-macro=Y=a b",
                              "--undefine-macro", "BAR", "-DF(a)=a*2"});
  CHECK(s.nvrtc_options == std::vector<std::string>{"--use_fast_math"});
  CHECK(s.macros.lines ==
        "#define X 1\n#define N 1\n#undef FOO\n#define Y a b\n#undef BAR\n#define F(a) a*2\n");
  CHECK_THROWS_AS(split_user_macros({"-D"}), SignatureError);
  CHECK_THROWS_AS(split_user_macros({"-D=3"}), SignatureError);
}

TEST_CASE("NVRTC defaults are CuPy's, and user options of the same kind replace them", "[codegen]") {
  CHECK(with_nvrtc_defaults({}) == std::vector<std::string>{"--std=c++17", "-ftz=true"});
  CHECK(with_nvrtc_defaults({"--std=c++20", "-ftz=false"}) ==
        std::vector<std::string>{"--std=c++20", "-ftz=false"});
  CHECK(with_nvrtc_defaults({"--use_fast_math"}) ==
        std::vector<std::string>{"--std=c++17", "-ftz=true", "--use_fast_math"});
}
