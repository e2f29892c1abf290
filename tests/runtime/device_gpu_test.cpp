// Devices on a GPU machine: the calls device_test.cpp expects to fail without one succeed.
#include <catch2/catch.hpp>

#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "support/test_support.hpp"

using namespace kiln;

TEST_CASE("with a GPU, the same device work succeeds", "[runtime][gpu]") {
  CHECK(device_count() > 0);
  CHECK_NOTHROW(current_device());
  CHECK(empty({3}, float32).shape() == Shape{3});
  CHECK(asarray<float>({1.f, 2.f}).get<float>() == std::vector<float>{1.f, 2.f});
  CHECK_NOTHROW(get_default_memory_pool());
}
