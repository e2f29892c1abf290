// CUDA graph capture without a GPU: the capture API's argument checks, every call a capture
// refuses (raised before the device is touched, so these run on a machine without one, under
// a capture state set by hand), and the planning of kernel-node parameter updates.
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <vector>

#include "graph/kernel_nodes.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

// An array over a made-up device address: metadata only, nothing touches a device.
ndarray fake(std::uintptr_t address, const Shape& shape, dtype t, int device = 0) {
  const std::size_t bytes = std::size_t(shape_size(shape)) * t.itemsize();
  auto buf = std::make_shared<Buffer>(reinterpret_cast<void*>(address), bytes, device, [] {});
  return ndarray(buf, shape, c_strides(shape, std::int64_t(t.itemsize())), 0, t);
}

// This thread "captures" for a scope: what kiln::capture sets, without CUDA.
struct FakeCapture {
  detail::ThreadCapture state{reinterpret_cast<cudaStream_t>(0x1234), 0, 7, nullptr};
  detail::ThreadCaptureScope scope{state};
};

template <class T>
void put(std::vector<std::byte>& bytes, std::uint32_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof v);
}
template <class T>
T get(const std::vector<std::byte>& bytes, std::uint32_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

constexpr std::uintptr_t kA = 0x7f0000100000, kB = 0x7f0000200000, kC = 0x7f0000300000;

// A node as a captured elementwise kernel looks: (pointer x, float32 s, strided y, int8 n,
// index), with the roles the call path records.
detail::KernelNode sample_node(std::uintptr_t x, std::uintptr_t y, float s) {
  detail::KernelNode n;
  n.name = "sample";
  n.params = {{0, 8}, {8, 4}, {16, 16}, {32, 1}, {36, 4}};
  n.args = {{detail::ArgRole::array, float32},
            {detail::ArgRole::scalar, float32},
            {detail::ArgRole::array, float32},
            {detail::ArgRole::scalar, int8},
            {detail::ArgRole::other, float64}};
  n.bytes.assign(40, std::byte{0});
  put(n.bytes, 0, std::uint64_t(x));
  put(n.bytes, 8, s);
  put(n.bytes, 16, std::uint64_t(y));
  put(n.bytes, 24, std::int32_t(4));  // a stride
  put(n.bytes, 32, std::int8_t(5));
  put(n.bytes, 36, std::int32_t(64));
  return n;
}

}  // namespace

TEST_CASE("a capture of the legacy null stream is refused before the device is touched",
          "[ops][graph]") {
  KILN_CHECK_THROWS(graph_capture(Stream::borrow(nullptr, 0)), CaptureError,
                    Contains("legacy null stream"));
  KILN_CHECK_THROWS(capture(Stream::borrow(nullptr, 0), [] {}), CaptureError,
                    Contains("legacy null stream"));
}

TEST_CASE("a capture inside another capture of the thread is refused", "[ops][graph]") {
  FakeCapture on;
  CHECK(capturing());
  const Stream other = Stream::borrow(reinterpret_cast<cudaStream_t>(0x5678), 0);
  KILN_CHECK_THROWS(graph_capture{other}, CaptureError, Contains("inside another capture"));
  KILN_CHECK_THROWS(capture([] {}), CaptureError, Contains("inside another capture"));
}

TEST_CASE("capturing() is true only inside a capture scope", "[ops][graph]") {
  CHECK_FALSE(capturing());
  {
    FakeCapture on;
    CHECK(capturing());
  }
  CHECK_FALSE(capturing());
}

TEST_CASE("an empty graph handle raises ValueError for every use", "[ops][graph]") {
  graph g;
  CHECK_FALSE(g);
  const Stream s = Stream::borrow(nullptr, 0);
  KILN_CHECK_THROWS(g.replay(s), ValueError, Contains("empty"));
  const ndarray a = fake(kA, {4}, float32), b = fake(kB, {4}, float32);
  KILN_CHECK_THROWS(g.update(a, b), ValueError, Contains("empty"));
  KILN_CHECK_THROWS(g.update_scalar(1, 2), ValueError, Contains("empty"));
  KILN_CHECK_THROWS(g.node_count(), ValueError, Contains("empty"));
  KILN_CHECK_THROWS(g.kernel_count(), ValueError, Contains("empty"));
  KILN_CHECK_THROWS(g.memory_bytes(), ValueError, Contains("empty"));
}

TEST_CASE("calls that wait for the device or use the host are refused during a capture",
          "[ops][graph]") {
  const ndarray a = fake(kA, {301, 4}, float32);
  const ndarray m = fake(kB, {4, 4}, float64);
  std::vector<float> host(a.size());
  FakeCapture on;
  KILN_CHECK_THROWS(a.get<float>(), CaptureError, Contains("ndarray::get()"));
  KILN_CHECK_THROWS(a.copy_to_host(host.data()), CaptureError, Contains("copy_to_host"));
  ndarray w = a;
  KILN_CHECK_THROWS(w.copy_from_host(host.data()), CaptureError, Contains("copy_from_host"));
  KILN_CHECK_THROWS(Stream::borrow(nullptr, 0).synchronize(), CaptureError,
                    Contains("Stream::synchronize()"));
  KILN_CHECK_THROWS(Stream::borrow(nullptr, 0).query(), CaptureError, Contains("Stream::query()"));
  KILN_CHECK_THROWS(synchronize_device(), CaptureError, Contains("synchronize_device()"));
  ndarray other_device = fake(kC, {301, 4}, float32, 1);
  KILN_CHECK_THROWS(copy_contiguous(a, other_device), CaptureError, Contains("between devices"));
  KILN_CHECK_THROWS(to_device(a, 1), CaptureError, Contains("to_device"));
  KILN_CHECK_THROWS(linalg::svd(m), CaptureError, Contains("linalg.svd"));
  KILN_CHECK_THROWS(linalg::qr(m), CaptureError, Contains("linalg.qr"));
  KILN_CHECK_THROWS(linalg::eigh(m), CaptureError, Contains("linalg.eigh"));
  KILN_CHECK_THROWS(linalg::solve(m, m), CaptureError, Contains("linalg.solve"));
  KILN_CHECK_THROWS(linalg::inv(m), CaptureError, Contains("linalg.inv"));
  KILN_CHECK_THROWS(linalg::det(m), CaptureError, Contains("linalg.det"));
  KILN_CHECK_THROWS(sort(a, 1), CaptureError, Contains("sort of 301 rows"));
  KILN_CHECK_THROWS(argsort(a, 1), CaptureError, Contains("argsort of 301 rows"));
  KILN_CHECK_THROWS(profiler::benchmark([] {}), CaptureError, Contains("profiler::benchmark()"));
  auto rng = random::default_rng(7);
  KILN_CHECK_THROWS(rng.normal(0, 1, {4}), CaptureError, Contains("random.Generator.normal"));
  KILN_CHECK_THROWS(rng.random({4}), CaptureError, Contains("random.Generator.uniform"));
  KILN_CHECK_THROWS(rng.integers(0, 6, {4}), CaptureError, Contains("random.Generator.integers"));
  CHECK(rng.offset() == 0);  // nothing drawn
  // The message says what to do and that the capture goes on.
  KILN_CHECK_THROWS(a.get<float>(), CaptureError, Contains("before the capture or after it"));
}

TEST_CASE("an array update must keep dtype, layout, device and alignment", "[ops][graph]") {
  const ndarray from = fake(kA, {8, 4}, float32);
  CHECK_NOTHROW(detail::check_array_update(from, fake(kB, {8, 4}, float32)));
  KILN_CHECK_THROWS(detail::check_array_update(from, fake(kB, {8, 4}, float64)), TypeError,
                    Contains("float64"));
  KILN_CHECK_THROWS(detail::check_array_update(from, fake(kB, {4, 8}, float32)), ShapeError,
                    Contains("(4, 8)"));
  KILN_CHECK_THROWS(detail::check_array_update(from, fake(kB, {4, 8}, float32).T()), ShapeError,
                    Contains("strides"));
  KILN_CHECK_THROWS(detail::check_array_update(from, fake(kB + 4, {8, 4}, float32)), ValueError,
                    Contains("aligned to 4 bytes"));
  CHECK_NOTHROW(
      detail::check_array_update(fake(kA + 4, {8, 4}, float32), fake(kB, {8, 4}, float32)));
  KILN_CHECK_THROWS(detail::check_array_update(from, fake(kB, {8, 4}, float32, 1)), ValueError,
                    Contains("device 1"));
  KILN_CHECK_THROWS(detail::check_array_update(from, ndarray()), ValueError,
                    Contains("empty ndarray handle"));
}

TEST_CASE("an array update rebinds pointers to elements of the array and nothing else",
          "[ops][graph]") {
  detail::KernelNodes nodes;
  nodes.add(sample_node(kA, kA + 8, 0.5f));  // y is a view of `a` from its element 2
  nodes.add(sample_node(kA + 2, kC, 0.5f));  // not on an element of `a`: left alone
  detail::KernelNode n = sample_node(kC, kC, 0.5f);
  put(n.bytes, 36, std::int32_t(kA));  // an index that happens to equal an address: left alone
  nodes.add(n);
  const ndarray a = fake(kA, {64}, float32), b = fake(kB, {64}, float32);
  const std::pair<ndarray, ndarray> pairs[] = {{a, b}};
  detail::UpdatePlan plan = nodes.plan_rebind(pairs);
  CHECK(plan.arguments == 2);
  REQUIRE(plan.changes.size() == 1);
  CHECK(plan.changes[0].node == 0);
  CHECK(get<std::uint64_t>(plan.changes[0].bytes, 0) == kB);
  CHECK(get<std::uint64_t>(plan.changes[0].bytes, 16) == kB + 8);
  CHECK(get<std::int32_t>(plan.changes[0].bytes, 24) == 4);  // strides stay
  CHECK(get<std::uint64_t>(nodes[0].bytes, 0) == kA);        // nothing changes before commit
  nodes.commit(plan);
  CHECK(get<std::uint64_t>(nodes[0].bytes, 0) == kB);
  CHECK(get<std::uint64_t>(nodes[1].bytes, 0) == kA + 2);
  CHECK(get<std::int32_t>(nodes[2].bytes, 36) == std::int32_t(kA));
}

TEST_CASE("array updates given together swap two arrays", "[ops][graph]") {
  detail::KernelNodes nodes;
  nodes.add(sample_node(kA, kB, 1.0f));
  const ndarray a = fake(kA, {64}, float32), b = fake(kB, {64}, float32);
  for (int step = 0; step < 3; ++step) {
    detail::UpdatePlan plan =
        nodes.plan_rebind(std::vector<std::pair<ndarray, ndarray>>{{a, b}, {b, a}});
    CHECK(plan.arguments == 2);
    nodes.commit(plan);
    CHECK(get<std::uint64_t>(nodes[0].bytes, 0) == (step % 2 == 0 ? kB : kA));
    CHECK(get<std::uint64_t>(nodes[0].bytes, 16) == (step % 2 == 0 ? kA : kB));
  }
}

TEST_CASE("an array update that matches no argument changes nothing", "[ops][graph]") {
  detail::KernelNodes nodes;
  nodes.add(sample_node(kA, kA, 1.0f));
  const ndarray a = fake(kA, {64}, float32), b = fake(kB, {64}, float32),
                c = fake(kC, {64}, float32);
  KILN_CHECK_THROWS(nodes.plan_rebind(std::vector<std::pair<ndarray, ndarray>>{{a, b}, {c, b}}),
                    ValueError, Contains("pair 1"));
  CHECK(get<std::uint64_t>(nodes[0].bytes, 0) == kA);
}

TEST_CASE("a scalar update replaces equal values converted to each argument's dtype",
          "[ops][graph]") {
  detail::KernelNodes nodes;
  nodes.add(sample_node(kA, kA, 0.5f));
  nodes.add(sample_node(kA, kA, 0.75f));
  detail::UpdatePlan plan = nodes.plan_scalar(0.5, 0.25);  // a double meets float32 arguments
  CHECK(plan.arguments == 1);
  REQUIRE(plan.changes.size() == 1);
  CHECK(get<float>(plan.changes[0].bytes, 8) == 0.25f);
  nodes.commit(plan);
  CHECK(get<float>(nodes[0].bytes, 8) == 0.25f);
  CHECK(get<float>(nodes[1].bytes, 8) == 0.75f);
  // The int8 argument 5 matches 5 (and the float32 ones do not hold 5).
  plan = nodes.plan_scalar(5, -7);
  CHECK(plan.arguments == 2);
  nodes.commit(plan);
  CHECK(get<std::int8_t>(nodes[1].bytes, 32) == -7);
}

TEST_CASE("a scalar update that matches nothing or does not fit changes nothing", "[ops][graph]") {
  detail::KernelNodes nodes;
  nodes.add(sample_node(kA, kA, 0.5f));
  KILN_CHECK_THROWS(nodes.plan_scalar(1000, 1), ValueError,
                    Contains("no captured kiln kernel has a scalar argument equal to 1000"));
  KILN_CHECK_THROWS(nodes.plan_scalar(5, 300), ValueError, Contains("300 does not fit"));
  CHECK(get<std::int8_t>(nodes[0].bytes, 32) == 5);
  CHECK(get<float>(nodes[0].bytes, 8) == 0.5f);
}
