// CUDA graphs on a GPU: every kernel kind captured and replayed against its eager run (random
// data, outputs poisoned first), memory born in a capture, replays on other streams and
// threads, kernel-node parameter updates, and every call a capture refuses.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kiln/cache/cache_stats.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using Catch::Matchers::Contains;
using test::random_vector;

namespace {

using kiln::test::kPoison;
using kiln::test::poisoned;

// An array whose every byte is 0x5A (eager, on the current stream).
template <class T>
bool all_poison(const std::vector<T>& v) {
  std::vector<unsigned char> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  for (unsigned char b : bytes)
    if (b != kPoison) return false;
  return true;
}

template <class T>
bool close(const std::vector<T>& got, const std::vector<T>& want, double rel = 1e-5) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = double(got[i]), w = double(want[i]);
    if (!(std::fabs(g - w) <= rel * std::max(1.0, std::fabs(w)))) return false;
  }
  return true;
}

template <class T>
std::vector<T> host(const ndarray& a) {
  return a.get<T>();
}

// [begin, end) of an array's memory.
std::pair<std::uintptr_t, std::uintptr_t> range_of(const ndarray& a) {
  const auto b = reinterpret_cast<std::uintptr_t>(a.buffer()->data());
  return {b, b + a.buffer()->size()};
}
bool overlaps(std::pair<std::uintptr_t, std::uintptr_t> a,
              std::pair<std::uintptr_t, std::uintptr_t> b) {
  return a.first < b.second && b.first < a.second;
}

const ElementwiseKernel& axpb() {
  static const ElementwiseKernel k("float32 x, float32 a", "float32 y", "y = x * a + 1",
                                   "graph_axpb");
  return k;
}

const ElementwiseKernel& scale_plus_one() {  // in place: x = x * h + 1
  static const ElementwiseKernel k("float64 h", "float64 x", "x = x * h + 1",
                                   "graph_scale_plus_one");
  return k;
}

const ReductionKernel& l2norm() {
  static const ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                 "graph_l2norm");
  return k;
}

const char* kScaleSource = R"(
extern "C" __global__ void graph_scale(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
})";

}  // namespace

TEST_CASE("an ElementwiseKernel call is recorded by a capture and runs on each replay",
          "[ops][gpu][graph]") {
  Stream s(true);
  const auto hx = random_vector<float>(1000);
  ndarray x = asarray(hx);
  ndarray y = poisoned({1000}, float32);
  const auto want = host<float>(axpb()(x, 2.5f).array());
  synchronize_device();
  graph g = capture(s, [&] { axpb()(x, 2.5f, y); });
  CHECK(g.kernel_count() == 1);
  CHECK(g.node_count() == 1);
  CHECK(g.device() == current_device());
  CHECK(g.capture_stream() == s);
  s.synchronize();
  CHECK(all_poison(host<float>(y)));  // captured, not run
  g.replay(s);
  s.synchronize();
  CHECK(host<float>(y) == want);

  // In place: each replay applies the step once more.
  auto hz = random_vector<double>(777);
  ndarray z = asarray(hz);
  synchronize_device();
  graph step = capture(s, [&] { scale_plus_one()(0.5, z); });
  for (int r = 0; r < 3; ++r) step.replay(s);
  s.synchronize();
  for (int r = 0; r < 3; ++r)
    for (double& v : hz) v = v * 0.5 + 1;
  CHECK(host<double>(z) == hz);
}

TEST_CASE("ReductionKernel calls captured and replayed match their eager runs",
          "[ops][gpu][graph]") {
  Stream s(true);
  const auto h1 = random_vector<float>(1000);
  const auto h2 = random_vector<float>(std::size_t(1) << 22);  // split across blocks
  const auto h3 = random_vector<float>(64 * 300);
  ndarray x1 = asarray(h1), x2 = asarray(h2), x3 = asarray(h3, Shape{64, 300});
  const auto e1 = host<float>(l2norm()(x1).array());
  const auto e2 = host<float>(l2norm()(x2).array());
  const auto e3 = host<float>(l2norm()(x3, reduce_options{.axis = 1}).array());
  const auto e4 = host<float>(l2norm()(x3, reduce_options{.axis = 0}).array());
  ndarray o1 = poisoned({}, float32), o2 = poisoned({}, float32);
  ndarray o3 = poisoned({64}, float32), o4 = poisoned({300}, float32);
  synchronize_device();
  graph g = capture(s, [&] {
    l2norm()(x1, o1);
    l2norm()(x2, o2);
    l2norm()(x3, o3, reduce_options{.axis = 1});
    l2norm()(x3, o4, reduce_options{.axis = 0});
  });
  CHECK(g.kernel_count() == 4);
  s.synchronize();
  CHECK(all_poison(host<float>(o2)));
  g.replay(s);
  g.replay(s);  // the split reduction's counters are reset by the graph too
  s.synchronize();
  CHECK(close(host<float>(o1), e1));
  CHECK(close(host<float>(o2), e2));
  CHECK(close(host<float>(o3), e3));
  CHECK(close(host<float>(o4), e4));
}

TEST_CASE("RawKernel and RawModule launches captured and replayed match their eager runs",
          "[ops][gpu][graph]") {
  Stream s(true);
  RawKernel scale(kScaleSource, "graph_scale");
  RawModule m(R"(
template <class T> __global__ void graph_add(const T* x, const T* y, T* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] + y[i];
})",
              raw_options{.name_expressions = {"graph_add<double>"}});
  RawKernel add = m.get_function("graph_add<double>");
  const int n = 3000;
  const auto hx = random_vector<float>(n);
  const auto ha = random_vector<double>(n), hb = random_vector<double>(n);
  ndarray x = asarray(hx), y = poisoned({n}, float32);
  ndarray a = asarray(ha), b = asarray(hb), c = poisoned({n}, float64);
  synchronize_device();
  graph g = capture(s, [&] {
    scale(dim3((n + 255) / 256), dim3(256), x, y, 1.5f, n);
    add(dim3((n + 127) / 128), dim3(128), a, b, c, n);
  });
  CHECK(g.kernel_count() == 2);
  g.replay(s);
  s.synchronize();
  std::vector<float> wy(n);
  std::vector<double> wc(n);
  for (int i = 0; i < n; ++i) wy[std::size_t(i)] = 1.5f * hx[std::size_t(i)];
  for (int i = 0; i < n; ++i) wc[std::size_t(i)] = ha[std::size_t(i)] + hb[std::size_t(i)];
  CHECK(host<float>(y) == wy);
  CHECK(host<double>(c) == wc);
}

TEST_CASE("expressions, reductions and fused reductions born in a capture match eager runs",
          "[ops][gpu][graph]") {
  Stream s(true);
  const auto hx = random_vector<float>(5000), hy = random_vector<float>(5000);
  ndarray x = asarray(hx), y = asarray(hy);
  const auto ez = host<float>(sin(x) * 5 + y * y);
  const auto es = host<float>(sum(x * x));
  const auto en = host<float>(linalg::norm(x - y));
  const auto em = host<float>(mean(x));
  const auto ea = host<std::int64_t>(argmax(y));
  synchronize_device();
  ndarray z, s1, n1, m1, a1;
  graph g = capture(s, [&] {
    z = sin(x) * 5 + y * y;
    s1 = sum(x * x);
    n1 = linalg::norm(x - y);
    m1 = mean(x);
    a1 = argmax(y);
  });
  CHECK(g.kernel_count() >= 5);
  CHECK(z.buffer()->graph_owned());
  g.replay(s);
  s.synchronize();
  CHECK(host<float>(z) == ez);
  CHECK(close(host<float>(s1), es));
  CHECK(close(host<float>(n1), en));
  CHECK(close(host<float>(m1), em));
  CHECK(host<std::int64_t>(a1) == ea);
}

TEST_CASE("creation and copies inside a capture give NumPy's values on replay",
          "[ops][gpu][graph]") {
  Stream s(true);
  const auto hx = random_vector<float>(6 * 7);
  ndarray x = asarray(hx, Shape{6, 7});
  synchronize_device();
  ndarray zs, fl, ar, cp, ty, tr;
  graph g = capture(s, [&] {
    zs = zeros({100}, float32);
    fl = full({50}, 7, int16);
    ar = arange(0, 10, 3);
    cp = x.copy();
    ty = x.astype(float64);
    tr = x.T().copy();
  });
  g.replay(s);
  s.synchronize();
  CHECK(host<float>(zs) == std::vector<float>(100, 0.0f));
  CHECK(host<std::int16_t>(fl) == std::vector<std::int16_t>(50, 7));
  CHECK(host<std::int64_t>(ar) == std::vector<std::int64_t>{0, 3, 6, 9});
  CHECK(host<float>(cp) == hx);
  std::vector<double> wd(hx.begin(), hx.end());
  CHECK(host<double>(ty) == wd);
  std::vector<float> wt(hx.size());
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 7; ++j) wt[std::size_t(j * 6 + i)] = hx[std::size_t(i * 7 + j)];
  CHECK(host<float>(tr) == wt);
}

TEST_CASE("matmul, sort and argsort captured and replayed match eager runs; random is refused",
          "[ops][gpu][graph]") {
  Stream s(true);
  const auto ha = random_vector<float>(64 * 48), hb = random_vector<float>(48 * 32);
  ndarray a = asarray(ha, Shape{64, 48}), b = asarray(hb, Shape{48, 32});
  const auto hv = random_vector<float>(10000), hr = random_vector<float>(64 * 200);
  ndarray v = asarray(hv), rows = asarray(hr, Shape{64, 200});
  const auto em = host<float>(linalg::matmul(a, b));
  const auto ev = host<float>(sort(v));
  const auto er = host<float>(sort(rows));
  const auto ei = host<std::int64_t>(argsort(rows));
  auto rng = random::default_rng(42);
  const auto r0 = host<double>(rng.normal(1.0, 2.0, {16}));  // its generator exists already
  synchronize_device();
  ndarray m, sv, sr, si;
  graph g = capture(s, [&] {
    m = linalg::matmul(a, b);
    sv = sort(v);
    sr = sort(rows);
    si = argsort(rows);
    KILN_CHECK_THROWS(rng.normal(1.0, 2.0, {4096}), CaptureError,
                      Contains("random.Generator.normal"));
    KILN_CHECK_THROWS(rng.uniform(-3, 5, {1000}, float32), CaptureError,
                      Contains("random.Generator.uniform"));
    KILN_CHECK_THROWS(rng.integers(0, 6, {10}), CaptureError,
                      Contains("random.Generator.integers"));
  });
  g.replay(s);
  g.replay(s);
  s.synchronize();
  CHECK(close(host<float>(m), em, 1e-3));
  CHECK(host<float>(sv) == ev);
  CHECK(host<float>(sr) == er);
  CHECK(host<std::int64_t>(si) == ei);
  // cuBLAS and cuRAND still work eagerly on that stream after the capture.
  ndarray m2, r1;
  {
    StreamGuard on(s);
    m2 = linalg::matmul(a, b);
    r1 = rng.normal(1.0, 2.0, {16});
  }
  CHECK(close(host<float>(m2), em, 1e-3));
  CHECK(host<double>(r1) != r0);  // the generator moved on
}

TEST_CASE("a kernel first seen during a capture compiles then, and replays compile nothing",
          "[ops][gpu][graph]") {
  Stream s(true);
  const std::string nonce =
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  ElementwiseKernel k("float32 x", "float32 y", "y = x * 3 - 2; // " + nonce, "graph_new_" + nonce);
  const auto hx = random_vector<float>(512);
  ndarray x = asarray(hx), y = poisoned({512}, float32);
  synchronize_device();
  const auto before = cache::stats().nvrtc_compiles.load();
  graph g = capture(s, [&] { k(x, y); });
  const auto captured = cache::stats().nvrtc_compiles.load();
  CHECK(captured == before + 1);
  g.replay(s);
  s.synchronize();
  CHECK(cache::stats().nvrtc_compiles.load() == captured);
  std::vector<float> want(hx.size());
  for (std::size_t i = 0; i < hx.size(); ++i) want[i] = hx[i] * 3 - 2;
  CHECK(close(host<float>(y), want, 1e-6));  // the device may fuse the multiply-add
}

TEST_CASE("memory allocated in a capture is held by the graph and never handed out twice",
          "[ops][gpu][graph]") {
  auto& pool = get_default_memory_pool();
  synchronize_device();
  pool.free_all_blocks();
  const std::size_t used0 = pool.used_bytes();
  Stream s(true);
  const auto hx = random_vector<float>(5000);
  ndarray x = asarray(hx);
  std::unique_ptr<ndarray> old;
  {
    StreamGuard on(s);
    old = std::make_unique<ndarray>(x * 3.0f);  // freed on s during the capture
  }
  const auto old_range = range_of(*old);
  synchronize_device();
  ndarray keep, big, keep2;
  graph g = capture(s, [&] {
    ndarray t = x * 2.0f;  // a temporary, gone before the capture ends
    keep = t + 1.0f;
    big = full({1 << 20}, 0.0f, float32);
    big += 1.5f;
    ndarray u = *old + keep;  // old: x * 3
    old.reset();
    keep2 = u * 1.0f;
  });
  CHECK(keep.buffer()->graph_owned());
  CHECK(big.buffer()->graph_owned());
  CHECK_FALSE(x.buffer()->graph_owned());
  CHECK(g.memory_bytes() >= (std::size_t(4) << 20));
  const std::vector<std::pair<std::uintptr_t, std::uintptr_t>> held = {
      range_of(keep), range_of(big), range_of(keep2), old_range};
  std::vector<float> wk(hx.size()), wk2(hx.size());
  for (std::size_t i = 0; i < hx.size(); ++i) {
    wk[i] = hx[i] * 2.0f + 1.0f;
    wk2[i] = (hx[i] * 3.0f + wk[i]) * 1.0f;
  }
  // Eager arrays made while the graph lives, small and large, on its stream and on the null
  // stream, poisoned between replays: never in the graph's memory, never in its results.
  std::size_t bad_overlaps = 0;
  std::vector<ndarray> eager;
  for (int i = 0; i < 60; ++i) {
    g.replay(s);
    for (const Shape& shape : {Shape{100}, Shape{10000}, Shape{1 << 20}}) {
      ndarray e;
      if (i % 2) {
        StreamGuard on(s);
        e = empty(shape, float32);
        e.fill(-9.0f);
      } else {
        e = empty(shape, float32);
        e.fill(-9.0f);
      }
      for (const auto& h : held) bad_overlaps += overlaps(range_of(e), h);
      if (i % 7 == 0) eager.push_back(e);  // some stay, the rest go back to the pool at once
    }
  }
  synchronize_device();
  CHECK(bad_overlaps == 0);
  CHECK(host<float>(keep) == wk);
  CHECK(host<float>(keep2) == wk2);
  CHECK(host<float>(big) == std::vector<float>(std::size_t(1) << 20, 1.5f));
  // The graph goes first: the arrays it made stay valid, and their memory stays theirs.
  g = graph();
  synchronize_device();
  for (int i = 0; i < 20; ++i) {
    ndarray e = full({5000}, -1.0f, float32);
    CHECK_FALSE(overlaps(range_of(e), range_of(keep)));
  }
  synchronize_device();
  CHECK(host<float>(keep) == wk);
  keep = ndarray(), big = ndarray(), keep2 = ndarray(), x = ndarray();
  eager.clear();
  synchronize_device();
  CHECK(pool.used_bytes() == used0);  // nothing leaked
}

TEST_CASE("a graph replays on another stream, on the null stream, and from capture(fn)",
          "[ops][gpu][graph]") {
  Stream s1(true), s2;
  const auto hx = random_vector<float>(4096);
  ndarray x = asarray(hx), y = poisoned({4096}, float32);
  const auto want = host<float>(axpb()(x, -0.75f).array());
  synchronize_device();
  graph g = capture(s1, [&] { axpb()(x, -0.75f, y); });
  g.replay(s2);
  s2.synchronize();
  CHECK(host<float>(y) == want);
  y.fill(0.0f);
  synchronize_device();
  g.replay(Stream::null());
  CHECK(host<float>(y) == want);  // get() runs on the null stream, after the replay
  // capture(fn): a fresh stream; the replay goes to the current (null) stream.
  ndarray z = poisoned({4096}, float32);
  graph h = capture([&] { axpb()(x, -0.75f, z); });
  CHECK_FALSE(h.capture_stream().is_null());
  h.replay();
  CHECK(host<float>(z) == want);
}

TEST_CASE("graph updates rebind arrays and scalars of captured kiln kernels", "[ops][gpu][graph]") {
  Stream s(true);
  const int n = 2048;
  const auto h1 = random_vector<float>(n), h2 = random_vector<float>(n);
  ndarray x1 = asarray(h1), x2 = asarray(h2), y = poisoned({n}, float32),
          e = poisoned({n}, float32);
  RawKernel scale(kScaleSource, "graph_scale");
  synchronize_device();
  graph g = capture(s, [&] {
    axpb()(x1, 2.5f, y);
    scale(dim3((n + 255) / 256), dim3(256), x1, e, 0.125f, n);
  });
  REQUIRE(g.kernel_count() == 2);
  CHECK(g.update(x1, x2) == 2);
  CHECK(g.update_scalar(2.5f, -1.5f) == 1);
  CHECK(g.update_scalar(0.125f, 4.0f) == 1);  // a RawKernel float argument
  g.replay(s);
  s.synchronize();
  std::vector<float> wy(n), we(n);
  for (int i = 0; i < n; ++i) wy[std::size_t(i)] = h2[std::size_t(i)] * -1.5f + 1;
  for (int i = 0; i < n; ++i) we[std::size_t(i)] = 4.0f * h2[std::size_t(i)];
  CHECK(close(host<float>(y), wy, 1e-6));
  CHECK(host<float>(e) == we);

  // An expression's scalar.
  ndarray z = poisoned({n}, float32);
  synchronize_device();
  graph ge = capture(s, [&] { eval_into(x1 * 3.25f, z); });
  CHECK(ge.update_scalar(3.25f, 0.5f) == 1);
  ge.replay(s);
  s.synchronize();
  std::vector<float> wz(n);
  for (int i = 0; i < n; ++i) wz[std::size_t(i)] = h1[std::size_t(i)] * 0.5f;
  CHECK(host<float>(z) == wz);

  // What cannot be updated raises, and changes nothing.
  ndarray other = asarray(random_vector<float>(n)), wide = empty({n + 1}, float32);
  KILN_CHECK_THROWS(g.update(x2, empty({n, 1}, float32)), ShapeError, Contains("layout"));
  KILN_CHECK_THROWS(g.update(other, x1), ValueError, Contains("no captured kiln kernel"));
  KILN_CHECK_THROWS(g.update(x2, wide(slice(1, std::nullopt))), ValueError, Contains("aligned"));
  KILN_CHECK_THROWS(g.update_scalar(123.0f, 1.0f), ValueError, Contains("equal to 123"));
  y.fill(0.0f);
  synchronize_device();
  g.replay(s);
  s.synchronize();
  CHECK(close(host<float>(y), wy, 1e-6));
}

TEST_CASE("graph updates of array pairs swap the buffers of a time step", "[ops][gpu][graph]") {
  Stream s(true);
  const int n = 1000;
  static const ElementwiseKernel step("float64 u", "float64 v", "v = u * 0.5 + 1", "graph_step");
  auto hu = random_vector<double>(n);
  ndarray u = asarray(hu), v = poisoned({n}, float64);
  synchronize_device();
  graph g = capture(s, [&] { step(u, v); });
  for (int t = 0; t < 6; ++t) {
    g.replay(s);
    g.update({{u, v}, {v, u}});  // the next step reads what this one wrote
  }
  s.synchronize();
  for (int t = 0; t < 6; ++t)
    for (double& x : hu) x = x * 0.5 + 1;
  // Step t writes v for even t and u for odd t: the sixth wrote u.
  CHECK(host<double>(u) == hu);
}

TEST_CASE("calls a capture cannot record are refused and the capture goes on",
          "[ops][gpu][graph]") {
  Stream s(true), other;
  const auto hx = random_vector<float>(1000);
  ndarray x = asarray(hx), y = poisoned({1000}, float32);
  ndarray m = asarray(random_vector<double>(16), Shape{4, 4});
  ndarray rows = asarray(random_vector<float>(301 * 4), Shape{301, 4});
  const auto want = host<float>(axpb()(x, 2.5f).array());
  RawKernel scale(kScaleSource, "graph_scale");
  graph previous = capture(s, [&] { axpb()(x, 2.5f, y); });
  Event ev;
  std::vector<float> buffer(1000);
  const Stream null = Stream::null();
  synchronize_device();
  graph g = capture(s, [&] {
    KILN_CHECK_THROWS(x.get<float>(), CaptureError, Contains("ndarray::get()"));
    KILN_CHECK_THROWS(asarray(hx), CaptureError, Contains("copy_from_host"));
    KILN_CHECK_THROWS(s.synchronize(), CaptureError, Contains("Stream::synchronize()"));
    KILN_CHECK_THROWS(other.query(), CaptureError, Contains("Stream::query()"));
    KILN_CHECK_THROWS(ev.synchronize(), CaptureError, Contains("Event::synchronize()"));
    KILN_CHECK_THROWS(synchronize_device(), CaptureError, Contains("synchronize_device()"));
    KILN_CHECK_THROWS(get_default_memory_pool().free_all_blocks(), CaptureError,
                      Contains("free_all_blocks"));
    KILN_CHECK_THROWS(axpb()(x, 2.5f, y, launch_options{.stream = &null}), CaptureError,
                      Contains("legacy null stream"));
    KILN_CHECK_THROWS(scale(dim3(4), dim3(256), x, y, 1.0f, 1000, launch_options{.stream = &null}),
                      CaptureError, Contains("graph_scale"));
    KILN_CHECK_THROWS(linalg::svd(m), CaptureError, Contains("linalg.svd"));
    KILN_CHECK_THROWS(linalg::solve(m, m), CaptureError, Contains("linalg.solve"));
    KILN_CHECK_THROWS(sort(rows), CaptureError, Contains("sort of 301 rows"));
    KILN_CHECK_THROWS(profiler::benchmark([] {}), CaptureError, Contains("profiler::benchmark"));
    KILN_CHECK_THROWS(previous.replay(s), CaptureError, Contains("graph::replay()"));
    KILN_CHECK_THROWS(capture(other, [] {}), CaptureError, Contains("inside another capture"));
    KILN_CHECK_THROWS(x.copy_to_host(buffer.data()), CaptureError, Contains("copy_to_host"));
    axpb()(x, 2.5f, y);  // the capture still works
  });
  CHECK(g.kernel_count() == 1);
  y.fill(0.0f);
  synchronize_device();
  g.replay(s);
  s.synchronize();
  CHECK(host<float>(y) == want);
}

TEST_CASE("a capture ended by an exception or invalidated leaves the stream usable",
          "[ops][gpu][graph]") {
  Stream s(true);
  const auto hx = random_vector<float>(1000);
  ndarray x = asarray(hx), y = poisoned({1000}, float32);
  const auto want = host<float>(axpb()(x, 2.5f).array());
  synchronize_device();
  KILN_CHECK_THROWS(capture(s,
                            [&] {
                              axpb()(x, 2.5f, y);
                              x.get<float>();  // not caught: the capture is dropped
                            }),
                    CaptureError, Contains("ndarray::get()"));
  CHECK(s.capture_state() == capture_status::none);
  CHECK_FALSE(capturing());
  // A CUDA call kiln does not check (the raw runtime syncing the capturing stream).
  KILN_CHECK_THROWS(capture(s,
                            [&] {
                              axpb()(x, 2.5f, y);
                              if (cudaStreamSynchronize(s.handle()) != cudaSuccess)
                                cudaGetLastError();
                            }),
                    CaptureError, Contains("invalidated"));
  CHECK(s.capture_state() == capture_status::none);
  s.synchronize();
  CHECK(all_poison(host<float>(y)));                 // nothing ran
  axpb()(x, 2.5f, y, launch_options{.stream = &s});  // eager work on s
  s.synchronize();
  CHECK(host<float>(y) == want);
  KILN_CHECK_THROWS(capture(Stream::null(), [] {}), CaptureError, Contains("legacy null stream"));
  graph g = capture(s, [&] { axpb()(x, 1.0f, y); });  // and it captures again
  g.replay(s);
  s.synchronize();
  std::vector<float> w1(hx.size());
  for (std::size_t i = 0; i < hx.size(); ++i) w1[i] = hx[i] * 1.0f + 1;
  CHECK(host<float>(y) == w1);
}

TEST_CASE("one graph replayed from several threads on their own streams runs every replay once",
          "[ops][gpu][graph]") {
  static const ElementwiseKernel inc("float64 d", "float64 x", "x = x + d", "graph_inc");
  auto hx = random_vector<double>(10000);
  ndarray x = asarray(hx);
  synchronize_device();
  Stream cs(true);
  graph g = capture(cs, [&] { inc(1.0, x); });
  const int threads = 4, replays = 50;
  std::vector<std::thread> pool;
  std::vector<std::string> errors(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        Stream mine(true);
        for (int r = 0; r < replays; ++r) g.replay(mine);
        mine.synchronize();
      } catch (const std::exception& e) {
        errors[std::size_t(t)] = e.what();
      }
    });
  for (auto& th : pool) th.join();
  for (const auto& e : errors) CHECK(e.empty());
  synchronize_device();
  for (int r = 0; r < threads * replays; ++r)
    for (double& v : hx) v = v + 1;
  CHECK(host<double>(x) == hx);
}

TEST_CASE("kernels on programmatic edges see the results of the kernels before them",
          "[ops][gpu][graph]") {
  Stream s(true);
  const std::size_t n = std::size_t(1) << 21;  // many blocks per kernel
  const auto h = random_vector<float>(n);
  ndarray x = asarray(h), y = poisoned({std::int64_t(n)}, float32);
  ndarray total = poisoned({}, float32), z = poisoned({std::int64_t(n)}, float32);
  auto chain = [&] {
    for (int k = 0; k < 20; ++k) {
      eval_into(x * 0.5f + 1.0f, y);  // reads what the kernel before wrote ...
      eval_into(y * 2.0f - 1.0f, x);  // ... and writes what it read
    }
    sum(x, {}, false, {.out = total});
    eval_into(x * total, z);  // a 0-d result broadcast
  };
  synchronize_device();
  graph g = capture(s, chain);
  // Every kernel but the first, and the reduction if a memset (its counters) comes before it.
  CHECK(g.programmatic_edge_count() >= 40);
  g.replay(s);
  g.replay(s);
  s.synchronize();
  std::vector<float> hx = h, hy(n);
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 20; ++k)
      for (std::size_t i = 0; i < n; ++i) {
        hy[i] = hx[i] * 0.5f + 1.0f;
        hx[i] = hy[i] * 2.0f - 1.0f;
      }
  CHECK(host<float>(x) == hx);
  CHECK(host<float>(y) == hy);
  const float t = host<float>(total)[0];
  double ht = 0;
  for (float v : hx) ht += v;
  CHECK(std::fabs(double(t) - ht) <= 1e-4 * std::fabs(ht));
  std::vector<float> hz(n);
  for (std::size_t i = 0; i < n; ++i) hz[i] = hx[i] * t;
  CHECK(host<float>(z) == hz);

  // The same graph with plain edges gives the same bits.
  const auto gx = host<float>(x), gz = host<float>(z);
  ndarray x2 = asarray(h);
  synchronize_device();
  graph plain;
  {
    test::ScopedEnv off("KILN_GRAPH_PROGRAMMATIC_EDGES", "0");
    x = x2;
    plain = capture(s, chain);
  }
  CHECK(plain.programmatic_edge_count() == 0);
  plain.replay(s);
  plain.replay(s);
  s.synchronize();
  CHECK(host<float>(x) == gx);
  CHECK(host<float>(z) == gz);
}
