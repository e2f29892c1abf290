// DLPack metadata conversion and profiler printouts, without a GPU: arrays here wrap a host
// block as if it were device memory (nothing reads through the pointer).
#include <catch2/catch.hpp>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

std::vector<char> g_block(4096);

// A (3, 4) float32 view over g_block that touches no device.
ndarray host_backed(const Shape& shape, dtype t, int* released = nullptr) {
  auto buf = std::make_shared<Buffer>(g_block.data(), g_block.size(), 0, [released] {
    if (released) ++*released;
  });
  return ndarray(buf, shape, c_strides(shape, std::int64_t(t.itemsize())), 0, t);
}

}  // namespace

TEST_CASE("DLPack dtype codes round-trip for every kiln dtype", "[ops]") {
  for (dtype t : kAllDtypes) {
    INFO(t.name());
    DLDataType d = detail::to_dl_dtype(t);
    CHECK(d.lanes == 1);
    CHECK(d.bits == (t == bool_ ? 8 : t.itemsize() * 8));
    CHECK(detail::from_dl_dtype(d) == t);
  }
  CHECK(detail::to_dl_dtype(bool_).code == 6);  // kDLBool
  CHECK(detail::to_dl_dtype(bfloat16).code == kDLBfloat);
  CHECK(detail::to_dl_dtype(complex64).code == kDLComplex);
  KILN_CHECK_THROWS(detail::from_dl_dtype({kDLFloat, 32, 4}), TypeError,
                    Catch::Contains("4 lanes"));
  CHECK_THROWS_AS(detail::from_dl_dtype({kDLFloat, 8, 1}), TypeError);
  CHECK_THROWS_AS(detail::from_dl_dtype({kDLOpaqueHandle, 64, 1}), TypeError);
}

TEST_CASE("to_dlpack exports shape, element strides and device; from_dlpack reads them back",
          "[ops]") {
  int released = 0;
  {
    ndarray base = host_backed({6, 8}, float32, &released);
    ndarray v = base(slice(1, 5), slice(0, 8, 2)).T();  // (4, 4), strides (2, 8) elements
    DLManagedTensor* m = to_dlpack(v);
    const DLTensor& t = m->dl_tensor;
    CHECK(t.device.device_type == kDLCUDA);
    CHECK(t.device.device_id == 0);
    CHECK(t.ndim == 2);
    CHECK(t.shape[0] == 4);
    CHECK(t.shape[1] == 4);
    CHECK(t.strides[0] == 2);
    CHECK(t.strides[1] == 8);
    CHECK(t.byte_offset == 0);
    CHECK(t.data == v.data());
    CHECK(t.dtype.code == kDLFloat);
    CHECK(t.dtype.bits == 32);

    ndarray back = from_dlpack(m);  // owns m now
    CHECK(back.shape() == v.shape());
    CHECK(back.strides() == v.strides());
    CHECK(back.data() == v.data());
    CHECK(back.dtype() == float32);
    base = ndarray();
    v = ndarray();
    CHECK(released == 0);  // `back` keeps the export, which keeps the buffer
  }
  CHECK(released == 1);
}

TEST_CASE("from_dlpack applies byte_offset, NULL strides as C order, and rejects host tensors",
          "[ops]") {
  static std::int64_t shape[3] = {2, 3, 4};
  static int deleted = 0;
  auto make = [](DLDeviceType dev, std::int64_t* strides) {
    auto* m = new DLManagedTensor{};
    m->dl_tensor.data = g_block.data();
    m->dl_tensor.device = {dev, 0};
    m->dl_tensor.ndim = 3;
    m->dl_tensor.dtype = {kDLInt, 16, 1};
    m->dl_tensor.shape = shape;
    m->dl_tensor.strides = strides;
    m->dl_tensor.byte_offset = 64;
    m->deleter = [](DLManagedTensor* self) {
      ++deleted;
      delete self;
    };
    return m;
  };
  deleted = 0;
  {
    ndarray a = from_dlpack(make(kDLCUDA, nullptr));
    CHECK(a.dtype() == int16);
    CHECK(a.shape() == Shape{2, 3, 4});
    CHECK(a.strides() == Shape{24, 8, 2});
    CHECK(a.data() == g_block.data() + 64);
    CHECK(deleted == 0);
  }
  CHECK(deleted == 1);
  KILN_CHECK_THROWS(from_dlpack(make(kDLCPU, nullptr)), ValueError, Catch::Contains("kDLCPU"));
  CHECK(deleted == 3);  // released on the error path too (KILN_CHECK_THROWS runs it twice)
  static std::int64_t neg[3] = {-12, 4, 1};
  ndarray n = from_dlpack(make(kDLCUDAManaged, neg));
  CHECK(n.strides() == Shape{-24, 8, 2});
}

TEST_CASE("benchmark results print like CuPy's and keep the raw times", "[ops]") {
  profiler::benchmark_result r{"my_kernel", 0, {2.0, 4.0}, {10.0, 10.0}};
  const std::string s = r.str();
  CHECK(s.rfind("my_kernel", 0) == 0);
  CHECK_THAT(
      s, Catch::Contains("CPU:     3.000 us   +/-  1.000 (min:     2.000 / max:     4.000) us"));
  CHECK_THAT(
      s, Catch::Contains("GPU-0:    10.000 us   +/-  0.000 (min:    10.000 / max:    10.000) us"));
  CHECK(r.cpu_times_us.size() == 2);
  CHECK_THROWS_AS(profiler::benchmark([] {}, {.n_repeat = 0}), ValueError);
  CHECK_THROWS_AS(profiler::benchmark([] {}, {.n_repeat = 5, .n_warmup = -1}), ValueError);
  CHECK_THROWS_AS(profiler::benchmark(nullptr), ValueError);
}
