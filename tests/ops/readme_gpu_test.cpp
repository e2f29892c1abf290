// The README's example, compiled and run here: tests/ops/readme_test.cpp checks that the README
// shows exactly the code between the snippet markers, so the docs cannot rot.
#include <catch2/catch.hpp>
#include <kiln/kiln.hpp>

TEST_CASE("the README example runs and gives the host-computed values", "[ops][gpu]") {
  // snippet-begin: readme-example
  kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = (x - 2 > y) ? x * y : x + y",
                            "my_kernel");
  auto x = kiln::asarray<float>({1, 5, 7, 9, 4, 6}, kiln::Shape{2, 3});
  auto y = kiln::full({3}, 2.0f);            // broadcasts against (2, 3)
  kiln::ndarray z = k(x, y);                 // compiled once, cached, launched
  std::vector<float> host = z.get<float>();  // {3, 10, 14, 18, 6, 12}
  // snippet-end
  CHECK(host == std::vector<float>{3, 10, 14, 18, 6, 12});
}
