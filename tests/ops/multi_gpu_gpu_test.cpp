// Two GPUs: each device loads its own copy of a kernel; threads keep their own current devices.
#include <catch2/catch.hpp>
#include <thread>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using kiln::test::random_vector;

namespace {

const ElementwiseKernel& axpy() {
  static const ElementwiseKernel k("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y",
                                   "kiln_test_axpy");
  return k;
}

std::vector<float> axpy_ref(float a, const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> z(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) z[i] = a * x[i] + y[i];
  return z;
}

}  // namespace

TEST_CASE("one kernel runs on two GPUs, each with its own loaded module", "[ops][gpu][multigpu]") {
  auto hx = random_vector<float>(10000), hy = random_vector<float>(10000);
  for (int dev : {0, 1}) {
    DeviceGuard on(dev);
    auto x = asarray(hx), y = asarray(hy);
    CHECK(x.device() == dev);
    ndarray z = axpy()(2.0f, x, y);
    CHECK(z.device() == dev);
    CHECK(z.get<float>() == axpy_ref(2.0f, hx, hy));
  }
}

TEST_CASE("views move between GPUs with to_device", "[ops][gpu][multigpu]") {
  auto h = random_vector<float>(6 * 7);
  auto t = asarray(h, Shape{6, 7}).T();
  auto other = t.to_device(1);
  CHECK(other.device() == 1);
  CHECK(other.shape() == Shape{7, 6});
  CHECK(other.get<float>() == t.get<float>());
}

TEST_CASE("two host threads run kernels on their own devices and streams", "[ops][gpu][multigpu]") {
  auto hx = random_vector<float>(1 << 16), hy = random_vector<float>(1 << 16);
  std::vector<float> got[2];
  int seen_device[2] = {-1, -1};
  std::exception_ptr failed[2];
  auto work = [&](int dev) {
    try {
      set_current_device(dev);
      Stream s(true);
      StreamGuard use(s);
      auto z = axpy()(4.0f, asarray(hx), asarray(hy));
      seen_device[dev] = z.array().device();
      got[dev] = z.get<float>();
    } catch (...) {
      failed[dev] = std::current_exception();  // rethrown below, on the test's thread
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  for (auto& e : failed)
    if (e) std::rethrow_exception(e);
  auto want = axpy_ref(4.0f, hx, hy);  // powers of two: FMA or not, the same bits
  for (int dev : {0, 1}) {
    CHECK(seen_device[dev] == dev);
    CHECK(got[dev] == want);
  }
}
