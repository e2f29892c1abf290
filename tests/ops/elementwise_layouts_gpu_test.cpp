// Elementwise kernels and expressions on every layout family (issue 16): broadcasts (outer
// sums, rows, columns, size-1 axes anywhere), N-D permuted operands and outputs, slices with
// any step, mixes of these; every dtype class, 0-d and empty loops, past 2^31 elements.
// Results against a host reference that walks the same views of host copies; every output is
// a view into a poisoned buffer, and the elements outside the view must keep the poison.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <vector>

#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/engine/expression.hpp"
#include "kiln/library/creation.hpp"
#include "kiln/runtime/half.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

// bool travels as bytes on the host (std::vector<bool> has no data()).
template <class T>
using Store = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

template <class T>
std::vector<Store<T>> random_host(std::size_t n) {
  if constexpr (std::is_same_v<T, bool>) {
    auto b = test::random_vector<bool>(n);
    return std::vector<std::uint8_t>(b.begin(), b.end());
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bf16>) {
    auto f = test::random_vector<float>(n);
    std::vector<T> h(n);
    for (std::size_t k = 0; k < n; ++k) h[k] = T(std::round(f[k] * 4) / 4);  // exact in 16 bits
    return h;
  } else {
    return test::random_vector<T>(n);
  }
}

// A device buffer and its host copy.
template <class T>
struct Base {
  std::vector<Store<T>> host;
  ndarray dev;

  static Base random(const Shape& s) {
    return upload(random_host<T>(std::size_t(shape_size(s))), s);
  }
  static Base poisoned(const Shape& s) {
    std::vector<Store<T>> h(std::size_t(shape_size(s)));
    std::memset(static_cast<void*>(h.data()), 0x5A, h.size() * sizeof(Store<T>));
    return upload(std::move(h), s);
  }
  static Base upload(std::vector<Store<T>> h, const Shape& s) {
    Base b{std::move(h), {}};
    if constexpr (std::is_same_v<T, bool>)
      b.dev = asarray(b.host, s).view(kiln::bool_);
    else
      b.dev = asarray(b.host, s);
    return b;
  }
  std::vector<Store<T>> download() const {
    if constexpr (std::is_same_v<T, bool>)
      return dev.view(uint8).get<std::uint8_t>();
    else
      return dev.get<T>();
  }
};

// A view of a Base in elements, broadcast (right-aligned) to a loop shape.
struct ViewMap {
  Shape shape, strides;
  std::int64_t offset = 0;
  std::int64_t at(const Shape& loop, const Shape& idx) const {
    std::int64_t off = offset;
    const int lead = loop.size() - shape.size();
    for (int d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) off += idx[lead + d] * strides[d];
    return off;
  }
};

ViewMap map_view(const ndarray& view, const ndarray& base) {
  const auto isz = std::int64_t(view.itemsize());
  ViewMap m;
  m.shape = view.shape();
  m.strides = view.strides();
  for (auto& s : m.strides) s /= isz;
  m.offset = (static_cast<const char*>(view.data()) - static_cast<const char*>(base.data())) / isz;
  return m;
}

template <class T>
bool same_bytes(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Runs `run()` (which writes `out`, a view of `out_base`) and checks the whole of out_base:
// op(inputs at the same loop index) inside the view, the poison elsewhere.
template <class T, class Op, class Run>
void check_case(const std::string& what,
                const std::vector<std::pair<const Base<T>*, ndarray>>& inputs,
                const Base<T>& out_base, const ndarray& out, Op op, Run run) {
  INFO(what);
  const Shape loop = out.shape();
  std::vector<ViewMap> maps;
  for (const auto& [b, v] : inputs) maps.push_back(map_view(v, b->dev));
  const ViewMap om = map_view(out, out_base.dev);
  std::vector<Store<T>> want = out_base.host;
  Shape idx = Shape::filled(loop.size(), 0);
  const std::int64_t n = shape_size(loop);
  std::vector<Store<T>> args(inputs.size());
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t rem = j;
    for (int d = loop.size() - 1; d >= 0; --d) {
      idx[d] = rem % loop[d];
      rem /= loop[d];
    }
    for (std::size_t k = 0; k < inputs.size(); ++k)
      args[k] = inputs[k].first->host[std::size_t(maps[k].at(loop, idx))];
    want[std::size_t(om.at(loop, idx))] = op(args, j);
  }
  run();
  const auto got = out_base.download();
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!same_bytes(got[k], want[k]) && bad++ == 0) first = k;
  INFO("mismatches " << bad << ", first at flat " << first);
  CHECK(bad == 0);
}

// z = x - y on the host, as the device computes it for each dtype class.
template <class T>
Store<T> host_sub(Store<T> a, Store<T> b) {
  if constexpr (std::is_same_v<T, bool>)
    return Store<T>(a != b);
  else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bf16>)
    return T(float(a) - float(b));
  else
    return T(a - b);
}

std::string shape_text(const ndarray& a) {
  return fmt::format("shape {} strides {}", a.shape().str(), a.strides().str());
}

// x - y over views of x and y written into `out` (a view of a poisoned base), as an
// ElementwiseKernel call and as an expression.
template <class T>
void check_sub(const std::string& what, const Base<T>& xb, const ndarray& x, const Base<T>& yb,
               const ndarray& y, const Shape& out_base_shape,
               const std::function<ndarray(const ndarray&)>& out_view) {
  static const ElementwiseKernel k("T x, T y", "T z", "z = x - y", "layouts_sub");
  auto op = [](const std::vector<Store<T>>& a, std::int64_t) { return host_sub<T>(a[0], a[1]); };
  const std::string desc =
      fmt::format("{} {}: x {}, y {}", what, dtype_of<T>().name(), shape_text(x), shape_text(y));
  {
    const Base<T> ob = Base<T>::poisoned(out_base_shape);
    const ndarray out = out_view(ob.dev);
    check_case<T>(desc + " kernel, out " + shape_text(out), {{&xb, x}, {&yb, y}}, ob, out, op,
                  [&] { k(x, y, out); });
  }
  if constexpr (!std::is_same_v<T, bool>) {  // bool - bool is not a NumPy operator
    const Base<T> ob = Base<T>::poisoned(out_base_shape);
    ndarray out = out_view(ob.dev);
    check_case<T>(desc + " expression", {{&xb, x}, {&yb, y}}, ob, out, op,
                  [&] { eval_into(expr(x) - y, out); });
  }
}

ndarray whole(const ndarray& a) { return a; }

// Every layout family on dtype T, small enough to check every element.
template <class T>
void check_families() {
  SECTION("broadcasts") {
    // Outer difference, row and column vectors, NCHW against a per-channel vector, size-1
    // axes anywhere, a 0-d operand.
    const auto col = Base<T>::random({333, 1}), row = Base<T>::random({1, 260}),
               full = Base<T>::random({333, 260});
    check_sub<T>("outer", col, col.dev, row, row.dev, {333, 260}, whole);
    check_sub<T>("row", full, full.dev, row, row.dev.reshape({260}), {333, 260}, whole);
    check_sub<T>("column", col, col.dev, full, full.dev, {333, 260}, whole);
    const auto x4 = Base<T>::random({3, 24, 7, 9}), c4 = Base<T>::random({1, 24, 1, 1});
    check_sub<T>("per channel", x4, x4.dev, c4, c4.dev, {3, 24, 7, 9}, whole);
    const auto p = Base<T>::random({1, 30, 1, 8}), q = Base<T>::random({5, 1, 1, 1});
    check_sub<T>("size-1 axes", p, p.dev, q, q.dev, {5, 30, 1, 8}, whole);
    const auto s = Base<T>::random({});
    check_sub<T>("0-d operand", full, full.dev, s, s.dev, {333, 260}, whole);
    check_sub<T>("0-d loop", s, s.dev, s, s.dev, {}, whole);
    // Rows of every alignment (lengths 130, 131, 136; reversed, from an odd offset, every
    // other element) broadcast over a batch axis into a contiguous output: gathered loops
    // take each input's vectors whole (aligned, forwards or reversed), one element for all,
    // or element by element.
    for (const std::int64_t n : {130, 131, 136}) {
      const auto m = Base<T>::random({61, n}), b = Base<T>::random({5, 61, n});
      check_sub<T>(fmt::format("batch minus rows of {}", n), b, b.dev, m, m.dev, {5, 61, n}, whole);
      check_sub<T>(fmt::format("reversed rows of {} minus a batch", n), m,
                   m.dev(all, slice(std::nullopt, std::nullopt, -1)), b, b.dev, {5, 61, n}, whole);
      const auto m1 = Base<T>::random({61, n + 1}), m2 = Base<T>::random({61, 2 * n});
      check_sub<T>(fmt::format("batch minus rows of {} from offset 1", n), b, b.dev, m1,
                   m1.dev(all, slice(1, std::nullopt)), {5, 61, n}, whole);
      check_sub<T>(fmt::format("every other element of rows of {} minus a batch", 2 * n), m2,
                   m2.dev(all, slice(std::nullopt, std::nullopt, 2)), b, b.dev, {5, 61, n}, whole);
    }
    // Short rows into a contiguous output: vectors cross rows between groups of inputs (rows
    // of 10: pairs; 12: fours; 6: pairs; 29: one by one), inputs constant along the rows (a
    // column, a (C, 1, 1) vector) read once per row, a row vector by groups.
    const auto h = Base<T>::random({4, 37, 50, 1}), c37 = Base<T>::random({37, 1, 1});
    check_sub<T>("rows of 10, both constant along them", h, h.dev, c37, c37.dev, {4, 37, 50, 10},
                 whole);
    for (const std::int64_t n : {6, 12, 29}) {
      const auto c = Base<T>::random({300, 1}), r = Base<T>::random({n});
      check_sub<T>(fmt::format("column minus rows of {}", n), c, c.dev, r, r.dev, {300, n}, whole);
      check_sub<T>(fmt::format("rows of {} minus a column", n), r, r.dev, c, c.dev, {300, n},
                   whole);
    }
    // A batch laid out as the output, rows of odd length (17, 131), against a column: whole
    // vectors where the output's are (either side of the minus); one element off its vectors
    // (from offset 1 of its base), element by element.
    for (const std::int64_t n : {17, 131}) {
      const auto bt = Base<T>::random({6, 9, n}), c9 = Base<T>::random({9, 1}),
                 b1 = Base<T>::random({6 * 9 * n + 1});
      check_sub<T>(fmt::format("batch of rows of {} minus a column", n), bt, bt.dev, c9, c9.dev,
                   {6, 9, n}, whole);
      check_sub<T>(fmt::format("column minus a batch of rows of {}", n), c9, c9.dev, bt, bt.dev,
                   {6, 9, n}, whole);
      check_sub<T>(fmt::format("batch of rows of {} one element off, minus a column", n), b1,
                   b1.dev(slice(1, std::nullopt)).reshape({6, 9, n}), c9, c9.dev, {6, 9, n}, whole);
    }
    const auto r1226 = Base<T>::random({5, 1226}), v1226 = Base<T>::random({1, 1, 1226});
    check_sub<T>("batch of rows of 1226", r1226, r1226.dev, v1226, v1226.dev, {3, 5, 1226}, whole);
    // Every input smaller than the output, tiles nine-tenths full or more: row tiles (whole
    // tiles; edge tiles in both axes; a batch axis; a sliced output).
    const auto c128 = Base<T>::random({128, 1}), r192 = Base<T>::random({1, 192});
    check_sub<T>("outer in whole row tiles", c128, c128.dev, r192, r192.dev, {128, 192}, whole);
    const auto c250 = Base<T>::random({250, 1}), r600 = Base<T>::random({1, 600});
    check_sub<T>("outer in edge row tiles", c250, c250.dev, r600, r600.dev, {250, 600}, whole);
    const auto b3 = Base<T>::random({3, 1, 256}), b64 = Base<T>::random({64, 1});
    check_sub<T>("batched row tiles", b3, b3.dev, b64, b64.dev, {3, 64, 256}, whole);
    check_sub<T>("row tiles into a reversed output", c250, c250.dev, r600, r600.dev, {250, 600},
                 [](const ndarray& o) { return o(slice(std::nullopt, std::nullopt, -1), all); });
  }
  SECTION("permutations") {
    const Shape base{7, 40, 33};
    const auto x = Base<T>::random(base);
    const std::vector<Shape> perms = {{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (const Shape& perm : perms) {
      const ndarray xt = x.dev.transpose(perm);
      const auto y = Base<T>::random(xt.shape());
      // Permuted input, contiguous output; and a permuted output (the same permutation of a
      // base of the input's shape) with a contiguous input.
      check_sub<T>(fmt::format("perm {}", perm.str()), x, xt, y, y.dev, xt.shape(), whole);
      check_sub<T>(fmt::format("out perm {}", perm.str()), y, y.dev, x, xt, base,
                   [&](const ndarray& o) { return o.transpose(perm); });
    }
    // 4-D, with a size-1 axis, a short axis and tile edges.
    const auto a = Base<T>::random({3, 1, 50, 20});
    const ndarray at = a.dev.transpose({3, 2, 1, 0});
    const auto b = Base<T>::random(at.shape());
    check_sub<T>("perm (3, 2, 1, 0)", a, at, b, b.dev, at.shape(), whole);
    const auto c = Base<T>::random({2, 17, 3, 65});
    const ndarray ct = c.dev.transpose({0, 3, 2, 1});
    const auto e = Base<T>::random(ct.shape());
    check_sub<T>("perm (0, 3, 2, 1)", c, ct, e, e.dev, ct.shape(), whole);
    // Both tiled axes hold whole 16-byte units (float16: 16 elements a thread), with edge
    // tiles along both (40 x 72 in 64 x 64 tiles), over a batch axis.
    const auto wu = Base<T>::random({2, 72, 40});
    const ndarray wut = wu.dev.transpose({0, 2, 1});
    const auto wv = Base<T>::random(wut.shape());
    check_sub<T>("whole units, perm (0, 2, 1)", wu, wut, wv, wv.dev, wut.shape(), whole);
    // Short, odd axes take the tile that pads them least (8 x 128 for 35 x 97 float32), over
    // a batch axis too.
    const auto w = Base<T>::random({3, 97, 35}), z = Base<T>::random({3, 35, 97});
    check_sub<T>("35 x 97 transposed", w, w.dev.transpose({0, 2, 1}), z, z.dev, {3, 35, 97}, whole);
    // Two inputs permuted differently, each contiguous along an axis of its own, past 4 MiB:
    // boxes of (axis 2, axis 0, axis 3); for 1-byte dtypes (the box would read 24 bytes at a
    // time along y's axis) the tile follows the first, the second is copied to C order first.
    const auto p = Base<T>::random({70, 40, 24, 64}), q = Base<T>::random({70, 64, 40, 24});
    check_sub<T>("permuted differently", p, p.dev.transpose({2, 1, 3, 0}), q,
                 q.dev.transpose({3, 2, 1, 0}), {24, 40, 64, 70}, whole);
    // Both inputs transposed with the output: the loop follows the output.
    const auto u = Base<T>::random({90, 45}), v = Base<T>::random({90, 45});
    check_sub<T>("all transposed", u, u.dev.T(), v, v.dev.T(), {90, 45},
                 [](const ndarray& o) { return o.T(); });
    // Short sides over two axes: 14 cols that y and z run on from into the 34 axis (x along
    // 20 x 61 rows); 6 rows that x runs on from into the 41 axis; both (20 rows into 30, 12
    // cols into 9); the first with x reversed along its rows and from an odd offset; inputs
    // into a permuted output (the loop follows it), the inputs staged along 33 rows on into their
    // 16 axis.
    const slice rev(std::nullopt, std::nullopt, -1);
    const auto sc = Base<T>::random({14, 34, 20, 61}), sy = Base<T>::random({20, 61, 34, 14});
    check_sub<T>("cols over two axes", sc, sc.dev.transpose({2, 3, 1, 0}), sy, sy.dev,
                 {20, 61, 34, 14}, whole);
    check_sub<T>("cols over two axes, x reversed", sc,
                 sc.dev(all, all, all, rev).transpose({2, 3, 1, 0}), sy, sy.dev, {20, 61, 34, 14},
                 whole);
    const auto so = Base<T>::random({14, 34, 20, 62});
    check_sub<T>("cols over two axes, x one element in", so,
                 so.dev(all, all, all, slice(1, std::nullopt)).transpose({2, 3, 1, 0}), sy, sy.dev,
                 {20, 61, 34, 14}, whole);
    const auto sr = Base<T>::random({52, 13, 41, 6}), sry = Base<T>::random({41, 13, 6, 52});
    check_sub<T>("rows over two axes", sr, sr.dev.transpose({2, 1, 3, 0}), sry, sry.dev,
                 {41, 13, 6, 52}, whole);
    const auto sb = Base<T>::random({12, 9, 30, 20}), sby = Base<T>::random({20, 30, 9, 12});
    check_sub<T>("rows and cols over two axes", sb, sb.dev.transpose({3, 2, 1, 0}), sby, sby.dev,
                 {20, 30, 9, 12}, whole);
    check_sub<T>("rows and cols over two axes, from y", sby, sby.dev, sb,
                 sb.dev.transpose({3, 2, 1, 0}), {20, 30, 9, 12}, whole);
    const auto sp = Base<T>::random({25, 13, 16, 33}), spy = Base<T>::random({25, 13, 16, 33});
    check_sub<T>("into a permuted output, rows over two axes", sp, sp.dev, spy, spy.dev,
                 {16, 13, 33, 25}, [](const ndarray& o) {
                   return o.transpose({3, 1, 0, 2});
                 });
  }
  SECTION("short axes beside the last") {
    // An input contiguous along a short axis next to the last (tiles 8 high over 6 rows), the
    // same read backwards, beside a broadcast column; a long axis against a last one of 35,
    // into every other row of an output.
    const slice rev(std::nullopt, std::nullopt, -1);
    const auto x = Base<T>::random({37, 100, 6}), y = Base<T>::random({37, 6, 100});
    const ndarray xt = x.dev.transpose({0, 2, 1});  // (37, 6, 100)
    check_sub<T>("contiguous along a short middle axis", x, xt, y, y.dev, {37, 6, 100}, whole);
    check_sub<T>("the same read backwards", x, x.dev(rev, all, rev).transpose({0, 2, 1}), y, y.dev,
                 {37, 6, 100}, whole);
    const auto col = Base<T>::random({37, 6, 1});
    check_sub<T>("beside a broadcast column", x, xt, col, col.dev, {37, 6, 100}, whole);
    const auto a = Base<T>::random({35, 17, 300}), b = Base<T>::random({300, 17, 35});
    check_sub<T>("300 against 35 into every other row", a, a.dev.transpose({2, 1, 0}), b, b.dev,
                 {600, 17, 35},
                 [](const ndarray& o) { return o(slice(0, std::nullopt, 2), all, all); });
  }
  SECTION("a short axis beside a long one (interleaved)") {
    // Images between channels-last and channels-first, 2 to 8 channels (interleaved loops:
    // each thread takes a group of pixels in every channel) over 9 x 37 pixels, whose 333
    // leave a partial group; per-channel and per-pixel inputs; tall narrow matrices transposed, odd
    // (one element a group) and of whole groups; a batch axis that does not merge; an output
    // off its vectors; 9 channels (past the interleaved loop's reach).
    for (const std::int64_t ch : {2, 3, 4, 5, 8, 9}) {
      const auto nhwc = Base<T>::random({5, 9, 37, ch}), nchw = Base<T>::random({5, ch, 9, 37});
      check_sub<T>(fmt::format("NHWC -> NCHW, {} channels", ch), nhwc,
                   nhwc.dev.transpose({0, 3, 1, 2}), nchw, nchw.dev, {5, ch, 9, 37}, whole);
      check_sub<T>(fmt::format("NCHW -> NHWC, {} channels", ch), nchw,
                   nchw.dev.transpose({0, 2, 3, 1}), nhwc, nhwc.dev, {5, 9, 37, ch}, whole);
      const auto mean = Base<T>::random({1, ch, 1, 1}), mean_last = Base<T>::random({ch});
      check_sub<T>(fmt::format("NHWC -> NCHW minus a per-channel value, {} channels", ch), nhwc,
                   nhwc.dev.transpose({0, 3, 1, 2}), mean, mean.dev.broadcast_to({5, ch, 9, 37}),
                   {5, ch, 9, 37}, whole);
      check_sub<T>(fmt::format("NCHW -> NHWC minus a per-channel value, {} channels", ch), nchw,
                   nchw.dev.transpose({0, 2, 3, 1}), mean_last,
                   mean_last.dev.broadcast_to({5, 9, 37, ch}), {5, 9, 37, ch}, whole);
      const auto per_pixel = Base<T>::random({5, 1, 9, 37});
      check_sub<T>(fmt::format("NHWC -> NCHW minus a per-pixel plane, {} channels", ch), nhwc,
                   nhwc.dev.transpose({0, 3, 1, 2}), per_pixel,
                   per_pixel.dev.broadcast_to({5, ch, 9, 37}), {5, ch, 9, 37}, whole);
    }
    for (const std::int64_t n : {1001, 1024}) {
      const auto tall = Base<T>::random({n, 3}), wide = Base<T>::random({3, n}),
                 other = Base<T>::random({3, n});
      check_sub<T>(fmt::format("({}, 3).T - y", n), tall, tall.dev.T(), wide, wide.dev, {3, n},
                   whole);
      check_sub<T>(fmt::format("x - y into ({}, 3).T", n), wide, wide.dev, other, other.dev, {n, 3},
                   [](const ndarray& o) { return o.T(); });
    }
    const auto batched = Base<T>::random({3, 4, 333, 4}), planes = Base<T>::random({3, 2, 4, 333});
    check_sub<T>("NHWC -> NCHW over a stepped batch axis", batched,
                 batched.dev(all, slice(0, std::nullopt, 2)).transpose({0, 1, 3, 2}), planes,
                 planes.dev, {3, 2, 4, 333}, whole);
    const auto img = Base<T>::random({4, 333, 3}), flat = Base<T>::random({4, 3, 333});
    check_sub<T>("NCHW -> NHWC into an output one element in", flat, flat.dev.transpose({0, 2, 1}),
                 img, img.dev, {4 * 333 * 3 + 1}, [](const ndarray& o) {
                   return o(slice(1, std::nullopt)).reshape({4, 333, 3});
                 });
  }
  SECTION("two inputs permuted differently (packed boxes)") {
    // x contiguous along axis 2, y along axis 0, z along the last: boxes of (a chunk of axis 0,
    // axis 2, axis 3), each input read in its own order (boxes of 4 to 64 of axis 0's 40 rows
    // by dtype: for most the last box part empty). y read backwards along its axis; into a
    // reversed output.
    const slice rev(std::nullopt, std::nullopt, -1);
    const auto p = Base<T>::random({9, 7, 40, 32}), q = Base<T>::random({9, 32, 7, 40});
    const ndarray pt = p.dev.transpose({2, 1, 3, 0}), qt = q.dev.transpose({3, 2, 1, 0});
    check_sub<T>("permuted differently", p, pt, q, qt, {40, 7, 32, 9}, whole);
    check_sub<T>("the second read backwards", p, pt, q,
                 q.dev(all, all, all, rev).transpose({3, 2, 1, 0}), {40, 7, 32, 9}, whole);
    check_sub<T>("into a reversed output", p, pt, q, qt, {40, 7, 32, 9},
                 [&](const ndarray& o) { return o(rev, all, all, all); });
    // Over a batch axis of 3 and an odd last axis of 17.
    const auto u = Base<T>::random({17, 3, 50, 36}), v = Base<T>::random({17, 36, 3, 50});
    check_sub<T>("permuted differently over a batch axis", u, u.dev.transpose({2, 1, 3, 0}), v,
                 v.dev.transpose({3, 2, 1, 0}), {50, 3, 36, 17}, whole);
  }
  SECTION("slices") {
    const auto x = Base<T>::random({61, 131}), y = Base<T>::random({61, 131});
    const slice rev(std::nullopt, std::nullopt, -1);
    auto both = [&](const char* what, const ndarray& xs, const ndarray& ys) {
      check_sub<T>(what, x, xs, y, ys, xs.shape(), whole);
    };
    both("x[:, ::2]", x.dev(all, slice(0, std::nullopt, 2)), y.dev(all, slice(0, 66, 1)));
    both("x[::-1, ::-1]", x.dev(rev, rev), y.dev);
    both("x[:, ::-1] against y[:, ::-1]", x.dev(all, rev), y.dev(all, rev));
    both("offset windows", x.dev(slice(3, 50, 1), slice(1, 121, 1)),
         y.dev(slice(0, 47, 1), slice(8, 128, 1)));
    both("steps 3 and -2", x.dev(slice(0, std::nullopt, 3), slice(130, 0, -2)),
         y.dev(slice(1, 22, 1), slice(0, 65, 1)));
    // A sliced output: the elements between keep the poison.
    check_sub<T>("out[:, ::2]", x, x.dev(all, slice(0, 66, 1)), y, y.dev(all, slice(0, 66, 1)),
                 {61, 131}, [](const ndarray& o) { return o(all, slice(0, std::nullopt, 2)); });
    check_sub<T>("out[::-1]", x, x.dev, y, y.dev, {61, 131},
                 [](const ndarray& o) { return o(slice(std::nullopt, std::nullopt, -1), all); });
  }
  SECTION("contiguous windows off their vectors") {
    // Every operand contiguous, an input one to seven elements past a vector boundary
    // (np.diff's x[1:] - x[:-1]): for 1- to 4-byte dtypes a gathered loop with the output by
    // whole vectors and that input element by element; lengths that leave a partial last
    // vector; both inputs off, by different amounts; an output off its vectors (contiguous,
    // one element an access); in 2-D with reduce_dims off.
    const std::int64_t n = 4099;
    const auto a = Base<T>::random({n + 8}), b = Base<T>::random({n + 8});
    for (const std::int64_t from : {1, 2, 3, 5, 7}) {
      const ndarray xs = a.dev(slice(from, from + n)), ys = b.dev(slice(0, n));
      check_sub<T>(fmt::format("x[{}:] - y", from), a, xs, b, ys, {n}, whole);
      check_sub<T>(fmt::format("y - x[{}:]", from), b, ys, a, xs, {n}, whole);
      check_sub<T>(fmt::format("x[{}:] - y[3:]", from), a, xs, b, b.dev(slice(3, 3 + n)), {n},
                   whole);
      check_sub<T>(fmt::format("x[{}:] - y into out[1:]", from), a, xs, b, ys, {n + 1},
                   [&](const ndarray& o) { return o(slice(1, std::nullopt)); });
    }
    check_sub<T>("x[1:] - x[:-1]", a, a.dev(slice(1, n + 1)), a, a.dev(slice(0, n)), {n}, whole);
    const auto m = Base<T>::random({64 * 72 + 3});
    const ndarray m2 = m.dev(slice(3, std::nullopt)).reshape({64, 72});
    const auto full = Base<T>::random({64, 72});
    check_sub<T>("(64, 72) one window from offset 3", m, m2, full, full.dev, {64, 72}, whole);
    static const ElementwiseKernel keep("T x, T y", "T z", "z = x - y", "layouts_sub_dims",
                                        {.reduce_dims = false});
    auto op = [](const std::vector<Store<T>>& g, std::int64_t) { return host_sub<T>(g[0], g[1]); };
    const auto ob = Base<T>::poisoned({64, 72});
    check_case<T>("(64, 72) from offset 3, reduce_dims off", {{&m, m2}, {&full, full.dev}}, ob,
                  ob.dev, op, [&] { keep(m2, full.dev, ob.dev); });
  }
  SECTION("mixes") {
    // A permuted, sliced input against a broadcast one, into a sliced, permuted output.
    const auto x = Base<T>::random({40, 9, 70}), r = Base<T>::random({1, 35});
    const ndarray xs =
        x.dev(slice(0, std::nullopt, 2), 3, slice(69, std::nullopt, -2)).T();  // (35, 20)
    check_sub<T>("permuted slice minus a row", x, xs, r, r.dev.reshape({35, 1}), {20, 70},
                 [](const ndarray& o) { return o(all, slice(0, 35, 1)).T(); });
    const auto m = Base<T>::random({64, 48, 2}), col = Base<T>::random({48, 1});
    check_sub<T>("transposed stepped against a column", m, m.dev(all, all, 1).T(), col, col.dev,
                 {48, 64}, whole);
  }
  SECTION("transposes of odd lines and offsets") {
    // Tiled loops whose lines are not whole units or start off a unit's boundary (odd lengths,
    // views one or more elements in, lines of 3), transposed outputs from odd offsets, and an
    // output read before it is written.
    const auto x = Base<T>::random({203, 77}), y = Base<T>::random({70, 200});
    check_sub<T>("odd transposed from offsets", x, x.dev(slice(3, std::nullopt), slice(5, 75)).T(),
                 y, y.dev, {71, 203},
                 [](const ndarray& o) { return o(slice(1, std::nullopt), slice(3, 203)); });
    const auto w = Base<T>::random({9, 131, 3}), v = Base<T>::random({9, 3, 131});
    check_sub<T>("lines of 3", w, w.dev.transpose({0, 2, 1}), v, v.dev, {9, 3, 131}, whole);
    check_sub<T>("lines of 3 into a transposed output", v, v.dev, w, w.dev.transpose({0, 2, 1}),
                 {9, 131, 3}, [](const ndarray& o) {
                   return o.transpose({0, 2, 1});
                 });
    const auto a = Base<T>::random({301, 45}), b = Base<T>::random({44, 300});
    check_sub<T>("transposed output from an odd offset", b, b.dev, a,
                 a.dev(slice(1, std::nullopt), slice(1, std::nullopt)).T(), {302, 47},
                 [](const ndarray& o) { return o(slice(2, std::nullopt), slice(3, 47)).T(); });
    // Two outputs, the second transposed against the first: the loop follows the first, so the
    // second is staged and stored down odd rows from an odd offset. Each checked on the host.
    static const ElementwiseKernel two("T x, T y", "T z, T t", "z = x - y; t = x - y",
                                       "layouts_two_outputs");
    {
      const auto tb = Base<T>::poisoned({205, 75});
      const ndarray t_out = tb.dev(slice(2, 202), slice(4, 75)).T();  // (71, 200)
      const auto zb = Base<T>::poisoned({71, 203});
      const ndarray z_out = zb.dev(all, slice(3, 203));
      const ndarray xs = x.dev(slice(3, std::nullopt), slice(5, 76)).T();  // (71, 200)
      const auto yb = Base<T>::random({71, 200});
      auto op = [](const std::vector<Store<T>>& g, std::int64_t) {
        return host_sub<T>(g[0], g[1]);
      };
      check_case<T>("two outputs: z", {{&x, xs}, {&yb, yb.dev}}, zb, z_out, op,
                    [&] { two(xs, yb.dev, z_out, t_out); });
      check_case<T>("two outputs: t, transposed", {{&x, xs}, {&yb, yb.dev}}, tb, t_out, op,
                    [&] { two(xs, yb.dev, z_out, t_out); });
    }
    static const ElementwiseKernel minus_z("T x", "T z", "z = x - z", "layouts_minus_z");
    const auto ob = Base<T>::poisoned({203, 77});
    const ndarray out = ob.dev(slice(3, std::nullopt), slice(5, 75));  // (200, 70)
    const ndarray xin = y.dev.T();                                     // (200, 70)
    check_case<T>(
        "in place on an odd window, transposed input", {{&y, xin}, {&ob, out}}, ob, out,
        [](const std::vector<Store<T>>& g, std::int64_t) { return host_sub<T>(g[0], g[1]); },
        [&] { minus_z(xin, out); });
  }
  SECTION("tall narrow transposes (a tile one run of memory)") {
    // Rows few enough for one tile to hold them all: a transposed operand's tile is then one
    // run of memory, moved by 16-byte vectors where the run is aligned (runs): odd and even
    // rows, lengths whose last tile leaves a partial vector, a view one element in (every run
    // misaligned: element by element), a batch axis, and the output transposed instead.
    for (const std::int64_t rows : {9, 21, 32})
      for (const std::int64_t n : {1001, 1024}) {
        const auto tall = Base<T>::random({n, rows}), wide = Base<T>::random({rows, n}),
                   other = Base<T>::random({rows, n});
        check_sub<T>(fmt::format("({}, {}).T - y", n, rows), tall, tall.dev.T(), wide, wide.dev,
                     {rows, n}, whole);
        check_sub<T>(fmt::format("x - y into ({}, {}).T", n, rows), wide, wide.dev, other,
                     other.dev, {n, rows}, [](const ndarray& o) { return o.T(); });
        const auto flat = Base<T>::random({n * rows + 1});
        check_sub<T>(fmt::format("({}, {}).T one element in", n, rows), flat,
                     flat.dev(slice(1, std::nullopt)).reshape({n, rows}).T(), wide, wide.dev,
                     {rows, n}, whole);
      }
    // A second output transposed against the first: staged, stored as runs.
    static const ElementwiseKernel two("T x, T y", "T z, T t", "z = x - y; t = x - y",
                                       "layouts_two_outputs");
    for (const std::int64_t n : {1001, 1024}) {
      const auto xb = Base<T>::random({21, n}), yb = Base<T>::random({21, n});
      const auto zb = Base<T>::poisoned({21, n}), tb = Base<T>::poisoned({n, 21});
      const ndarray t_out = tb.dev.T();
      auto op = [](const std::vector<Store<T>>& g, std::int64_t) {
        return host_sub<T>(g[0], g[1]);
      };
      check_case<T>(fmt::format("two outputs over 21 x {}: t transposed", n),
                    {{&xb, xb.dev}, {&yb, yb.dev}}, tb, t_out, op,
                    [&] { two(xb.dev, yb.dev, zb.dev, t_out); });
    }
    const auto batched = Base<T>::random({3, 700, 21}), planes = Base<T>::random({3, 21, 700});
    check_sub<T>("(3, 700, 21) transposed (0, 2, 1)", batched, batched.dev.transpose({0, 2, 1}),
                 planes, planes.dev, {3, 21, 700}, whole);
    check_sub<T>("into (3, 700, 21) transposed (0, 2, 1)", planes, planes.dev, planes, planes.dev,
                 {3, 700, 21}, [](const ndarray& o) {
                   return o.transpose({0, 2, 1});
                 });
  }
  SECTION("empty loops launch nothing") {
    const auto x = Base<T>::random({0, 5}), y = Base<T>::random({1, 5});
    static const ElementwiseKernel k("T x, T y", "T z", "z = x - y", "layouts_sub");
    const ndarray z = k(x.dev.T(), y.dev.T());
    CHECK(z.shape() == Shape{5, 0});
  }
}

}  // namespace

TEMPLATE_TEST_CASE("every layout family matches the host for every dtype class", "[ops][gpu]", bool,
                   std::int8_t, std::uint16_t, std::int32_t, std::int64_t, std::uint64_t, half,
                   bf16, float, double, std::complex<float>, std::complex<double>) {
  check_families<TestType>();
}

TEST_CASE("the flat index i stays in C order of the loop on permuted and broadcast layouts",
          "[ops][gpu]") {
  ElementwiseKernel k("T x", "T z", "z = x * 2 + (T)i", "layouts_index");
  auto op = [](const std::vector<float>& a, std::int64_t j) { return a[0] * 2 + float(j); };
  const auto x = Base<float>::random({37, 5, 41});
  const std::vector<Shape> perms = {{2, 1, 0}, {1, 2, 0}, {0, 2, 1}};
  for (const Shape& perm : perms) {
    const ndarray xt = x.dev.transpose(perm);
    const auto ob = Base<float>::poisoned(xt.shape());
    check_case<float>("permuted input " + perm.str(), {{&x, xt}}, ob, ob.dev, op,
                      [&] { k(xt, ob.dev); });
    const auto pb = Base<float>::poisoned({37, 5, 41});
    const ndarray out = pb.dev.transpose(perm);
    const auto y = Base<float>::random(out.shape());
    check_case<float>("permuted output " + perm.str(), {{&y, y.dev}}, pb, out, op,
                      [&] { k(y.dev, out); });
  }
  // Cols over two axes (z's 14 cols run on into its 34 axis, and so does i).
  const auto sc = Base<float>::random({14, 34, 20, 61});
  const ndarray sct = sc.dev.transpose({2, 3, 1, 0});
  const auto sob = Base<float>::poisoned(sct.shape());
  check_case<float>("cols over two axes", {{&sc, sct}}, sob, sob.dev, op, [&] { k(sct, sob.dev); });
  // Two inputs permuted differently (packed boxes).
  ElementwiseKernel k2("T x, T w", "T z", "z = x - w + (T)i", "layouts_index_two");
  auto op2 = [](const std::vector<float>& a, std::int64_t j) { return a[0] - a[1] + float(j); };
  const auto p = Base<float>::random({9, 7, 40, 32}), q = Base<float>::random({9, 32, 7, 40});
  const ndarray pt = p.dev.transpose({2, 1, 3, 0}), qt = q.dev.transpose({3, 2, 1, 0});
  const auto pb = Base<float>::poisoned(pt.shape());
  check_case<float>("permuted differently", {{&p, pt}, {&q, qt}}, pb, pb.dev, op2,
                    [&] { k2(pt, qt, pb.dev); });
  // A short axis beside a long one (interleaved): into channels-first, and into channels-last.
  const auto nhwc = Base<float>::random({3, 9, 37, 3});
  const ndarray nchw = nhwc.dev.transpose({0, 3, 1, 2});
  const auto ib = Base<float>::poisoned(nchw.shape());
  check_case<float>("NHWC -> NCHW", {{&nhwc, nchw}}, ib, ib.dev, op, [&] { k(nchw, ib.dev); });
  const auto planes = Base<float>::random({3, 3, 9, 37});
  const ndarray last = planes.dev.transpose({0, 2, 3, 1});
  const auto lb = Base<float>::poisoned(last.shape());
  check_case<float>("NCHW -> NHWC", {{&planes, last}}, lb, lb.dev, op, [&] { k(last, lb.dev); });
  const auto col = Base<float>::random({300, 1});
  const auto ob = Base<float>::poisoned({300, 64});
  check_case<float>("broadcast column", {{&col, col.dev}}, ob, ob.dev, op,
                    [&] { k(col.dev, ob.dev); });
  // Short rows: vectors of 4 crossing rows between pairs (rows of 10, 6) or single elements
  // (rows of 7), the column read once per row, the row vector by pairs.
  for (const std::int64_t n : {10, 6, 7}) {
    const auto short_rows = Base<float>::poisoned({300, n});
    check_case<float>(fmt::format("column into rows of {}", n), {{&col, col.dev}}, short_rows,
                      short_rows.dev, op, [&] { k(col.dev, short_rows.dev); });
    const auto r = Base<float>::random({n});
    const auto both = Base<float>::poisoned({300, n});
    check_case<float>(fmt::format("column minus rows of {}", n), {{&col, col.dev}, {&r, r.dev}},
                      both, both.dev, op2, [&] { k2(col.dev, r.dev, both.dev); });
  }
}

TEST_CASE("reduce_dims off plans the uncollapsed loop on every family", "[ops][gpu]") {
  ElementwiseKernel k("T x, T y", "T z", "z = x - y", "layouts_sub_nored", {.reduce_dims = false});
  auto op = [](const std::vector<float>& a, std::int64_t) { return a[0] - a[1]; };
  const auto x = Base<float>::random({6, 1, 50, 40}), y = Base<float>::random({40, 1});
  const ndarray xt = x.dev.transpose({0, 1, 3, 2});  // (6, 1, 40, 50)
  const auto ob = Base<float>::poisoned({6, 1, 40, 50});
  check_case<float>("permuted and broadcast", {{&x, xt}, {&y, y.dev}}, ob, ob.dev, op,
                    [&] { k(xt, y.dev, ob.dev); });
}

TEST_CASE("in place on a permuted view, with a broadcast operand", "[ops][gpu]") {
  const auto x = Base<float>::random({50, 30, 20});
  const auto b = Base<float>::random({20});
  ndarray xt = x.dev.transpose({2, 0, 1});  // (20, 50, 30)
  // x * 2 is exact, so the device's fused multiply-add rounds as the host does.
  auto op = [](const std::vector<float>& a, std::int64_t) { return a[0] * 2 - a[1]; };
  // The output is x itself; its "poison" is x's own host copy.
  check_case<float>("x.transpose(2, 0, 1) = x.transpose(2, 0, 1) * 2 - b[:, None, None]",
                    {{&x, xt}, {&b, b.dev.reshape({20, 1, 1})}}, x, xt, op, [&] {
                      eval_into(expr(xt) * 2.0f - b.dev.reshape({20, 1, 1}), xt);
                    });
}

TEST_CASE("broadcast, tiled, packed and interleaved loops past 2^31 elements index with 64 bits",
          "[ops][gpu]") {
  ElementwiseKernel k("T x, T y", "T z", "z = x - y", "layouts_sub_big");
  // An outer difference of 65539 x 32771 int8 (2.1e9 elements): row tiles (an odd last axis
  // holds no vectors).
  {
    const std::int64_t r = 65539, c = 32771;
    auto hx = random_host<std::int8_t>(std::size_t(r)),
         hy = random_host<std::int8_t>(std::size_t(c));
    const ndarray x = asarray(hx, Shape{r, 1}), y = asarray(hy, Shape{1, c});
    ndarray z(Shape{r, c}, int8);
    z.fill(std::int8_t(0x5A));
    k(x, y, z);
    const auto got = z.get<std::int8_t>();
    std::size_t bad = 0;
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < c; ++j)
        bad += got[std::size_t(i * c + j)] != std::int8_t(hx[std::size_t(i)] - hy[std::size_t(j)]);
    CHECK(bad == 0);
  }
  // Two int8 inputs permuted differently over (4096, 1366, 48, 8), 2^31 + 1048576 elements:
  // packed boxes of (32 of axis 0, 48, 8) with 64-bit indices.
  {
    const std::int64_t na = 4096, n1 = 1366, nb = 48, nc = 8;
    ElementwiseKernel gen_x("", "int8 z", "z = (signed char)((i >> 20) ^ (i * 7))",
                            "layouts_gen_big");
    ElementwiseKernel gen_y("", "int8 z", "z = (signed char)((i >> 17) ^ (i * 3))",
                            "layouts_gen_big_y");
    ndarray xb(Shape{nc, n1, na, nb}, int8), yb(Shape{nc, nb, n1, na}, int8);
    gen_x(xb);
    gen_y(yb);
    ndarray z(Shape{na, n1, nb, nc}, int8);
    z.fill(std::int8_t(0x5A));
    k(xb.transpose({2, 1, 3, 0}), yb.transpose({3, 2, 1, 0}), z);
    const auto got = z.get<std::int8_t>();
    std::size_t bad = 0, at = 0;
    for (std::int64_t a = 0; a < na; ++a)
      for (std::int64_t n = 0; n < n1; ++n)
        for (std::int64_t b = 0; b < nb; ++b)
          for (std::int64_t c = 0; c < nc; ++c, ++at) {
            const std::int64_t xi = ((c * n1 + n) * na + a) * nb + b;  // xb[c, n, a, b]
            const std::int64_t yi = ((c * nb + b) * n1 + n) * na + a;  // yb[c, b, n, a]
            bad += got[at] != std::int8_t(std::int8_t((xi >> 20) ^ (xi * 7)) -
                                          std::int8_t((yi >> 17) ^ (yi * 3)));
          }
    CHECK(bad == 0);
  }
  // NHWC -> NCHW of two int8 images of 268435459 pixels by 4 channels, 2^31 + 24 elements:
  // the interleaved loop with 64-bit indices, and three pixels a channel past the last group.
  {
    const std::int64_t nb = 2, nl = 268435459, nc = 4;
    ElementwiseKernel gen_x("", "int8 z", "z = (signed char)((i >> 20) ^ (i * 7))",
                            "layouts_gen_big");
    ElementwiseKernel gen_y("", "int8 z", "z = (signed char)((i >> 17) ^ (i * 3))",
                            "layouts_gen_big_y");
    ndarray x(Shape{nb, nl, nc}, int8), y(Shape{nb, nc, nl}, int8);
    gen_x(x);
    gen_y(y);
    ndarray z(Shape{nb, nc, nl}, int8);
    z.fill(std::int8_t(0x5A));
    k(x.transpose({0, 2, 1}), y, z);
    const auto got = z.get<std::int8_t>();
    std::size_t bad = 0, at = 0;
    for (std::int64_t b = 0; b < nb; ++b)
      for (std::int64_t c = 0; c < nc; ++c)
        for (std::int64_t l = 0; l < nl; ++l, ++at) {
          const std::int64_t xi = (b * nl + l) * nc + c;  // x[b, l, c]
          bad += got[std::size_t(at)] != std::int8_t(std::int8_t((xi >> 20) ^ (xi * 7)) -
                                                     std::int8_t((at >> 17) ^ (at * 3)));
        }
    CHECK(bad == 0);
  }
  // A transposed operand over 2^31 + 65 x 65535... elements: the tiled loop.
  {
    const std::int64_t r = 32771, c = 65541;
    ElementwiseKernel gen("", "int8 z", "z = (signed char)((i >> 20) ^ (i * 7))",
                          "layouts_gen_big");
    ndarray x(Shape{c, r}, int8);
    gen(x);
    const ndarray y = asarray(random_host<std::int8_t>(std::size_t(c)), Shape{c});
    ndarray z(Shape{r, c}, int8);
    z.fill(std::int8_t(0x5A));
    k(x.T(), y, z);
    const auto got = z.get<std::int8_t>();
    const auto hy = y.get<std::int8_t>();
    std::size_t bad = 0;
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < c; ++j) {
        const std::int64_t xi = j * r + i;  // x[j, i]
        bad += got[std::size_t(i * c + j)] !=
               std::int8_t(std::int8_t((xi >> 20) ^ (xi * 7)) - hy[std::size_t(j)]);
      }
    CHECK(bad == 0);
  }
}
