// Devices on a machine without a GPU: device work fails clearly, CPU work goes on.
#include "kiln/runtime/device.hpp"

#include <catch2/catch.hpp>

#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "support/test_support.hpp"

using namespace kiln;

static ndarray meta(const Shape& s, dtype t = float32) {
  return ndarray(nullptr, s, c_strides(s, std::int64_t(t.itemsize())), 0, t);
}

// [nogpu]: this behaviour is for GPU-less machines (CI); on a GPU machine the runner leaves it
// out and the [gpu] case below checks the same calls succeed.
TEST_CASE("without a GPU, device work raises NoDeviceError and CPU work goes on",
          "[runtime][nogpu]") {
  CHECK(device_count() == 0);
  CHECK_FALSE(no_device_reason().empty());
  CHECK_THROWS_AS(current_device(), NoDeviceError);
  CHECK_THROWS_AS(empty({3}, float32), NoDeviceError);
  KILN_CHECK_THROWS(asarray<float>({1.f, 2.f}), NoDeviceError,
                    Catch::Matchers::Contains("still runs"));
  CHECK_THROWS_AS(get_default_memory_pool(), NoDeviceError);
  CHECK(meta({2, 2}).T().shape() == Shape{2, 2});
}
