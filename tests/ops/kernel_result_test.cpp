// kernel_result: CuPy's return conventions for one, several or no outputs.
#include "kiln/engine/kernel_result.hpp"

#include <catch2/catch.hpp>

#include "kiln/runtime/error.hpp"

using namespace kiln;

TEST_CASE("kernel_result maps CuPy's return conventions", "[ops]") {
  kernel_result none;
  CHECK(none.empty());
  CHECK_THROWS_WITH(none.array(), Catch::Contains("no_return"));
  kernel_result one;
  one.push_back(ndarray());
  CHECK(one.size() == 1);
  CHECK_NOTHROW(one.array());
  CHECK(one.end() - one.begin() == 1);
  one.set_tuple(true);
  CHECK_THROWS_WITH(one.array(), Catch::Contains("return_tuple"));
  CHECK_NOTHROW(one[0]);
  kernel_result two;
  two.push_back(ndarray());
  two.push_back(ndarray());
  CHECK(two.size() == 2);
  CHECK(two.to_vector().size() == 2);
  CHECK_THROWS_AS(ndarray(two), TypeError);
  CHECK_THROWS_AS(two[2], ValueError);
}
