// DLPack round trips and profiler::benchmark on the GPU.
#include <catch2/catch.hpp>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using kiln::test::random_vector;

TEST_CASE("a DLPack round trip shares memory; writes through one side show on the other",
          "[ops][gpu]") {
  auto h = random_vector<double>(24);
  ndarray a = asarray(h, Shape{4, 6});
  ndarray b = from_dlpack(to_dlpack(a.T()));
  CHECK(b.shape() == Shape{6, 4});
  CHECK(b.data() == a.data());
  b.fill(2.5);
  CHECK(a.get<double>() == std::vector<double>(24, 2.5));
  // Negative strides are exported as a copy.
  ndarray r = a(slice(std::nullopt, std::nullopt, -1));
  DLManagedTensor* m = to_dlpack(r);
  CHECK(m->dl_tensor.strides[0] > 0);
  CHECK(m->dl_tensor.data != r.data());
  ndarray rc = from_dlpack(m);
  CHECK(rc.get<double>() == r.get<double>());
  for (dtype t : {bool_, float16, bfloat16, complex64, uint16}) {
    ndarray x = ones({3}, t);
    ndarray y = from_dlpack(to_dlpack(x));
    CHECK(y.dtype() == t);
    CHECK(y.data() == x.data());
  }
}

TEST_CASE("benchmark times every run on the CPU and the GPU", "[ops][gpu]") {
  ndarray x = ones({1 << 22}, float32);
  auto r =
      profiler::benchmark([&] { x.fill(3.0f); }, {.n_repeat = 20, .n_warmup = 2, .name = "fill"});
  CHECK(r.cpu_times_us.size() == 20);
  CHECK(r.gpu_times_us.size() == 20);
  for (double g : r.gpu_times_us) CHECK(g > 0);
  CHECK(r.str().rfind("fill", 0) == 0);
  CHECK(x.get<float>()[123] == 3.0f);
}
