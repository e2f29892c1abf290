#include <catch2/catch.hpp>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/nvrtc_defaults.hpp"
#include "kiln/codegen/signature.hpp"
#include "kiln/codegen/user_macros.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln;
using namespace kiln::codegen;

namespace {

// The SignatureError thrown by f, with its position.
template <class F>
SignatureError signature_error_of(F&& f) {
  try {
    f();
  } catch (const SignatureError& e) {
    return e;
  }
  FAIL("no SignatureError thrown");
  return SignatureError("", 0);
}

}  // namespace

TEST_CASE("parse_params reads fixed dtypes, placeholders and raw", "[codegen]") {
  auto p = parse_params("float32 x, raw T y,  int  n ,f4 a, ? b, complex64 c", false);
  REQUIRE(p.size() == 6);
  CHECK(p[0].name == "x");
  CHECK(p[0].fixed == float32);
  CHECK_FALSE(p[0].raw);
  CHECK(p[1].raw);
  CHECK(p[1].placeholder == "T");
  CHECK(p[2].fixed == int64);  // NumPy: int is int64
  CHECK(p[3].fixed == float32);
  CHECK(p[4].fixed == bool_);
  CHECK(p[5].fixed == complex64);
  CHECK(p[1].str() == "raw T y");
}

TEST_CASE("one-letter types are placeholders, as in CuPy", "[codegen]") {
  auto p = parse_params("f x, d y", false);
  CHECK(p[0].placeholder == "f");
  CHECK(p[1].placeholder == "d");
}

TEST_CASE("an empty parameter list has no parameters", "[codegen]") {
  CHECK(parse_params("", false).empty());
  CHECK(parse_params("   ", true).empty());
}

TEST_CASE("malformed parameter lists name the problem and its position", "[codegen]") {
  struct Case {
    const char* text;
    std::size_t position;
    const char* words;
  };
  const Case cases[] = {
      {"float32", 7, "expected a parameter name after the type 'float32'"},
      {"float32 x,", 10, "expected a parameter after ','"},
      {", float32 x", 0, "expected a parameter before ','"},
      {"float32 x,, int32 y", 10, "expected a parameter after ','"},
      {"const float32 x", 0, "unknown modifier 'const'"},
      {"raw raw float32 x", 4, "'raw' given twice"},
      {"flaot32 x", 0, "unknown dtype 'flaot32'"},
      {"float32 i", 8, "'i' is reserved"},
      {"float32 _ind", 8, "'_ind' is reserved"},
      {"float32 kiln_x", 8, "reserved for kiln"},
      {"int32 int", 6, "C++ keyword"},
      {"float32 1x", 8, "not a valid parameter name"},
      {"float32 x, int32 x", 11, "declared twice"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto e = signature_error_of([&] { parse_params(c.text, false); });
    CHECK(e.position() == c.position);
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains(c.words));
    // The text, then a caret under the position.
    CHECK_THAT(what, Catch::Contains(std::string("\n  ") + c.text + "\n  " +
                                     std::string(c.position, ' ') + "^"));
  }
}

TEST_CASE("kernel names must be whole identifiers", "[codegen]") {
  CHECK_NOTHROW(validate_kernel_name("my_kernel"));
  CHECK_NOTHROW(validate_kernel_name("_k2"));
  for (const char* bad : {"", "1k", "my kernel", "k\n", "k-1", "int", "kiln_cast", "complex"}) {
    INFO(bad);
    CHECK_THROWS_AS(validate_kernel_name(bad), SignatureError);
  }
  auto e = signature_error_of([] { validate_kernel_name("k\n"); });
  CHECK(e.position() == 1);
}

TEST_CASE("a definition checks names across inputs, outputs and types", "[codegen]") {
  CHECK_THROWS_WITH(make_elementwise_definition("T x", "T x", {"x = x"}, "k", {}),
                    Catch::Contains("both an input and an output"));
  CHECK_THROWS_WITH(make_elementwise_definition("T x", "U T", {"T = x"}, "k", {}),
                    Catch::Contains("both as a parameter name and a type"));
  std::string many;
  for (int k = 0; k < kMaxParams + 1; ++k) many += (k ? ", " : "") + std::string("float32 a") + std::to_string(k);
  CHECK_THROWS_AS(make_elementwise_definition(many, "float32 z", {"z = 0"}, "k", {}), SignatureError);

  auto def = make_elementwise_definition("float32 x, T y", "U z, T w", {"z = x"}, "k", {});
  CHECK(def.nin == 2);
  CHECK(def.nout == 2);
  REQUIRE(def.placeholders == std::vector<std::string>{"T", "U"});
  CHECK(def.params[1].placeholder_id == 0);
  CHECK(def.params[2].placeholder_id == 1);
  CHECK(def.params[3].placeholder_id == 0);
}

TEST_CASE("definition hashes change with any part of the definition", "[codegen]") {
  auto a = make_elementwise_definition("T x", "T y", {"y = x"}, "k", {});
  auto b = make_elementwise_definition("T x", "T y", {"y = x"}, "k", {});
  auto c = make_elementwise_definition("T x", "T y", {"y = x + 1"}, "k", {});
  auto d = make_elementwise_definition("T x", "T y", {"y = x"}, "k", {"-DX=1"});
  auto e = make_elementwise_definition("T x", "T y", {"y = x", "// preamble"}, "k", {});
  auto f = make_elementwise_definition("T x", "T y", {"y = x", "", "", "// after"}, "k", {});
  auto g = make_elementwise_definition("T x", "T y", {"y = x"}, "k2", {});
  CHECK(a.hash == b.hash);
  for (const auto* other : {&c, &d, &e, &f, &g}) CHECK_FALSE(a.hash == other->hash);
}

TEST_CASE("a -D option naming a parameter, placeholder or the kernel is a SignatureError", "[codegen]") {
  CHECK_THROWS_WITH(make_elementwise_definition("T x", "T y", {"y = x"}, "k", {"-Dx=5"}),
                    Catch::Contains("option -Dx names a parameter"));
  CHECK_THROWS_AS(make_elementwise_definition("T x", "T y", {"y = x"}, "k", {"-D", "T"}), SignatureError);
  CHECK_THROWS_AS(make_elementwise_definition("T x", "T y", {"y = x"}, "k", {"-Dk=other"}), SignatureError);
  CHECK_NOTHROW(make_elementwise_definition("T x", "T y", {"y = x + N"}, "k", {"-DN=5"}));
}

TEST_CASE("an architecture option is refused: kiln compiles for the device's architecture", "[codegen]") {
  for (const char* o : {"-arch=sm_80", "--gpu-architecture=compute_80", "-arch"})
    CHECK_THROWS_WITH(make_elementwise_definition("T x", "T y", {"y = x"}, "k", {o}),
                      Catch::Contains("kiln-cache --arch"));
}

TEST_CASE("an empty or blank operation is a SignatureError", "[codegen]") {
  for (const char* op : {"", "   ", "\n\t "})
    CHECK_THROWS_WITH(make_elementwise_definition("T x", "T y", {op}, "k", {}),
                      Catch::Contains("the operation is empty"));
}

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
