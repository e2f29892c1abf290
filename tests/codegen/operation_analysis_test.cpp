// Lexical analysis of user operations: which outputs are written before they are read.
#include "kiln/codegen/operation_analysis.hpp"

#include <catch2/catch.hpp>

using namespace kiln::codegen;

TEST_CASE("an output is known written-before-read only for a leading plain assignment",
          "[codegen]") {
  CHECK(writes_before_reading("z = x + y", "z", ""));
  CHECK(writes_before_reading("z = (x - 2 > y) ? x * y : x + y;", "z", ""));
  CHECK(writes_before_reading("float t = x * 2; z = t; z += 1;", "z", ""));
  CHECK(writes_before_reading("w = 1; // z += 3\n z = x;", "z", ""));
  CHECK_FALSE(writes_before_reading("z += x", "z", ""));
  CHECK_FALSE(writes_before_reading("z = z + x", "z", ""));
  CHECK_FALSE(writes_before_reading("if (x > 0) z = x;", "z", ""));
  CHECK_FALSE(writes_before_reading("x > 0 ? z = 1 : 0;", "z", ""));
  CHECK_FALSE(writes_before_reading("{ z = 1; }", "z", ""));
  CHECK_FALSE(writes_before_reading("if (x) return; z = 1;", "z", ""));
  CHECK_FALSE(writes_before_reading("z == 1;", "z", ""));
  CHECK_FALSE(writes_before_reading("STORE;", "z", ""));  // never mentioned
  CHECK_FALSE(writes_before_reading("z = x;", "z", "#define AGAIN z += 1"));
  CHECK(writes_before_reading("z = a.z;", "z", ""));  // member named like the output
  CHECK(mentions_identifier("y = z;", "z"));
  CHECK_FALSE(mentions_identifier("y = \"z\"; // z", "z"));
}
