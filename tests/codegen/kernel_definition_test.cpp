// Kernel definitions: names across inputs, outputs and types; the hash; option rules.
#include <catch2/catch.hpp>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/codegen/nvrtc_defaults.hpp"
#include "kiln/codegen/user_macros.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln;
using namespace kiln::codegen;

TEST_CASE("a definition checks names across inputs, outputs and types", "[codegen]") {
  CHECK_THROWS_WITH(make_elementwise_definition("T x", "T x", {"x = x"}, "k", {}),
                    Catch::Contains("both an input and an output"));
  CHECK_THROWS_WITH(make_elementwise_definition("T x", "U T", {"T = x"}, "k", {}),
                    Catch::Contains("both as a parameter name and a type"));
  std::string many;
  for (int k = 0; k < kMaxParams + 1; ++k)
    many += (k ? ", " : "") + std::string("float32 a") + std::to_string(k);
  CHECK_THROWS_AS(make_elementwise_definition(many, "float32 z", {"z = 0"}, "k", {}),
                  SignatureError);

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

TEST_CASE("a -D option naming a parameter, placeholder or the kernel is a SignatureError",
          "[codegen]") {
  CHECK_THROWS_WITH(make_elementwise_definition("T x", "T y", {"y = x"}, "k", {"-Dx=5"}),
                    Catch::Contains("option -Dx names a parameter"));
  CHECK_THROWS_AS(make_elementwise_definition("T x", "T y", {"y = x"}, "k", {"-D", "T"}),
                  SignatureError);
  CHECK_THROWS_AS(make_elementwise_definition("T x", "T y", {"y = x"}, "k", {"-Dk=other"}),
                  SignatureError);
  CHECK_NOTHROW(make_elementwise_definition("T x", "T y", {"y = x + N"}, "k", {"-DN=5"}));
}

TEST_CASE("an architecture option is refused; kiln compiles for the device's architecture",
          "[codegen]") {
  for (const char* o : {"-arch=sm_80", "--gpu-architecture=compute_80", "-arch"})
    CHECK_THROWS_WITH(make_elementwise_definition("T x", "T y", {"y = x"}, "k", {o}),
                      Catch::Contains("kiln-cache --arch"));
}

TEST_CASE("an empty or blank operation is a SignatureError", "[codegen]") {
  for (const char* op : {"", "   ", "\n\t "})
    CHECK_THROWS_WITH(make_elementwise_definition("T x", "T y", {op}, "k", {}),
                      Catch::Contains("the operation is empty"));
}
