// Kernel parameter lists: parsing, placeholders, names, and their error messages.
#include "kiln/codegen/signature.hpp"

#include <catch2/catch.hpp>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/nvrtc_defaults.hpp"
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
