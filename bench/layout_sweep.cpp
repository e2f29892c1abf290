// layout_sweep: kiln on layouts nobody named. A seeded generator draws many layouts per family
// (broadcasts, permutations, slices, mixes of these, reduction axis sets, composites such as
// softmax and layer norm written with max/exp/sum/mean/var) over several dtypes; each case is
// checked against a host reference and timed beside a device-to-device copy in the same run.
// Prints ONE JSON object:
//   {"device": ..., "seed": ..., "copy_GBps": ..., "cases": [{"family", "name", "op", "dtype",
//    "inputs": [VIEW...], "out": VIEW|null, "axes", "keepdims", "bytes", "ms", "GBps",
//    "fraction", "correct", "max_error"}...],
//    "families": {"broadcast": {"count", "min", "median", "worst": [{"name", "fraction"} x5]},
//    ...}, "errors": [...]}
// VIEW = {"base": shape, "perm": axes|null, "slices": [[start, stop, step], ...]|null}: a
// C-contiguous array of `base`, transposed by `perm`, then sliced (Python's semantics; null
// stop is the end) - enough for bench/sweep_compare.py to build the same view in CuPy and
// PyTorch. `fraction` is bytes / ms over the copy rate, bytes counting every element read and
// written once (a reduction reads its input; a composite reads its input and writes its output).
//
//   layout_sweep [--quick] [--seed N] [--family NAME[,NAME...]] [--case TEXT]   (needs a GPU)
//     --case keeps the cases whose name contains TEXT (one case under a profiler)
//   layout_sweep --compile-check [ARCH]                 NVRTC-compiles the sweep's own kernels
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "kiln/kiln.hpp"

namespace {

using namespace kiln;
using bench::json_number;
using bench::json_string;

// ---------------------------------------------------------------- values

// The value of element `i` of a generated base array: splitmix64 of (i, seed), mapped by
// `mode` to a range every dtype holds exactly (0: uniform [-4, 4); 1: k / 16 for k in
// [-128, 128), exact in float16 and bfloat16; 2: integers in [-1000, 1000]; 3: integers in
// [-64, 64), whose differences a 1-byte dtype holds). The same code
// runs on the device (the generator kernel's preamble) and on the host (the references).
#define SWEEP_VALUE_BODY                                            \
  unsigned long long h = (i + 1ull) * 0x9E3779B97F4A7C15ull + seed; \
  h ^= h >> 30;                                                     \
  h *= 0xBF58476D1CE4E5B9ull;                                       \
  h ^= h >> 27;                                                     \
  h *= 0x94D049BB133111EBull;                                       \
  h ^= h >> 31;                                                     \
  if (mode == 1) return double(int((h >> 40) % 256) - 128) / 16.0;  \
  if (mode == 2) return double(int((h >> 40) % 2001) - 1000);       \
  if (mode == 3) return double(int((h >> 40) % 128) - 64);          \
  return -4.0 + 8.0 * (double(h >> 11) * (1.0 / 9007199254740992.0));

double sweep_value(unsigned long long i, unsigned long long seed, int mode) { SWEEP_VALUE_BODY }

#define SWEEP_STR2(...) #__VA_ARGS__
#define SWEEP_STR(x) SWEEP_STR2(x)

const ElementwiseKernel& generator() {
  static const ElementwiseKernel k = [] {
    elementwise_kernel_options o;
    o.preamble =
        "__device__ double sweep_value(unsigned long long i, unsigned long long seed, int mode) "
        "{ " +
        std::string(SWEEP_STR(SWEEP_VALUE_BODY)) + " }";
    return ElementwiseKernel("uint64 seed, int32 mode", "T z",
                             "z = kiln_cast<T>(sweep_value((unsigned long long)i, seed, mode));",
                             "sweep_fill", o);
  }();
  return k;
}

const ElementwiseKernel& sub_kernel() {
  static const ElementwiseKernel k("T x, T y", "T z", "z = x - y", "sweep_sub");
  return k;
}

int value_mode(dtype t) {
  if (t == float16 || t == bfloat16) return 1;
  if (t.is_integer()) return t.itemsize() == 1 ? 3 : 2;  // 1-byte: differences stay in range
  return 0;
}

// The value a dtype stores for a double that the dtype holds or rounds (float32: RN).
double stored(double v, dtype t) {
  if (t == float32) return double(float(v));
  if (t == float16) return double(float(half(float(v))));
  if (t == bfloat16) return double(float(bf16(float(v))));
  return v;
}

// Relative error a dtype's arithmetic may leave on a few operations.
double dtype_tolerance(dtype t) {
  if (t == float16) return 2e-3;
  if (t == bfloat16) return 1.6e-2;
  if (t == float32) return 1e-5;
  if (t == float64) return 1e-12;
  return 0;
}

std::vector<double> download_as_double(const ndarray& a) {
  std::vector<double> out;
  auto take = [&](const auto& v) {
    out.resize(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) out[k] = double(static_cast<float>(v[k]));
  };
  if (a.dtype() == float32) {
    auto v = a.get<float>();
    out.assign(v.begin(), v.end());
  } else if (a.dtype() == float64) {
    out = a.get<double>();
  } else if (a.dtype() == float16) {
    take(a.get<half>());
  } else if (a.dtype() == bfloat16) {
    take(a.get<bf16>());
  } else if (a.dtype() == int32) {
    auto v = a.get<std::int32_t>();
    out.assign(v.begin(), v.end());
  } else if (a.dtype() == int16) {
    auto v = a.get<std::int16_t>();
    out.assign(v.begin(), v.end());
  } else if (a.dtype() == int8) {
    auto v = a.get<std::int8_t>();
    out.assign(v.begin(), v.end());
  } else if (a.dtype() == int64) {
    auto v = a.get<std::int64_t>();
    out.assign(v.begin(), v.end());
  } else {
    throw std::runtime_error("download_as_double: unsupported dtype");
  }
  return out;
}

// ---------------------------------------------------------------- views

struct Slice {
  std::int64_t start = 0;
  std::optional<std::int64_t> stop;  // none: to the end (Python's None)
  std::int64_t step = 1;
};

// A C-contiguous base, transposed, then sliced (see the file header).
struct View {
  Shape base;
  std::vector<std::int64_t> perm;  // empty: none
  std::vector<Slice> slices;       // empty: none

  ndarray make(const ndarray& b) const {
    ndarray v = b;
    if (!perm.empty()) v = v.transpose(Shape(std::span<const std::int64_t>(perm)));
    if (!slices.empty()) {
      std::vector<kiln::index> idx;
      for (const auto& s : slices) idx.emplace_back(kiln::slice(s.start, s.stop, s.step));
      v = v(std::span<const kiln::index>(idx));
    }
    return v;
  }
  std::string json() const {
    std::string s = "{\"base\": [";
    for (int d = 0; d < base.size(); ++d) s += fmt::format("{}{}", d ? ", " : "", base[d]);
    s += "], \"perm\": ";
    if (perm.empty()) {
      s += "null";
    } else {
      s += "[";
      for (std::size_t d = 0; d < perm.size(); ++d)
        s += fmt::format("{}{}", d ? ", " : "", perm[d]);
      s += "]";
    }
    s += ", \"slices\": ";
    if (slices.empty()) {
      s += "null";
    } else {
      s += "[";
      for (std::size_t d = 0; d < slices.size(); ++d)
        s += fmt::format("{}[{}, {}, {}]", d ? ", " : "", slices[d].start,
                         slices[d].stop ? std::to_string(*slices[d].stop) : "null", slices[d].step);
      s += "]";
    }
    return s + "}";
  }
};

// Element offsets of a view into its base, broadcast (right-aligned) to a loop shape.
struct ViewMap {
  Shape shape, strides;
  std::int64_t offset = 0;
  ViewMap() = default;
  ViewMap(const ndarray& v, const ndarray& b) {
    const auto isz = std::int64_t(v.itemsize());
    shape = v.shape();
    strides = v.strides();
    for (auto& s : strides) s /= isz;
    offset = (static_cast<const char*>(v.data()) - static_cast<const char*>(b.data())) / isz;
  }
  std::int64_t at(const Shape& loop, const Shape& idx) const {
    std::int64_t off = offset;
    const int lead = loop.size() - shape.size();
    for (int d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) off += idx[lead + d] * strides[d];
    return off;
  }
};

Shape unravel(std::int64_t j, const Shape& shape) {
  Shape idx = Shape::filled(shape.size(), 0);
  for (int d = shape.size() - 1; d >= 0; --d) {
    idx[d] = j % shape[d];
    j /= shape[d];
  }
  return idx;
}

// ---------------------------------------------------------------- cases

struct Case {
  std::string family, name, op;
  dtype type = float32;
  std::vector<View> inputs;
  std::optional<View> out;         // elementwise: the output view (of a poisoned base)
  std::vector<std::int64_t> axes;  // reductions, composites
  bool keepdims = false;
  // results
  double bytes = 0, ms = 0, fraction = 0, max_error = 0;
  double touched = 0, fraction_touched = 0;  // bytes in the 32-byte sectors memory must move
  double host_us = 0;  // composites: host time a call (calls issued back to back)
  bool correct = false;
  std::string error;
};

struct Rng {
  std::mt19937_64 g;
  explicit Rng(std::uint64_t seed) : g(seed) {}
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
  }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); }
  bool chance(double p) { return real(0, 1) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[std::size_t(uniform(0, std::int64_t(v.size()) - 1))];
  }
};

// `ndim` extents whose product is about `total`, log-uniform, each at least `lo`.
Shape random_shape(Rng& r, int ndim, double total, std::int64_t lo = 1) {
  std::vector<double> w(static_cast<std::size_t>(ndim));
  double sum = 0;
  for (auto& x : w) sum += (x = r.real(0.2, 1.0));
  Shape s;
  double left = total;
  for (int d = 0; d < ndim; ++d) {
    double e = d == ndim - 1 ? left : std::pow(total, w[std::size_t(d)] / sum);
    auto v = std::max<std::int64_t>(lo, std::int64_t(std::llround(e)));
    // Often a round extent, sometimes an odd one (tile edges, vector tails).
    if (r.chance(0.5) && v > 64) v = v / 32 * 32;
    s.push_back(v);
    left = std::max(1.0, left / double(v));
  }
  return s;
}

std::vector<std::int64_t> random_perm(Rng& r, int n) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) p[std::size_t(d)] = d;
  do std::shuffle(p.begin(), p.end(), r.g);
  while (std::is_sorted(p.begin(), p.end()) && n > 1);
  return p;
}

std::vector<std::int64_t> inverse(const std::vector<std::int64_t>& p) {
  std::vector<std::int64_t> q(p.size());
  for (std::size_t d = 0; d < p.size(); ++d) q[std::size_t(p[d])] = std::int64_t(d);
  return q;
}

Shape permuted(const Shape& s, const std::vector<std::int64_t>& p) {
  Shape o;
  for (auto d : p) o.push_back(s[int(d)]);
  return o;
}

// A view of `shape` through a transposition: its base is `shape` permuted by the inverse.
View transposed_view(const Shape& shape, const std::vector<std::int64_t>& perm) {
  return View{permuted(shape, inverse(perm)), perm, {}};
}

// A view of `shape` through a random slice per axis (steps 1, 2, 3, -1, -2; offsets). The
// steps' product stays within 4, so a base holds at most about 4x the view.
View sliced_view(Rng& r, const Shape& shape, double p_step) {
  View v;
  std::int64_t budget = 4;
  for (int d = 0; d < shape.size(); ++d) {
    const std::int64_t n = shape[d];
    std::int64_t step = 1;
    if (r.chance(p_step)) step = r.pick(std::vector<std::int64_t>{2, 3, -1, -2, -1});
    if (std::abs(step) > budget) step = step < 0 ? -1 : 1;
    budget /= std::abs(step);
    const std::int64_t off = r.chance(0.5) ? r.uniform(0, 9) : 0;
    const std::int64_t extra = r.chance(0.5) ? r.uniform(0, 7) : 0;
    const std::int64_t len = (n - 1) * std::abs(step) + 1 + off + extra;
    v.base.push_back(len);
    if (step > 0)
      v.slices.push_back({off, off + (n - 1) * step + 1, step});
    else
      v.slices.push_back({len - 1 - off,
                          len - 1 - off + (n - 1) * step - 1 < 0
                              ? std::nullopt
                              : std::optional<std::int64_t>(len - 1 - off + (n - 1) * step - 1),
                          step});
  }
  return v;
}

View plain(const Shape& s) { return View{s, {}, {}}; }

dtype random_dtype(Rng& r) {
  const double u = r.real(0, 1);
  if (u < 0.55) return float32;
  if (u < 0.72) return float16;
  if (u < 0.87) return float64;
  if (u < 0.94) return bfloat16;
  return int32;
}

// ---- the elementwise families

Case elementwise(std::string family, std::string name, Rng& r, dtype t, std::vector<View> in,
                 View out) {
  Case c;
  c.family = std::move(family);
  c.name = std::move(name);
  c.type = t;
  c.op = t.is_integer() || r.chance(0.5) ? "sub" : "axpy";
  c.inputs = std::move(in);
  c.out = std::move(out);
  return c;
}

void broadcast_cases(std::vector<Case>& out, Rng& r, int count, double total) {
  const auto n = std::int64_t(std::sqrt(total));
  // The named ones: an outer difference, row and column vectors, a per-channel vector.
  out.push_back(elementwise("broadcast", "outer (n,1) - (1,n)", r, float32,
                            {plain({n, 1}), plain({1, n})}, plain({n, n})));
  out.push_back(elementwise("broadcast", "row (n,n) - (n,)", r, float32,
                            {plain({n, n}), plain({n})}, plain({n, n})));
  out.push_back(elementwise("broadcast", "column (n,1) - (n,n)", r, float16,
                            {plain({n, 1}), plain({n, n})}, plain({n, n})));
  const Shape nchw = random_shape(r, 4, total, 8);
  out.push_back(elementwise("broadcast", "per channel (N,C,H,W) - (1,C,1,1)", r, float32,
                            {plain(nchw), plain({1, nchw[1], 1, 1})}, plain(nchw)));
  for (int k = 0; k < count; ++k) {
    const int nd = int(r.uniform(2, 4));
    const Shape s = random_shape(r, nd, total, 2);
    // Each input drops some axes to 1 (at least one input broadcasts); a leading axis may go.
    std::vector<View> in;
    bool any = false;
    for (int j = 0; j < 2; ++j) {
      Shape b = s;
      for (int d = 0; d < nd; ++d)
        if (r.chance(j == 0 ? 0.3 : 0.5)) b[d] = 1, any = true;
      if (shape_size(b) == shape_size(s) && j == 1 && !any) b[int(r.uniform(0, nd - 1))] = 1;
      while (b.size() > 1 && b[0] == 1 && r.chance(0.5)) b.erase(0);
      in.push_back(plain(b));
    }
    out.push_back(elementwise("broadcast",
                              fmt::format("{} - {}", in[0].base.str(), in[1].base.str()), r,
                              random_dtype(r), in, plain(s)));
  }
}

void permutation_cases(std::vector<Case>& out, Rng& r, int count, double total) {
  const auto side = std::int64_t(std::cbrt(total));
  out.push_back(
      elementwise("permutation", "x.transpose(2,0,1) - y", r, float32,
                  {transposed_view({side, side, side}, {2, 0, 1}), plain({side, side, side})},
                  plain({side, side, side})));
  const auto m = std::int64_t(std::sqrt(total / 16));
  out.push_back(elementwise("permutation", "batched x.transpose(0,2,1) - y", r, float32,
                            {transposed_view({16, m, m}, {0, 2, 1}), plain({16, m, m})},
                            plain({16, m, m})));
  out.push_back(elementwise("permutation", "x.T - y, float16", r, float16,
                            {transposed_view({m * 4, m * 4}, {1, 0}), plain({m * 4, m * 4})},
                            plain({m * 4, m * 4})));
  for (int k = 0; k < count; ++k) {
    const int nd = int(r.uniform(2, 4));
    const Shape s = random_shape(r, nd, total, 2);
    const auto perm = random_perm(r, nd);
    const double u = r.real(0, 1);
    std::vector<View> in{transposed_view(s, perm), plain(s)};
    View o = plain(s);
    std::string name =
        fmt::format("{} perm {}", s.str(), Shape(std::span<const std::int64_t>(perm)).str());
    if (u < 0.3) {  // a permuted output
      in[0] = plain(s);
      o = transposed_view(s, perm);
      name += " (output)";
    } else if (u < 0.45) {  // both inputs permuted, differently
      in[1] = transposed_view(s, random_perm(r, nd));
      name += " (both)";
    }
    out.push_back(elementwise("permutation", name, r, random_dtype(r), in, o));
  }
}

void slicing_cases(std::vector<Case>& out, Rng& r, int count, double total) {
  const auto n = std::int64_t(std::sqrt(total));
  out.push_back(elementwise(
      "slicing", "x[:, 1:] - y (misaligned)", r, float32,
      {View{{n, n + 1}, {}, {{0, std::nullopt, 1}, {1, std::nullopt, 1}}}, plain({n, n})},
      plain({n, n})));
  out.push_back(elementwise("slicing", "x[::-1] - y", r, float32,
                            {View{{n * n}, {}, {{n * n - 1, std::nullopt, -1}}}, plain({n * n})},
                            plain({n * n})));
  out.push_back(elementwise(
      "slicing", "x[:, ::2] - y", r, float32,
      {View{{n, 2 * n}, {}, {{0, std::nullopt, 1}, {0, std::nullopt, 2}}}, plain({n, n})},
      plain({n, n})));
  for (int k = 0; k < count; ++k) {
    const int nd = int(r.uniform(1, 3));
    const Shape s = random_shape(r, nd, total, 2);
    std::vector<View> in{sliced_view(r, s, 0.5), r.chance(0.5) ? sliced_view(r, s, 0.3) : plain(s)};
    View o = r.chance(0.25) ? sliced_view(r, s, 0.3) : plain(s);
    out.push_back(
        elementwise("slicing", fmt::format("{} sliced", s.str()), r, random_dtype(r), in, o));
  }
}

void mixed_cases(std::vector<Case>& out, Rng& r, int count, double total) {
  for (int k = 0; k < count; ++k) {
    const int nd = int(r.uniform(2, 4));
    const Shape s = random_shape(r, nd, total, 2);
    // x: a slice of a transposed base (the slices apply after the transposition, so the
    // transposed array has the sliced view's base shape); y: broadcast; out: maybe sliced.
    const auto perm = random_perm(r, nd);
    View x = sliced_view(r, s, 0.3);
    x.base = permuted(x.base, inverse(perm));
    x.perm = perm;
    Shape b = s;
    for (int d = 0; d < nd; ++d)
      if (r.chance(0.5)) b[d] = 1;
    View o = r.chance(0.3) ? sliced_view(r, s, 0.3) : plain(s);
    out.push_back(elementwise("mixed", fmt::format("{} perm+slice - {}", s.str(), b.str()), r,
                              random_dtype(r), {x, plain(b)}, o));
  }
}

// Contiguous views at an offset no 16-byte vector divides (np.diff's x[1:] - x[:-1], a window
// from an odd element): every operand unit-stride, some misaligned. Drawn from their own
// generator and appended after every family's seeded cases, so that those stay what earlier
// rounds measured.
void misaligned_cases(std::vector<Case>& out, std::uint64_t seed, double total) {
  Rng r(seed ^ 0x6d697361ull);
  const auto n = std::int64_t(total);
  auto window = [](std::int64_t n, std::int64_t from) {
    return View{{n + from}, {}, {{from, std::nullopt, 1}}};
  };
  struct Draw {
    dtype t;
    std::int64_t x_from, y_from, out_from;
  };
  const std::vector<Draw> draws{{float16, 1, 0, 0}, {bfloat16, 3, 5, 0}, {int16, 1, 0, 0},
                                {float16, 2, 0, 0}, {float32, 1, 0, 0},  {float32, 2, 3, 0},
                                {float16, 0, 0, 1}, {float32, 0, 0, 3}};
  for (const Draw& d : draws) {
    View o = d.out_from ? window(n, d.out_from) : plain({n});
    out.push_back(elementwise("slicing",
                              fmt::format("misaligned x[{}:] - y[{}:] into out[{}:], {}", d.x_from,
                                          d.y_from, d.out_from, d.t.name()),
                              r, d.t, {window(n, d.x_from), window(n, d.y_from)}, o));
  }
}

// Layout conversions with a short fixed axis: images between channels-last and channels-first
// (NHWC -> NCHW and back, 3 or 4 channels) and tall, narrow matrices transposed ((n, 21).T),
// where one side of any tile is a handful of elements. Drawn from their own generator and
// appended after every family's seeded cases, as misaligned_cases are.
void conversion_cases(std::vector<Case>& out, std::uint64_t seed, double total) {
  Rng r(seed ^ 0x6e686463ull);
  const std::int64_t hw = 224;
  auto images = [&](std::int64_t ch) {
    return std::max<std::int64_t>(1, std::int64_t(total) / (hw * hw * ch));
  };
  struct Image {
    dtype t;
    std::int64_t ch;
    bool to_first;  // NHWC -> NCHW (else NCHW -> NHWC)
  };
  for (const Image& d : std::vector<Image>{{float32, 3, true},
                                           {float16, 3, true},
                                           {int8, 4, true},
                                           {float32, 3, false},
                                           {float16, 3, false},
                                           {int8, 4, false}}) {
    const std::int64_t n = images(d.ch);
    const Shape first{n, d.ch, hw, hw}, last{n, hw, hw, d.ch};
    const Shape& s = d.to_first ? first : last;
    const std::vector<std::int64_t> perm =
        d.to_first ? std::vector<std::int64_t>{0, 3, 1, 2} : std::vector<std::int64_t>{0, 2, 3, 1};
    out.push_back(elementwise("permutation",
                              fmt::format("{} -> {} {}, {}", d.to_first ? "NHWC" : "NCHW",
                                          d.to_first ? "NCHW" : "NHWC", s.str(), d.t.name()),
                              r, d.t, {transposed_view(s, perm), plain(s)}, plain(s)));
  }
  // Normalising while converting: NHWC -> NCHW minus a per-channel mean.
  for (dtype t : {float32, float16}) {
    const std::int64_t n = images(3);
    const Shape s{n, 3, hw, hw};
    out.push_back(elementwise(
        "permutation", fmt::format("NHWC -> NCHW {} - mean (1, 3, 1, 1), {}", s.str(), t.name()), r,
        t, {transposed_view(s, {0, 3, 1, 2}), plain({1, 3, 1, 1})}, plain(s)));
  }
  for (const auto& [t, k] : std::vector<std::pair<dtype, std::int64_t>>{
           {float16, 21}, {float32, 21}, {float32, 3}, {float32, 8}, {float16, 6}}) {
    const Shape s{k, std::int64_t(total) / k};
    out.push_back(elementwise("permutation", fmt::format("({}, {}).T - y, {}", s[1], k, t.name()),
                              r, t, {transposed_view(s, {1, 0}), plain(s)}, plain(s)));
  }
}

// ---- reductions and composites

void reduction_cases(std::vector<Case>& out, Rng& r, int count, double total) {
  auto add = [&](std::string name, std::string op, dtype t, const Shape& s,
                 std::vector<std::int64_t> ax, bool keep) {
    Case c;
    c.family = "reduction";
    c.name = std::move(name);
    c.op = std::move(op);
    c.type = t;
    c.inputs = {plain(s)};
    c.axes = std::move(ax);
    c.keepdims = keep;
    out.push_back(c);
  };
  const auto n = std::int64_t(std::sqrt(total));
  add("mean over (0, 2) of (B, M, N)", "mean", float32, random_shape(r, 3, total, 16), {0, 2},
      false);
  add("var over axis 1 of (n, n)", "var", float32, {n, n}, {1}, false);
  add("sum over (0, 2, 3) of NCHW", "sum", float32, random_shape(r, 4, total, 8), {0, 2, 3}, false);
  add("max over the last axis, keepdims", "max", float32, {n, n}, {1}, true);
  add("argmax along axis 0", "argmax", float32, {n, n}, {0}, false);
  const std::vector<std::string> ops{"sum", "sum", "max", "mean", "var", "argmax"};
  for (int k = 0; k < count; ++k) {
    const int nd = int(r.uniform(2, 4));
    const Shape s = random_shape(r, nd, total, 2);
    const std::string op = r.pick(ops);
    std::vector<std::int64_t> ax;
    if (op == "argmax") {
      ax.push_back(r.uniform(0, nd - 1));
    } else {
      for (int d = 0; d < nd; ++d)
        if (r.chance(0.5)) ax.push_back(d);
      if (ax.empty()) ax.push_back(r.uniform(0, nd - 1));
    }
    dtype t = r.chance(0.7) ? float32 : (r.chance(0.5) ? float16 : float64);
    if (op == "var" && t == float16) t = float32;
    Shape axs;
    for (auto a : ax) axs.push_back(a);
    add(fmt::format("{} over {} of {}", op, axs.str(), s.str()), op, t, s, ax, r.chance(0.3));
  }
  // Batch statistics over 7 x 7 planes (a ResNet's last stage): runs of 49 elements that no
  // whole vector tiles. After the seeded cases, so that those stay what earlier rounds
  // measured.
  const auto batch = [&](std::int64_t c) {
    return std::max<std::int64_t>(2, std::int64_t(total / double(c * 49)));
  };
  add("sum over (0, 2, 3) of (N, 512, 7, 7)", "sum", float32, {batch(512), 512, 7, 7}, {0, 2, 3},
      false);
  add("var over (0, 2, 3) of (N, 2048, 7, 7)", "var", float32, {batch(2048), 2048, 7, 7}, {0, 2, 3},
      false);
  add("mean over (0, 2, 3) of (N, 256, 7, 7)", "mean", float16, {batch(256), 256, 7, 7}, {0, 2, 3},
      true);
}

void composite_cases(std::vector<Case>& out, Rng& r, int count, double total) {
  auto add = [&](std::string name, std::string op, dtype t, const Shape& s,
                 std::vector<std::int64_t> ax) {
    Case c;
    c.family = "composite";
    c.name = std::move(name);
    c.op = std::move(op);
    c.type = t;
    c.inputs = {plain(s)};
    if (c.op == "layer_norm")
      c.inputs.push_back(plain({s.back()})), c.inputs.push_back(plain({s.back()}));
    c.axes = std::move(ax);
    c.keepdims = true;
    out.push_back(c);
  };
  const double scale = total / double(std::int64_t(1) << 26);
  // An extent of the full-size case (2^26 elements) at this run's size, at least `least`.
  auto scaled = [scale](std::int64_t n, std::int64_t least = 1) {
    return std::max<std::int64_t>(least, std::int64_t(double(n) * scale));
  };
  const auto rows = scaled(16384, 64);
  add("softmax (16384, 4096) last axis", "softmax", float32, {rows, 4096}, {-1});
  add("layer norm (16384, 4096) last axis", "layer_norm", float32, {rows, 4096}, {-1});
  add("mean and var over (0, 2, 3) of (64, 256, 56, 56)", "mean_var", float32,
      {scaled(64, 2), 256, 56, 56}, {0, 2, 3});
  add("log-softmax (16384, 4096) last axis", "log_softmax", float32, {rows, 4096}, {-1});
  add("standardize over (0, 2, 3) of NCHW", "standardize", float32, {scaled(32, 2), 128, 56, 56},
      {0, 2, 3});
  // Rows past a block's registers (a vocabulary): held partly in shared memory.
  const auto vocab_rows = scaled(2048, 264);
  add("softmax (2048, 32000) last axis", "softmax", float32, {vocab_rows, 32000}, {-1});
  add("layer norm (2048, 32000) last axis", "layer_norm", float32, {vocab_rows, 32000}, {-1});
  const std::vector<std::string> ops{"softmax", "log_softmax", "layer_norm", "mean_var",
                                     "standardize"};
  for (int k = 0; k < count; ++k) {
    const std::string op = r.pick(ops);
    const dtype t = r.chance(0.75) ? float32 : float64;
    if (op == "mean_var" || op == "standardize") {
      const Shape s = random_shape(r, 4, total, 2);
      add(fmt::format("{} over (0, 2, 3) of {}", op, s.str()), op, t, s, {0, 2, 3});
    } else {
      const std::int64_t c = r.pick(std::vector<std::int64_t>{128, 512, 1000, 4096, 16384, 32000});
      const Shape s{std::max<std::int64_t>(1, std::int64_t(total / double(c))), c};
      add(fmt::format("{} of {}", op, s.str()), op, t, s, {-1});
    }
  }
  // Vocabularies past a block's registers and shared memory when two blocks share an SM: an
  // odd one (GPT-2's, one element per access), and one past any SM (Llama 3's). After the
  // seeded cases, so that those stay what earlier rounds measured.
  add("softmax (2048, 50257) last axis", "softmax", float32, {vocab_rows, 50257}, {-1});
  add("layer norm (2048, 50257) last axis", "layer_norm", float32, {vocab_rows, 50257}, {-1});
  add("log_softmax (1024, 128256) last axis", "log_softmax", float32,
      {std::max<std::int64_t>(132, vocab_rows / 2), 128256}, {-1});
  // Softmax over an outer axis (strided rows: passes): a segmentation's classes, and columns.
  add("softmax over axis 1 of (32, 21, 256, 256)", "softmax", float32, {scaled(32), 21, 256, 256},
      {1});
  add("log_softmax over axis 0 of (4096, 8192)", "log_softmax", float32, {scaled(4096, 64), 8192},
      {0});
  // Normalising over the channels of NCHW (ConvNeXt's channels-first layer norm without its
  // affine), and a float64 log-softmax over a few classes.
  add("standardize over axis 1 of (32, 48, 128, 128)", "standardize", float32,
      {scaled(32), 48, 128, 128}, {1});
  add("log_softmax over axis 1 of (16, 8, 384, 384)", "log_softmax", float64,
      {scaled(16), 8, 384, 384}, {1});
  // The same over float16 channels (computed in float32; eight rows taken across a lane group).
  add("softmax over axis 1 of (64, 21, 256, 256)", "softmax", float16, {scaled(64), 21, 256, 256},
      {1});
  add("standardize over axis 1 of (64, 16, 256, 256)", "standardize", float16,
      {scaled(64), 16, 256, 256}, {1});
  // Rows taken across at the planner's register budget: float32 standardizing over 32
  // channels (four rows of 8 elements a lane), and few channels (two and four), whose lanes
  // hold more accumulators than elements.
  add("standardize over axis 1 of (32, 32, 256, 256)", "standardize", float32,
      {scaled(32), 32, 256, 256}, {1});
  add("softmax over axis 1 of (128, 2, 512, 512)", "softmax", float16, {scaled(128), 2, 512, 512},
      {1});
  add("standardize over axis 1 of (256, 4, 256, 256)", "standardize", float16,
      {scaled(256), 4, 256, 256}, {1});
  // Rows past what a block holds in registers and shared memory but whose rows in flight fit
  // L2 (on an H200): streamed, each phase reading its row again from L2.
  add("softmax (2048, 36000) last axis", "softmax", float32, {vocab_rows, 36000}, {-1});
  add("layer norm (2048, 36000) last axis", "layer_norm", float32, {vocab_rows, 36000}, {-1});
  // Batch statistics over (0, 2, 3) at a ConvNet's layer sizes (passes: a reduction, then an
  // elementwise kernel): planes that hold whole 16-byte vectors (56 x 56 float32, 28 x 28
  // float16) and 7 x 7 planes.
  add("standardize over (0, 2, 3) of (64, 64, 56, 56)", "standardize", float32,
      {scaled(64, 2), 64, 56, 56}, {0, 2, 3});
  add("standardize over (0, 2, 3) of (128, 64, 28, 28)", "standardize", float16,
      {scaled(128, 2), 64, 28, 28}, {0, 2, 3});
  add("standardize over (0, 2, 3) of (256, 256, 7, 7)", "standardize", float16,
      {scaled(256, 2), 256, 7, 7}, {0, 2, 3});
  add("softmax over (0, 2, 3) of (32, 128, 56, 56)", "softmax", float32,
      {scaled(32, 2), 128, 56, 56}, {0, 2, 3});
}

// ---------------------------------------------------------------- running

struct Arrays {
  std::vector<ndarray> bases, views;
  std::vector<std::uint64_t> seeds;
};

Arrays make_inputs(const Case& c, std::uint64_t seed) {
  Arrays a;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    ndarray b(c.inputs[k].base, c.type);
    a.seeds.push_back(seed + 1000 * k);
    generator()(std::uint64_t(a.seeds.back()), std::int32_t(value_mode(c.type)), b);
    a.views.push_back(c.inputs[k].make(b));
    a.bases.push_back(std::move(b));
  }
  return a;
}

double base_value(const Arrays& a, std::size_t k, std::int64_t flat, dtype t) {
  return stored(sweep_value(std::uint64_t(flat), a.seeds[k], value_mode(t)), t);
}

constexpr int kSamples = 4096;

// What memory moves for a view: its distinct elements, each in a run as long as its smallest
// step (a stepped slice x[:, ::2] moves every other element too), up to a 32-byte sector each.
double touched_bytes(const ndarray& v) {
  const auto isz = std::int64_t(v.itemsize());
  std::int64_t step = 32;
  for (int d = 0; d < v.ndim(); ++d)
    if (v.shape()[d] > 1 && v.strides()[d] != 0) step = std::min(step, std::abs(v.strides()[d]));
  return double(v.nbytes()) / double(isz) * double(std::max(isz, step));
}

// Elementwise: x - y (an ElementwiseKernel) or x * 1.5 + y (an expression), into a view of a
// poisoned base; sampled elements against the host, and the poison outside the view kept.
void run_elementwise(Case& c, Rng& r, std::uint64_t seed) {
  Arrays in = make_inputs(c, seed);
  ndarray ob(c.out->base, c.type);
  generator()(std::uint64_t(seed + 777), std::int32_t(value_mode(c.type)),
              ob);  // poison: known values
  ndarray o = c.out->make(ob);
  const bool sub = c.op == "sub";
  auto run = [&] {
    if (sub)
      sub_kernel()(in.views[0], in.views[1], o);
    else
      eval_into(expr(in.views[0]) * 1.5 + in.views[1], o);
  };
  run();
  const auto got = download_as_double(ob);
  const Shape loop = o.shape();
  const ViewMap om(o, ob), xm(in.views[0], in.bases[0]), ym(in.views[1], in.bases[1]);
  const double tol = dtype_tolerance(c.type);
  const std::int64_t n = shape_size(loop);
  std::vector<char> inside(static_cast<std::size_t>(ob.size()), 0);
  bool ok = true;
  for (int s = 0; s < kSamples && n > 0; ++s) {
    const std::int64_t j = s == 0 ? 0 : s == 1 ? n - 1 : r.uniform(0, n - 1);
    const Shape idx = unravel(j, loop);
    const double x = base_value(in, 0, xm.at(loop, idx), c.type),
                 y = base_value(in, 1, ym.at(loop, idx), c.type);
    const double want = sub ? x - y : x * 1.5 + y;
    const double g = got[std::size_t(om.at(loop, idx))];
    const double err = std::fabs(g - want) / std::max(1.0, std::fabs(x) * 1.5 + std::fabs(y));
    c.max_error = std::max(c.max_error, err);
    ok = ok && err <= tol;
  }
  // Every element outside the view keeps its poison (only when the output is a proper view).
  if (ob.size() != n) {
    Shape idx = Shape::filled(loop.size(), 0);
    for (std::int64_t j = 0; j < n; ++j) {
      inside[std::size_t(om.at(loop, idx))] = 1;
      for (int d = loop.size() - 1; d >= 0 && ++idx[d] == loop[d]; --d) idx[d] = 0;  // odometer
    }
    for (std::int64_t f = 0; f < ob.size(); ++f)
      if (!inside[std::size_t(f)] &&
          got[std::size_t(f)] !=
              stored(sweep_value(std::uint64_t(f), seed + 777, value_mode(c.type)), c.type)) {
        ok = false;
        break;
      }
  }
  c.correct = ok;
  c.ms = bench::median_device_ms(run, 3, 15);
  c.bytes = double(o.nbytes()) + double(in.views[0].nbytes()) + double(in.views[1].nbytes());
  c.touched = touched_bytes(o) + touched_bytes(in.views[0]) + touched_bytes(in.views[1]);
}

ndarray reduce(const std::string& op, const ndarray& x, const axes& ax, bool keep) {
  if (op == "sum") return kiln::sum(x, ax, keep);
  if (op == "max") return kiln::max(x, ax, keep);
  if (op == "mean") return kiln::mean(x, ax, keep);
  if (op == "var") return kiln::var(x, ax, keep);
  if (op == "argmax") return kiln::argmax(x, ax, keep);
  throw std::runtime_error("unknown reduction " + op);
}

axes make_axes(const std::vector<std::int64_t>& a) {
  switch (a.size()) {
    case 1:
      return axes(a[0]);
    case 2:
      return axes{a[0], a[1]};
    case 3:
      return axes{a[0], a[1], a[2]};
    case 4:
      return axes{a[0], a[1], a[2], a[3]};
    default:
      return axes();
  }
}

// The reduced and kept axes of `shape` for axis list `ax` (negative from the end).
struct Split {
  Shape kept_shape, red_shape;
  std::vector<int> kept, red;
};
Split split_axes(const Shape& shape, const std::vector<std::int64_t>& ax) {
  Split s;
  std::uint64_t mask = 0;
  for (auto a : ax) mask |= std::uint64_t(1) << (a < 0 ? a + shape.size() : a);
  for (int d = 0; d < shape.size(); ++d) {
    if ((mask >> d) & 1)
      s.red.push_back(d), s.red_shape.push_back(shape[d]);
    else
      s.kept.push_back(d), s.kept_shape.push_back(shape[d]);
  }
  return s;
}

// Host statistics of one output position: the reduced elements' values in C order.
std::vector<double> reduced_values(const Case& c, const Arrays& in, const Split& sp,
                                   const Shape& kept_idx) {
  const Shape& shape = c.inputs[0].base;
  const Shape cs = c_strides(shape, 1);
  std::int64_t base = 0;
  for (std::size_t k = 0; k < sp.kept.size(); ++k) base += kept_idx[int(k)] * cs[sp.kept[k]];
  const std::int64_t m = shape_size(sp.red_shape);
  std::vector<double> v(static_cast<std::size_t>(m));
  for (std::int64_t j = 0; j < m; ++j) {
    const Shape ri = unravel(j, sp.red_shape);
    std::int64_t f = base;
    for (std::size_t k = 0; k < sp.red.size(); ++k) f += ri[int(k)] * cs[sp.red[k]];
    v[std::size_t(j)] = base_value(in, 0, f, c.type);
  }
  return v;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
double var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size());
}

// Sampled kept positions (all when few), within a budget of host work.
std::vector<std::int64_t> sample_rows(Rng& r, std::int64_t rows, std::int64_t per_row) {
  const std::int64_t budget =
      std::max<std::int64_t>(1, std::int64_t(40e6) / std::max<std::int64_t>(per_row, 1));
  const std::int64_t n = std::min<std::int64_t>({rows, 64, budget});
  std::vector<std::int64_t> out;
  if (n >= rows) {
    for (std::int64_t j = 0; j < rows; ++j) out.push_back(j);
  } else {
    out.push_back(0);
    out.push_back(rows - 1);
    while (std::int64_t(out.size()) < n) out.push_back(r.uniform(0, rows - 1));
  }
  return out;
}

void run_reduction(Case& c, Rng& r, std::uint64_t seed) {
  Arrays in = make_inputs(c, seed);
  const ndarray& x = in.views[0];
  const axes ax = make_axes(c.axes);
  ndarray res = reduce(c.op, x, ax, c.keepdims);
  const Split sp = split_axes(x.shape(), c.axes);
  const auto got = download_as_double(res);
  const std::int64_t rows = shape_size(sp.kept_shape);
  bool ok = got.size() == std::size_t(rows);
  const double tol = std::max(dtype_tolerance(res.dtype()), dtype_tolerance(c.type)) * 4;
  for (std::int64_t j : sample_rows(r, rows, shape_size(sp.red_shape))) {
    if (!ok) break;
    const auto v = reduced_values(c, in, sp, unravel(j, sp.kept_shape));
    double want = 0, scale = 1;
    if (c.op == "sum" || c.op == "mean") {
      double s = 0, a = 0;
      for (double e : v) s += e, a += std::fabs(e);
      want = c.op == "sum" ? s : s / double(v.size());
      scale = std::max(1e-30, c.op == "sum" ? a : a / double(v.size()));
    } else if (c.op == "max") {
      want = *std::max_element(v.begin(), v.end());
      scale = std::max(1.0, std::fabs(want));
    } else if (c.op == "var") {
      want = var_of(v);
      double sq = 0;
      for (double e : v) sq += e * e;
      scale = std::max(1e-30, sq / double(v.size()));
    } else {  // argmax: the first maximum
      want = double(std::max_element(v.begin(), v.end()) - v.begin());
      scale = 1;
    }
    // A sum that overflows its dtype is +-inf in NumPy too (float16 sums of a million
    // elements do): compare the rounded value, not the exact one.
    if (c.op == "sum") want = stored(want, res.dtype());
    const double g = got[std::size_t(j)];
    const double err =
        std::isinf(want) ? (g == want ? 0.0 : HUGE_VAL) : std::fabs(g - want) / scale;
    c.max_error = std::max(c.max_error, err);
    ok = ok && (c.op == "argmax" ? err == 0 : err <= tol);
  }
  c.correct = ok;
  c.ms = bench::median_device_ms([&] { reduce(c.op, x, ax, c.keepdims); }, 3, 15);
  c.bytes = double(x.nbytes()) + double(res.nbytes());
}

// Composites, written with NumPy's functions inside kiln::fuse (kiln sees the whole
// computation there), so a fused implementation shows up here unchanged.
std::vector<ndarray> composite(const Case& c, const std::vector<ndarray>& v) {
  const axes ax = make_axes(c.axes);
  if (c.op == "softmax") {
    auto f = kiln::fuse([ax](auto x) {
      auto e = kiln::exp(x - kiln::max(x, ax, true));
      return e / kiln::sum(e, ax, true);
    });
    return {f(v[0])};
  }
  if (c.op == "log_softmax") {
    auto f = kiln::fuse([ax](auto x) {
      auto s = x - kiln::max(x, ax, true);
      return s - kiln::log(kiln::sum(kiln::exp(s), ax, true));
    });
    return {f(v[0])};
  }
  if (c.op == "layer_norm") {
    auto f = kiln::fuse([ax](auto x, auto g, auto b) {
      return (x - kiln::mean(x, ax, true)) / kiln::sqrt(kiln::var(x, ax, true) + 1e-5) * g + b;
    });
    return {f(v[0], v[1], v[2])};
  }
  if (c.op == "standardize") {
    auto f = kiln::fuse([ax](auto x) {
      return (x - kiln::mean(x, ax, true)) / kiln::sqrt(kiln::var(x, ax, true) + 1e-5);
    });
    return {f(v[0])};
  }
  if (c.op == "mean_var") {
    auto f = kiln::fuse([ax](auto x) {
      return std::make_tuple(kiln::mean(x, ax, false), kiln::var(x, ax, false));
    });
    auto [m, s] = f(v[0]);
    return {m, s};
  }
  throw std::runtime_error("unknown composite " + c.op);
}

void run_composite(Case& c, Rng& r, std::uint64_t seed) {
  Arrays in = make_inputs(c, seed);
  std::vector<ndarray> res = composite(c, in.views);
  const Shape& shape = c.inputs[0].base;
  const Split sp = split_axes(shape, c.axes);
  std::vector<std::vector<double>> got;
  for (const auto& a : res) got.push_back(download_as_double(a));
  const std::int64_t rows = shape_size(sp.kept_shape);
  const double tol = dtype_tolerance(c.type) * 20;
  bool ok = true;
  const Shape cs = c_strides(shape, 1);
  for (std::int64_t j : sample_rows(r, rows, shape_size(sp.red_shape))) {
    const Shape kept_idx = unravel(j, sp.kept_shape);
    const auto v = reduced_values(c, in, sp, kept_idx);
    const double m = mean_of(v), var = var_of(v), mx = *std::max_element(v.begin(), v.end());
    if (c.op == "mean_var") {
      const double e1 = std::fabs(got[0][std::size_t(j)] - m) / std::max(1.0, std::sqrt(var));
      const double e2 = std::fabs(got[1][std::size_t(j)] - var) / std::max(1e-30, var + m * m);
      c.max_error = std::max({c.max_error, e1, e2});
      ok = ok && e1 <= tol && e2 <= tol;
      continue;
    }
    double sum_exp = 0;
    for (double e : v) sum_exp += std::exp(e - mx);
    // Every element of the row (C order of the reduced axes) against the host.
    std::int64_t base = 0;
    for (std::size_t k = 0; k < sp.kept.size(); ++k) base += kept_idx[int(k)] * cs[sp.kept[k]];
    for (std::int64_t q = 0; q < std::int64_t(v.size());
         q += std::max<std::int64_t>(1, std::int64_t(v.size()) / 256)) {
      const Shape ri = unravel(q, sp.red_shape);
      std::int64_t f = base;
      for (std::size_t k = 0; k < sp.red.size(); ++k) f += ri[int(k)] * cs[sp.red[k]];
      const double x = v[std::size_t(q)];
      double want = 0, scale = 1;
      if (c.op == "softmax") {
        want = std::exp(x - mx) / sum_exp;
        // Relative to the value, down to the dtype's smallest normal: float16 rounds what
        // falls below it to steps of 6e-8 (NumPy alike).
        scale = std::max(want, c.type == float16 ? 0x1p-14 : 1e-30);
      } else if (c.op == "log_softmax") {
        want = x - mx - std::log(sum_exp);
        scale = std::max(1.0, std::fabs(want));
      } else {
        double g = 1, b = 0;
        if (c.op == "layer_norm") {
          const std::int64_t col = f % shape.back();
          g = base_value(in, 1, col, c.type);
          b = base_value(in, 2, col, c.type);
        }
        want = (x - m) / std::sqrt(var + 1e-5) * g + b;
        scale = std::max(1.0, std::fabs(want));
      }
      const double err = std::fabs(got[0][std::size_t(f)] - want) / scale;
      c.max_error = std::max(c.max_error, err);
      ok = ok && err <= tol;
    }
  }
  c.correct = ok;
  c.ms = bench::median_device_ms([&] { composite(c, in.views); }, 3, 15);
  // What the call costs the host (planning, launches): where it nears ms, the GPU waits on it.
  c.host_us = bench::median_host_us([&] { composite(c, in.views); }, 50, 5);
  c.bytes = double(in.views[0].nbytes());
  for (const auto& a : res) c.bytes += double(a.nbytes());
}

// ---------------------------------------------------------------- output

std::string case_json(const Case& c) {
  std::string s = fmt::format(
      "{{\"family\": {}, \"name\": {}, \"op\": {}, \"dtype\": {}, \"inputs\": [",
      json_string(c.family), json_string(c.name), json_string(c.op), json_string(c.type.name()));
  for (std::size_t k = 0; k < c.inputs.size(); ++k) s += (k ? ", " : "") + c.inputs[k].json();
  s += "], \"out\": " + (c.out ? c.out->json() : std::string("null"));
  s += ", \"axes\": [";
  for (std::size_t k = 0; k < c.axes.size(); ++k)
    s += fmt::format("{}{}", k ? ", " : "", c.axes[k]);
  s += fmt::format(
      "], \"keepdims\": {}, \"bytes\": {}, \"ms\": {}, \"GBps\": {}, \"fraction\": {}, "
      "\"correct\": {}, "
      "\"max_error\": {}, \"fraction_touched\": {}",
      c.keepdims ? "true" : "false", json_number(c.bytes), json_number(c.ms),
      json_number(c.bytes / c.ms / 1e6), json_number(c.fraction), c.correct ? "true" : "false",
      json_number(c.max_error), json_number(c.fraction_touched));
  if (c.host_us > 0) s += fmt::format(", \"host_us\": {}", json_number(c.host_us));
  if (!c.error.empty()) s += ", \"error\": " + json_string(c.error);
  return s + "}";
}

// The write-only rate: cudaMemsetAsync of 2 GiB (what a kernel that only writes can expect).
double write_rate_gbps() {
  ndarray dst(Shape{(std::int64_t(2) << 30) / 4}, float32);
  const cudaStream_t s = current_stream_handle();
  const double ms = bench::median_device_ms([&] {
    if (cudaMemsetAsync(dst.data(), 0x3f, dst.nbytes(), s) != cudaSuccess)
      throw std::runtime_error("cudaMemsetAsync failed");
  });
  return double(dst.nbytes()) / ms / 1e6;
}

double copy_rate_gbps() {
  const std::int64_t n = (std::int64_t(2) << 30) / 4;
  ndarray src(Shape{n}, float32), dst(Shape{n}, float32);
  generator()(std::uint64_t(5), std::int32_t(0), src);
  const cudaStream_t s = current_stream_handle();
  const double ms = bench::median_device_ms([&] {
    if (cudaMemcpyAsync(dst.data(), src.data(), src.nbytes(), cudaMemcpyDeviceToDevice, s) !=
        cudaSuccess)
      throw std::runtime_error("cudaMemcpyAsync failed");
  });
  return 2.0 * double(src.nbytes()) / ms / 1e6;
}

// --list: the cases, their views built on metadata-only arrays (no GPU) and checked to fit
// the loop they feed, as JSON lines.
int list_cases(const std::vector<Case>& cases) {
  int bad = 0;
  for (const auto& c : cases) {
    auto meta = [&](const Shape& s) {
      const auto bytes = std::size_t(shape_size(s)) * c.type.itemsize();
      auto buffer = std::make_shared<Buffer>(reinterpret_cast<void*>(std::uintptr_t(1) << 40),
                                             bytes, 0, [] {});
      return ndarray(std::move(buffer), s, c_strides(s, std::int64_t(c.type.itemsize())), 0,
                     c.type);
    };
    std::string problem;
    try {
      std::vector<Shape> shapes;
      for (const auto& v : c.inputs) shapes.push_back(v.make(meta(v.base)).shape());
      if (c.out) {
        const Shape loop = c.out->make(meta(c.out->base)).shape();
        shapes.push_back(loop);
        if (broadcast_shapes(std::span<const Shape>(shapes)) != loop)
          problem = "inputs do not broadcast to the output";
      }
    } catch (const std::exception& e) {
      problem = e.what();
    }
    bad += !problem.empty();
    std::printf("%s\n", (case_json(c).substr(0, case_json(c).size() - 1) +
                         (problem.empty() ? "}" : ", \"error\": " + json_string(problem) + "}"))
                            .c_str());
  }
  return bad ? 1 : 0;
}

int compile_check(int arch) {
  setenv("KILN_CACHE_IN_MEMORY", "1", 1);
  int n = 0;
  for (dtype t : {float32, float16, bfloat16, float64, int32}) {
    aot_target gen;
    gen.dtypes = {uint64, int32, t};
    gen.max_ndim = 1;
    gen.index64 = false;
    for (const auto& req : generator().compile_requests(gen, arch))
      n += !cache::nvrtc_compile(req).cubin.empty();
    // Every layout, with each input or both passed as one element too (the sweep's
    // broadcasts of (1,) and (1, 1) arrays read them once per thread: kernels of their own).
    for (const std::vector<int>& uniforms : {std::vector<int>{}, {0}, {1}, {0, 1}}) {
      aot_target sub;
      sub.dtypes = {t, t};
      sub.uniform_inputs = uniforms;
      for (const auto& req : sub_kernel().compile_requests(sub, arch))
        n += !cache::nvrtc_compile(req).cubin.empty();
    }
  }
  std::printf("{\"compile_check\": \"ok\", \"arch\": %d, \"kernels\": %d}\n", arch, n);
  return 0;
}

// A command-line count: decimal digits only, at most `most`; nullopt otherwise (a sign, a
// prefix such as sm_, an empty or overflowing value).
std::optional<std::uint64_t> parse_count(const std::string& v, std::uint64_t most) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  errno = 0;
  const std::uint64_t n = std::strtoull(v.c_str(), nullptr, 10);
  if (errno == ERANGE || n > most) return std::nullopt;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, list = false;
  std::uint64_t seed = 16;
  std::string only, named;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--quick")
      quick = true;
    else if (a == "--seed" && k + 1 < argc) {
      const auto n = parse_count(argv[++k], UINT64_MAX);
      if (!n) {
        std::fprintf(stderr, "layout_sweep: --seed takes a non-negative integer, not '%s'\n",
                     argv[k]);
        return 2;
      }
      seed = *n;
    } else if (a == "--family" && k + 1 < argc)
      only = argv[++k];
    else if (a == "--case" && k + 1 < argc)
      named = argv[++k];
    else if (a == "--compile-check") {
      // ARCH: a compute capability as NVRTC names it (90 for sm_90); anything else is a usage
      // error, not an architecture 0.
      int arch = 90;
      if (k + 1 < argc) {
        const auto n = parse_count(argv[k + 1], 1000);
        if (!n || *n == 0) {
          std::fprintf(stderr,
                       "layout_sweep: --compile-check takes an architecture such as 90, not '%s'\n",
                       argv[k + 1]);
          return 2;
        }
        arch = int(*n);
      }
      try {
        return compile_check(arch);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "layout_sweep: compile check for sm_%d failed: %s\n", arch, e.what());
        return 1;
      }
    } else if (a == "--list")
      list = true;
    else {
      std::fprintf(
          stderr,
          "usage: layout_sweep [--quick] [--seed N] [--family NAME[,NAME...]] [--case TEXT] "
          "[--list] | "
          "--compile-check [ARCH]\n");
      return 2;
    }
  }
  // Memory-bound sizes: 2^26 elements per output (256 MB of float32), 2^23 with --quick.
  const double total = quick ? double(1 << 23) : double(1 << 26);
  const int per_family = quick ? 6 : 24;
  Rng r(seed);
  std::vector<Case> cases;
  broadcast_cases(cases, r, per_family, total);
  permutation_cases(cases, r, per_family, total);
  slicing_cases(cases, r, per_family, total);
  mixed_cases(cases, r, per_family / 2 + 2, total);
  reduction_cases(cases, r, per_family, total);
  composite_cases(cases, r, per_family / 2, total);
  misaligned_cases(cases, seed, total);
  conversion_cases(cases, seed, total);
  // --family takes one name or several, comma-separated.
  if (!only.empty())
    std::erase_if(cases, [&](const Case& c) {
      return ("," + only + ",").find("," + c.family + ",") == std::string::npos;
    });
  if (!named.empty())
    std::erase_if(cases, [&](const Case& c) { return c.name.find(named) == std::string::npos; });
  if (list) return list_cases(cases);
  try {
    if (device_count() == 0) throw NoDeviceError("no GPU");
  } catch (const std::exception& e) {
    std::printf("{\"device\": null, \"error\": %s, \"cases\": []}\n",
                json_string(e.what()).c_str());
    return 0;
  }

  const double copy = copy_rate_gbps(), write = write_rate_gbps();
  std::vector<std::string> errors;
  std::uint64_t case_seed = seed * 1000003;
  for (auto& c : cases) {
    case_seed += 7919;
    try {
      if (c.family == "reduction")
        run_reduction(c, r, case_seed);
      else if (c.family == "composite")
        run_composite(c, r, case_seed);
      else
        run_elementwise(c, r, case_seed);
      c.fraction = c.bytes / c.ms / 1e6 / copy;
      c.fraction_touched = (c.touched > 0 ? c.touched : c.bytes) / c.ms / 1e6 / copy;
      if (!c.correct)
        errors.push_back(
            fmt::format("{{\"case\": {}, \"error\": \"wrong results\"}}", json_string(c.name)));
    } catch (const std::exception& e) {
      c.error = e.what();
      errors.push_back(fmt::format("{{\"case\": {}, \"error\": {}}}", json_string(c.name),
                                   json_string(e.what())));
      try {
        synchronize_device();
      } catch (...) {
      }
    }
    std::fprintf(stderr, "%-12s %-60s %-10s %8.3f ms  %.3f of copy%s\n", c.family.c_str(),
                 c.name.c_str(), c.type.name().data(), c.ms, c.fraction,
                 c.correct ? "" : "  WRONG");
  }

  // Per family: min, median and the five worst fractions of the copy rate.
  std::string families;
  for (const char* fam :
       {"broadcast", "permutation", "slicing", "mixed", "reduction", "composite"}) {
    std::vector<const Case*> fc;
    for (const auto& c : cases)
      if (c.family == fam && c.error.empty()) fc.push_back(&c);
    if (fc.empty()) continue;
    std::sort(fc.begin(), fc.end(),
              [](const Case* a, const Case* b) { return a->fraction < b->fraction; });
    const double median = fc.size() % 2
                              ? fc[fc.size() / 2]->fraction
                              : (fc[fc.size() / 2 - 1]->fraction + fc[fc.size() / 2]->fraction) / 2;
    std::string worst;
    for (std::size_t k = 0; k < std::min<std::size_t>(5, fc.size()); ++k)
      worst += fmt::format("{}{{\"name\": {}, \"dtype\": {}, \"fraction\": {}}}", k ? ", " : "",
                           json_string(fc[k]->name), json_string(fc[k]->type.name()),
                           json_number(fc[k]->fraction));
    families += fmt::format("{}{}: {{\"count\": {}, \"min\": {}, \"median\": {}, \"worst\": [{}]}}",
                            families.empty() ? "" : ", ", json_string(fam), fc.size(),
                            json_number(fc.front()->fraction), json_number(median), worst);
  }
  std::string out = fmt::format(
      "{{\"device\": {}, \"seed\": {}, \"quick\": {}, \"copy_GBps\": {}, \"write_GBps\": {}, "
      "\"cases\": [\n",
      json_string(device_properties(current_device()).name), seed, quick ? "true" : "false",
      json_number(copy), json_number(write));
  for (std::size_t k = 0; k < cases.size(); ++k) out += (k ? ",\n" : "") + case_json(cases[k]);
  out += "],\n\"families\": {" + families + "},\n\"errors\": [";
  for (std::size_t k = 0; k < errors.size(); ++k) out += (k ? ", " : "") + errors[k];
  out += "]}\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}
