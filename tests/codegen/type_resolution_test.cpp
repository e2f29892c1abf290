#include "kiln/codegen/type_resolution.hpp"

#include <array>
#include <catch2/catch.hpp>

#include "kiln/codegen/elementwise_definition.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln;
using namespace kiln::codegen;

namespace {

std::vector<dtype> resolve(const ElementwiseDefinition& def, std::vector<ArgInfo> args) {
  args.resize(def.params.size());
  std::vector<dtype> out(def.params.size());
  resolve_param_types(def, args, out);
  return out;
}

}  // namespace

TEST_CASE("placeholders take the dtype of the arrays bound to them", "[codegen]") {
  auto def = make_elementwise_definition("T x, T y, float64 s", "U z", {"z = x"}, "k", {});
  auto t = resolve(def, {{float32, true}, {float32, true}, {}, {int8, true}});
  CHECK(t == std::vector<dtype>{float32, float32, float64, int8});
}

TEST_CASE("scalars do not bind placeholders; an array elsewhere does", "[codegen]") {
  auto def = make_elementwise_definition("T x, T y", "T z", {"z = x + y"}, "k", {});
  auto t = resolve(def, {{}, {int16, true}});
  CHECK(t == std::vector<dtype>{int16, int16, int16});
  // The output binds T when only scalars are passed for inputs.
  t = resolve(def, {{}, {}, {uint8, true}});
  CHECK(t == std::vector<dtype>{uint8, uint8, uint8});
}

TEST_CASE("an array must match its fixed dtype exactly", "[codegen]") {
  auto def = make_elementwise_definition("float32 x", "float32 z", {"z = x"}, "my_kernel", {});
  CHECK_THROWS_AS(resolve(def, {{float64, true}}), TypeError);
  CHECK_THROWS_WITH(resolve(def, {{float64, true}}),
                    Catch::Contains("my_kernel") && Catch::Contains("'x'") &&
                        Catch::Contains("float64") && Catch::Contains("float32"));
}

TEST_CASE("arrays of one placeholder must share a dtype; the message names the binder",
          "[codegen]") {
  auto def = make_elementwise_definition("T x, T y", "T z", {"z = x + y"}, "k", {});
  CHECK_THROWS_WITH(resolve(def, {{float32, true}, {float64, true}}),
                    Catch::Contains("'y' is a float64 array") &&
                        Catch::Contains("bound to float32 by argument 'x'"));
  // Outputs bind first (CuPy's order): the input is the one reported.
  CHECK_THROWS_WITH(resolve(def, {{float32, true}, {float32, true}, {int32, true}}),
                    Catch::Contains("'x' is a float32 array") &&
                        Catch::Contains("bound to int32 by argument 'z'"));
}

TEST_CASE("a placeholder no array binds is a clear deduction error", "[codegen]") {
  auto def = make_elementwise_definition("T x", "U z", {"z = x"}, "k", {});
  CHECK_THROWS_AS(resolve(def, {{float32, true}}), TypeError);
  CHECK_THROWS_WITH(resolve(def, {{float32, true}}),
                    Catch::Contains("cannot deduce type U") && Catch::Contains("'z'"));
  auto scalars = make_elementwise_definition("T x", "float32 z", {"z = x"}, "k", {});
  CHECK_THROWS_WITH(resolve(scalars, {{}}), Catch::Contains("cannot deduce type T"));
}
