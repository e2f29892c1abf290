#include "support/nccl_suite.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "kiln/kiln.hpp"

namespace kiln::test {
namespace {

namespace nc = kiln::nccl;
using nc::Communicator;
using nc::reduce_op;

constexpr std::uint8_t kPoison = 0x5A;
constexpr reduce_op kAllOps[] = {reduce_op::sum, reduce_op::prod, reduce_op::max, reduce_op::min,
                                 reduce_op::avg};

const char* name(reduce_op op) {
  constexpr const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[int(op)];
}

// Element i of rank r's input for step `salt`: small and exact in every dtype (x.5 for floats,
// so float16/bfloat16 sums, products of two and averages stay exact), never all zero.
double value(dtype t, int rank, std::int64_t i, int salt) {
  const int k = int((i * 7 + rank * 5 + salt * 3) % 9);
  if (t == bool_) return k % 2;
  if (t.kind() == 'u') return k + 1;
  if (t.kind() == 'i') return k - 4;
  return k - 4 + 0.5;
}

// Logical values in C order (im only for complex dtypes).
struct Host {
  dtype t = float32;
  std::vector<double> re, im;
  std::size_t size() const { return re.size(); }
};

Host input(dtype t, int rank, std::int64_t n, int salt) {
  Host h{t, {}, {}};
  for (std::int64_t i = 0; i < n; ++i) {
    h.re.push_back(value(t, rank, i, salt));
    if (t.is_complex()) h.im.push_back(value(t, rank, i, salt + 1));
  }
  return h;
}

template <class T>
void put(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <class T>
T take(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void store(dtype t, double re, double im, std::byte* p) {
  switch (t.id()) {
    case dtype_id::bool_:
      put(p, std::uint8_t(re != 0));
      break;
    case dtype_id::int8:
      put(p, std::int8_t(re));
      break;
    case dtype_id::int16:
      put(p, std::int16_t(re));
      break;
    case dtype_id::int32:
      put(p, std::int32_t(re));
      break;
    case dtype_id::int64:
      put(p, std::int64_t(re));
      break;
    case dtype_id::uint8:
      put(p, std::uint8_t(re));
      break;
    case dtype_id::uint16:
      put(p, std::uint16_t(re));
      break;
    case dtype_id::uint32:
      put(p, std::uint32_t(re));
      break;
    case dtype_id::uint64:
      put(p, std::uint64_t(re));
      break;
    case dtype_id::float16:
      put(p, half(float(re)).bits);
      break;
    case dtype_id::bfloat16:
      put(p, bf16(float(re)).bits);
      break;
    case dtype_id::float32:
      put(p, float(re));
      break;
    case dtype_id::float64:
      put(p, re);
      break;
    case dtype_id::complex64:
      put(p, float(re));
      put(p + 4, float(im));
      break;
    case dtype_id::complex128:
      put(p, re);
      put(p + 8, im);
      break;
  }
}

// bool comes back as its raw byte, so a poisoned or garbled bool shows as a number.
std::pair<double, double> load(dtype t, const std::byte* p) {
  switch (t.id()) {
    case dtype_id::bool_:
      return {take<std::uint8_t>(p), 0};
    case dtype_id::int8:
      return {take<std::int8_t>(p), 0};
    case dtype_id::int16:
      return {take<std::int16_t>(p), 0};
    case dtype_id::int32:
      return {take<std::int32_t>(p), 0};
    case dtype_id::int64:
      return {double(take<std::int64_t>(p)), 0};
    case dtype_id::uint8:
      return {take<std::uint8_t>(p), 0};
    case dtype_id::uint16:
      return {take<std::uint16_t>(p), 0};
    case dtype_id::uint32:
      return {take<std::uint32_t>(p), 0};
    case dtype_id::uint64:
      return {double(take<std::uint64_t>(p)), 0};
    case dtype_id::float16:
      return {float(half::from_bits(take<std::uint16_t>(p))), 0};
    case dtype_id::bfloat16:
      return {float(bf16::from_bits(take<std::uint16_t>(p))), 0};
    case dtype_id::float32:
      return {take<float>(p), 0};
    case dtype_id::float64:
      return {take<double>(p), 0};
    case dtype_id::complex64:
      return {take<float>(p), take<float>(p + 4)};
    case dtype_id::complex128:
      return {take<double>(p), take<double>(p + 8)};
  }
  return {0, 0};
}

std::vector<std::byte> encode(const Host& h) {
  const std::size_t w = h.t.itemsize();
  std::vector<std::byte> b(h.size() * w);
  for (std::size_t i = 0; i < h.size(); ++i)
    store(h.t, h.re[i], h.t.is_complex() ? h.im[i] : 0, b.data() + i * w);
  return b;
}

Host decode(dtype t, const std::vector<std::byte>& b) {
  Host h{t, {}, {}};
  for (std::size_t i = 0; i < b.size() / t.itemsize(); ++i) {
    auto [re, im] = load(t, b.data() + i * t.itemsize());
    h.re.push_back(re);
    if (t.is_complex()) h.im.push_back(im);
  }
  return h;
}

// The reference as the dtype holds it.
Host round_trip(const Host& h) { return decode(h.t, encode(h)); }

Host concat(const std::vector<Host>& parts) {
  Host out{parts.front().t, {}, {}};
  for (const auto& p : parts) {
    out.re.insert(out.re.end(), p.re.begin(), p.re.end());
    out.im.insert(out.im.end(), p.im.begin(), p.im.end());
  }
  return out;
}

Host slice_of(const Host& h, std::size_t first, std::size_t n) {
  Host out{h.t, {}, {}};
  out.re.assign(h.re.begin() + std::ptrdiff_t(first), h.re.begin() + std::ptrdiff_t(first + n));
  if (h.t.is_complex())
    out.im.assign(h.im.begin() + std::ptrdiff_t(first), h.im.begin() + std::ptrdiff_t(first + n));
  return out;
}

double fold(reduce_op op, const std::vector<double>& v) {
  double acc = v.front();
  for (std::size_t r = 1; r < v.size(); ++r) {
    switch (op) {
      case reduce_op::sum:
      case reduce_op::avg:
        acc += v[r];
        break;
      case reduce_op::prod:
        acc *= v[r];
        break;
      case reduce_op::max:
        acc = std::max(acc, v[r]);
        break;
      case reduce_op::min:
        acc = std::min(acc, v[r]);
        break;
    }
  }
  return op == reduce_op::avg ? acc / double(v.size()) : acc;
}

// op over every rank's input, elementwise (complex: per component, as NCCL's float pairs).
Host reduce_ref(reduce_op op, const std::vector<Host>& per_rank) {
  Host out = per_rank.front();
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::vector<double> re, im;
    for (const auto& h : per_rank) {
      re.push_back(h.re[i]);
      if (out.t.is_complex()) im.push_back(h.im[i]);
    }
    out.re[i] = fold(op, re);
    if (out.t.is_complex()) out.im[i] = fold(op, im);
  }
  return round_trip(out);
}

std::vector<reduce_op> valid_ops(dtype t) {
  if (t == bool_) return {reduce_op::max, reduce_op::min};
  if (t == int16 || t == uint16) return {};
  if (t.is_complex()) return {reduce_op::sum, reduce_op::avg};
  if (t.is_integer()) return {reduce_op::sum, reduce_op::prod, reduce_op::max, reduce_op::min};
  return {kAllOps, kAllOps + 5};
}

ndarray upload(const Communicator& c, const Host& h, const Shape& shape) {
  DeviceGuard on(c.device());
  ndarray a = empty(shape, h.t);
  const auto b = encode(h);
  a.copy_from_host(b.data());
  return a;
}

ndarray poisoned(const Communicator& c, dtype t, const Shape& shape) {
  DeviceGuard on(c.device());
  ndarray a = empty(shape, t);
  std::vector<std::byte> b(a.nbytes(), std::byte{kPoison});
  a.copy_from_host(b.data());
  return a;
}

// A non-contiguous (rows, cols) output: the transpose of a poisoned (cols, rows) array.
ndarray poisoned_transposed(const Communicator& c, dtype t, std::int64_t rows, std::int64_t cols) {
  return poisoned(c, t, {cols, rows}).T();
}

// The whole 1-D base a strided view was taken from.
ndarray base_of(const ndarray& v, std::int64_t n) {
  return ndarray(v.buffer(), {n}, {std::int64_t(v.itemsize())}, 0, v.dtype());
}

// A 1-D view with stride 2 holding h (the elements between hold other values).
ndarray upload_strided(const Communicator& c, const Host& h) {
  Host base = input(h.t, 7, std::int64_t(2 * h.size()), 99);
  for (std::size_t i = 0; i < h.size(); ++i) {
    base.re[2 * i] = h.re[i];
    if (h.t.is_complex()) base.im[2 * i] = h.im[i];
  }
  ndarray b = upload(c, base, {std::int64_t(base.size())});
  return b(slice(std::nullopt, std::nullopt, 2));
}

Host download(const ndarray& a) {
  std::vector<std::byte> b(a.nbytes());
  {
    DeviceGuard on(a.device());
    a.copy_to_host(b.data());
  }
  return decode(a.dtype(), b);
}

std::string show(const Host& h, std::size_t i) {
  if (h.t.is_complex()) return fmt::format("({}{:+}j)", h.re[i], h.im[i]);
  return fmt::format("{}", h.re[i]);
}

class Suite {
 public:
  explicit Suite(std::span<const Communicator> mine) : mine_(mine), size_(mine.front().size()) {}

  std::vector<std::string> run() {
    step("all_reduce, every dtype and op", [&] { all_reduce_every_dtype(); });
    step("all_reduce in place", [&] { all_reduce_in_place(); });
    step("all_reduce into a new array", [&] { all_reduce_allocating(); });
    step("all_reduce on non-contiguous arrays", [&] { all_reduce_strided(); });
    step("broadcast", [&] { broadcasts(); });
    step("reduce", [&] { reduces(); });
    step("all_gather", [&] { all_gathers(); });
    step("reduce_scatter", [&] { reduce_scatters(); });
    step("send and recv around the ring", [&] { ring(); });
    step("collectives on the current stream", [&] { on_a_stream(); });
    step("a group whose body throws issues nothing", [&] { throwing_group(); });
    return std::move(failures_);
  }

 private:
  template <class F>
  void step(const char* what, F&& f) {
    step_ = what;
    try {
      f();
    } catch (const std::exception& e) {
      fail(fmt::format("threw {}", e.what()));
    }
  }

  void fail(const std::string& line) { failures_.push_back(fmt::format("{}: {}", step_, line)); }

  int rank(std::size_t k) const { return mine_[k].rank(); }
  std::size_t count() const { return mine_.size(); }

  // Runs `issue(k, comm)` for every communicator of this process as one group, then waits.
  template <class F>
  void grouped(F&& issue) {
    nc::group([&] {
      for (std::size_t k = 0; k < count(); ++k) issue(k, mine_[k]);
    });
    for (const auto& c : mine_) c.synchronize();
  }

  void compare(const std::string& what, std::size_t k, const Host& got, const Host& want) {
    const std::string where = fmt::format("{} {} on rank {}", what, got.t.name(), rank(k));
    if (got.size() != want.size()) {
      fail(fmt::format("{}: {} elements, expected {}", where, got.size(), want.size()));
      return;
    }
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const bool same = got.re[i] == want.re[i] && (!got.t.is_complex() || got.im[i] == want.im[i]);
      if (!same && bad++ < 3)
        fail(fmt::format("{}: element {} is {}, expected {}", where, i, show(got, i),
                         show(want, i)));
    }
    if (bad > 3) fail(fmt::format("{}: {} of {} elements wrong", where, bad, got.size()));
  }

  void expect_poisoned(const std::string& what, std::size_t k, const ndarray& a) {
    std::vector<std::byte> b(a.nbytes());
    {
      DeviceGuard on(a.device());
      a.copy_to_host(b.data());
    }
    for (auto x : b)
      if (x != std::byte{kPoison}) {
        fail(fmt::format("{} on rank {}: an array this rank does not receive into was written",
                         what, rank(k)));
        return;
      }
  }

  template <class Error, class F>
  void expect_throw(const std::string& what, F&& f) {
    try {
      f();
      fail(fmt::format("{}: expected an error, nothing was raised", what));
    } catch (const Error&) {
    } catch (const std::exception& e) {
      fail(fmt::format("{}: raised the wrong kind of error: {}", what, e.what()));
    }
  }

  std::vector<Host> every_rank(dtype t, std::int64_t n, int salt) const {
    std::vector<Host> v;
    for (int r = 0; r < size_; ++r) v.push_back(input(t, r, n, salt));
    return v;
  }

  void all_reduce_every_dtype() {
    for (dtype t : kAllDtypes) {
      const auto ops = valid_ops(t);
      for (reduce_op op : kAllOps) {
        if (std::find(ops.begin(), ops.end(), op) != ops.end()) continue;
        expect_throw<TypeError>(fmt::format("all_reduce with {} on {}", name(op), t.name()), [&] {
          ndarray x = upload(mine_[0], input(t, rank(0), 4, 1), {4});
          nc::all_reduce(mine_[0], x, x, op);
        });
      }
      if (ops.empty()) continue;
      std::vector<ndarray> send(count());
      std::vector<std::vector<ndarray>> recv(count());
      for (std::size_t k = 0; k < count(); ++k) {
        send[k] = upload(mine_[k], input(t, rank(k), 15, 1), {3, 5});
        for (std::size_t j = 0; j < ops.size(); ++j)
          recv[k].push_back(poisoned(mine_[k], t, {3, 5}));
      }
      grouped([&](std::size_t k, const Communicator& c) {
        for (std::size_t j = 0; j < ops.size(); ++j) nc::all_reduce(c, send[k], recv[k][j], ops[j]);
      });
      const auto inputs = every_rank(t, 15, 1);
      for (std::size_t k = 0; k < count(); ++k)
        for (std::size_t j = 0; j < ops.size(); ++j)
          compare(fmt::format("all_reduce {}", name(ops[j])), k, download(recv[k][j]),
                  reduce_ref(ops[j], inputs));
    }
  }

  void all_reduce_in_place() {
    const std::pair<dtype, reduce_op> cases[] = {
        {float32, reduce_op::sum},    {int64, reduce_op::max}, {bfloat16, reduce_op::avg},
        {complex128, reduce_op::sum}, {bool_, reduce_op::min}, {uint8, reduce_op::prod}};
    for (const auto& one : cases) {
      // Not structured bindings: clang 14 (the sanitizer build) cannot capture them in a lambda.
      const dtype t = one.first;
      const reduce_op op = one.second;
      std::vector<ndarray> x(count());
      for (std::size_t k = 0; k < count(); ++k)
        x[k] = upload(mine_[k], input(t, rank(k), 9, 2), {9});
      grouped([&](std::size_t k, const Communicator& c) { nc::all_reduce(c, x[k], x[k], op); });
      for (std::size_t k = 0; k < count(); ++k)
        compare(fmt::format("all_reduce {} in place", name(op)), k, download(x[k]),
                reduce_ref(op, every_rank(t, 9, 2)));
    }
  }

  void all_reduce_allocating() {
    std::vector<ndarray> x(count()), out(count());
    for (std::size_t k = 0; k < count(); ++k)
      x[k] = upload(mine_[k], input(float64, rank(k), 12, 3), {2, 2, 3});
    grouped([&](std::size_t k, const Communicator& c) {
      out[k] = nc::all_reduce(c, x[k], reduce_op::prod);
    });
    for (std::size_t k = 0; k < count(); ++k) {
      if (out[k].shape() != Shape{2, 2, 3} || out[k].device() != mine_[k].device())
        fail(fmt::format("all_reduce's new array has shape {} on device {}", out[k].shape().str(),
                         out[k].device()));
      compare("all_reduce prod into a new array", k, download(out[k]),
              reduce_ref(reduce_op::prod, every_rank(float64, 12, 3)));
    }
  }

  void all_reduce_strided() {
    const std::pair<dtype, reduce_op> cases[] = {{float32, reduce_op::sum},
                                                 {complex64, reduce_op::avg},
                                                 {bool_, reduce_op::max},
                                                 {int32, reduce_op::min}};
    for (const auto& one : cases) {
      // Not structured bindings: clang 14 (the sanitizer build) cannot capture them in a lambda.
      const dtype t = one.first;
      const reduce_op op = one.second;
      std::vector<ndarray> send(count()), recv(count());
      for (std::size_t k = 0; k < count(); ++k) {
        send[k] = upload_strided(mine_[k], input(t, rank(k), 12, 4));
        recv[k] = poisoned_transposed(mine_[k], t, 3, 4);
      }
      grouped(
          [&](std::size_t k, const Communicator& c) { nc::all_reduce(c, send[k], recv[k], op); });
      for (std::size_t k = 0; k < count(); ++k)
        compare(fmt::format("all_reduce {} strided -> transposed", name(op)), k, download(recv[k]),
                reduce_ref(op, every_rank(t, 12, 4)));
    }
    // In place on a strided view: the elements between stay as they were.
    std::vector<ndarray> x(count());
    std::vector<Host> around(count());
    for (std::size_t k = 0; k < count(); ++k) {
      x[k] = upload_strided(mine_[k], input(float64, rank(k), 10, 5));
      around[k] = download(base_of(x[k], 20));
    }
    grouped([&](std::size_t k, const Communicator& c) { nc::all_reduce(c, x[k], x[k]); });
    for (std::size_t k = 0; k < count(); ++k) {
      compare("all_reduce sum in place on a strided view", k, download(x[k]),
              reduce_ref(reduce_op::sum, every_rank(float64, 10, 5)));
      const Host after = download(base_of(x[k], 20));
      for (std::size_t i = 1; i < 20; i += 2)
        if (after.re[i] != around[k].re[i]) {
          fail(fmt::format("in place on a strided view wrote element {} between the view's", i));
          break;
        }
    }
  }

  void broadcasts() {
    const int root = size_ - 1;
    std::vector<std::vector<ndarray>> send(count()), recv(count());
    for (std::size_t k = 0; k < count(); ++k)
      for (dtype t : kAllDtypes) {
        send[k].push_back(rank(k) == root ? upload(mine_[k], input(t, rank(k), 15, 2), {3, 5})
                                          : ndarray{});
        recv[k].push_back(poisoned(mine_[k], t, {3, 5}));
      }
    grouped([&](std::size_t k, const Communicator& c) {
      for (std::size_t j = 0; j < send[k].size(); ++j)
        nc::broadcast(c, send[k][j], recv[k][j], root);
    });
    for (std::size_t k = 0; k < count(); ++k)
      for (std::size_t j = 0; j < recv[k].size(); ++j)
        compare(fmt::format("broadcast from rank {}", root), k, download(recv[k][j]),
                round_trip(input(kAllDtypes[j], root, 15, 2)));

    for (dtype t : {float16, complex128, int16}) {  // in place from rank 0
      std::vector<ndarray> x(count());
      for (std::size_t k = 0; k < count(); ++k)
        x[k] = upload(mine_[k], input(t, rank(k), 7, 3), {7});
      grouped([&](std::size_t k, const Communicator& c) { nc::broadcast(c, x[k], 0); });
      for (std::size_t k = 0; k < count(); ++k)
        compare("broadcast in place from rank 0", k, download(x[k]), round_trip(input(t, 0, 7, 3)));
    }

    std::vector<ndarray> s(count()), r(count());  // into a transposed view
    for (std::size_t k = 0; k < count(); ++k) {
      s[k] = upload(mine_[k], input(uint16, rank(k), 15, 4), {3, 5});
      r[k] = poisoned_transposed(mine_[k], uint16, 3, 5);
    }
    grouped([&](std::size_t k, const Communicator& c) { nc::broadcast(c, s[k], r[k], root); });
    for (std::size_t k = 0; k < count(); ++k)
      compare("broadcast into a transposed view", k, download(r[k]),
              round_trip(input(uint16, root, 15, 4)));
  }

  void reduces() {
    struct Case {
      dtype t;
      reduce_op op;
      int root;
    };
    const Case cases[] = {{float32, reduce_op::sum, 0},
                          {int64, reduce_op::sum, 0},
                          {complex64, reduce_op::sum, 0},
                          {uint32, reduce_op::max, size_ - 1},
                          {bfloat16, reduce_op::max, size_ - 1}};
    for (const auto& cs : cases) {
      std::vector<ndarray> send(count()), recv(count());
      for (std::size_t k = 0; k < count(); ++k) {
        send[k] = upload(mine_[k], input(cs.t, rank(k), 15, 5), {15});
        recv[k] = poisoned(mine_[k], cs.t, {15});
      }
      grouped([&](std::size_t k, const Communicator& c) {
        nc::reduce(c, send[k], recv[k], cs.root, cs.op);
      });
      for (std::size_t k = 0; k < count(); ++k) {
        const std::string what = fmt::format("reduce {} to rank {}", name(cs.op), cs.root);
        if (rank(k) == cs.root)
          compare(what, k, download(recv[k]), reduce_ref(cs.op, every_rank(cs.t, 15, 5)));
        else
          expect_poisoned(what, k, recv[k]);
      }
    }
    // In place on the root; the other ranks pass no recv at all.
    std::vector<ndarray> x(count());
    for (std::size_t k = 0; k < count(); ++k)
      x[k] = upload(mine_[k], input(float64, rank(k), 8, 6), {8});
    grouped([&](std::size_t k, const Communicator& c) {
      nc::reduce(c, x[k], rank(k) == 0 ? x[k] : ndarray{}, 0, reduce_op::min);
    });
    for (std::size_t k = 0; k < count(); ++k)
      compare("reduce min in place on rank 0", k, download(x[k]),
              rank(k) == 0 ? reduce_ref(reduce_op::min, every_rank(float64, 8, 6))
                           : round_trip(input(float64, rank(k), 8, 6)));
  }

  void all_gathers() {
    std::vector<std::vector<ndarray>> send(count()), recv(count());
    for (std::size_t k = 0; k < count(); ++k)
      for (dtype t : kAllDtypes) {
        send[k].push_back(upload(mine_[k], input(t, rank(k), 6, 5), {2, 3}));
        recv[k].push_back(poisoned(mine_[k], t, {size_, 2, 3}));
      }
    grouped([&](std::size_t k, const Communicator& c) {
      for (std::size_t j = 0; j < send[k].size(); ++j) nc::all_gather(c, send[k][j], recv[k][j]);
    });
    for (std::size_t k = 0; k < count(); ++k)
      for (std::size_t j = 0; j < recv[k].size(); ++j)
        compare("all_gather", k, download(recv[k][j]),
                round_trip(concat(every_rank(kAllDtypes[j], 6, 5))));

    std::vector<ndarray> x(count()), out(count());  // into a new array
    for (std::size_t k = 0; k < count(); ++k)
      x[k] = upload(mine_[k], input(float32, rank(k), 6, 6), {2, 3});
    grouped([&](std::size_t k, const Communicator& c) { out[k] = nc::all_gather(c, x[k]); });
    for (std::size_t k = 0; k < count(); ++k) {
      if (out[k].shape() != Shape{size_, 2, 3})
        fail(fmt::format("all_gather's new array has shape {}", out[k].shape().str()));
      compare("all_gather into a new array", k, download(out[k]),
              round_trip(concat(every_rank(float32, 6, 6))));
    }

    std::vector<ndarray> whole(count());  // in place: send is this rank's row of recv
    for (std::size_t k = 0; k < count(); ++k) {
      std::vector<Host> parts;
      for (int r = 0; r < size_; ++r) {
        Host p = input(int64, r, 6, 7);
        if (r != rank(k)) std::fill(p.re.begin(), p.re.end(), -77.0);
        parts.push_back(p);
      }
      whole[k] = upload(mine_[k], concat(parts), {size_, 6});
    }
    grouped([&](std::size_t k, const Communicator& c) {
      nc::all_gather(c, whole[k](std::int64_t(rank(k))), whole[k]);
    });
    for (std::size_t k = 0; k < count(); ++k)
      compare("all_gather in place", k, download(whole[k]),
              round_trip(concat(every_rank(int64, 6, 7))));

    std::vector<ndarray> s(count()), r(count());  // strided send, transposed recv
    for (std::size_t k = 0; k < count(); ++k) {
      s[k] = upload_strided(mine_[k], input(complex128, rank(k), 6, 8));
      r[k] = poisoned_transposed(mine_[k], complex128, size_, 6);
    }
    grouped([&](std::size_t k, const Communicator& c) { nc::all_gather(c, s[k], r[k]); });
    for (std::size_t k = 0; k < count(); ++k)
      compare("all_gather strided -> transposed", k, download(r[k]),
              round_trip(concat(every_rank(complex128, 6, 8))));
  }

  void reduce_scatters() {
    const std::int64_t n = 4 * size_;
    std::vector<dtype> types;
    for (dtype t : kAllDtypes)
      if (t != int16 && t != uint16) types.push_back(t);
    auto op_for = [](dtype t) { return t == bool_ ? reduce_op::max : reduce_op::sum; };
    std::vector<std::vector<ndarray>> send(count()), recv(count());
    for (std::size_t k = 0; k < count(); ++k)
      for (dtype t : types) {
        send[k].push_back(upload(mine_[k], input(t, rank(k), n, 7), {n}));
        recv[k].push_back(poisoned(mine_[k], t, {4}));
      }
    grouped([&](std::size_t k, const Communicator& c) {
      for (std::size_t j = 0; j < types.size(); ++j)
        nc::reduce_scatter(c, send[k][j], recv[k][j], op_for(types[j]));
    });
    for (std::size_t k = 0; k < count(); ++k)
      for (std::size_t j = 0; j < types.size(); ++j)
        compare(fmt::format("reduce_scatter {}", name(op_for(types[j]))), k, download(recv[k][j]),
                slice_of(reduce_ref(op_for(types[j]), every_rank(types[j], n, 7)),
                         std::size_t(4 * rank(k)), 4));
    expect_throw<TypeError>("reduce_scatter on int16", [&] {
      nc::reduce_scatter(mine_[0], upload(mine_[0], input(int16, rank(0), n, 1), {n}));
    });

    std::vector<ndarray> x(count()), out(count());  // into a new array: first axis / size
    for (std::size_t k = 0; k < count(); ++k)
      x[k] = upload(mine_[k], input(float32, rank(k), 6 * size_, 8), {2 * size_, 3});
    grouped([&](std::size_t k, const Communicator& c) { out[k] = nc::reduce_scatter(c, x[k]); });
    for (std::size_t k = 0; k < count(); ++k) {
      if (out[k].shape() != Shape{2, 3})
        fail(fmt::format("reduce_scatter's new array has shape {}", out[k].shape().str()));
      compare("reduce_scatter into a new array", k, download(out[k]),
              slice_of(reduce_ref(reduce_op::sum, every_rank(float32, 6 * size_, 8)),
                       std::size_t(6 * rank(k)), 6));
    }

    std::vector<ndarray> whole(count());  // in place: recv is this rank's block of send
    for (std::size_t k = 0; k < count(); ++k)
      whole[k] = upload(mine_[k], input(float64, rank(k), n, 9), {n});
    grouped([&](std::size_t k, const Communicator& c) {
      nc::reduce_scatter(c, whole[k], whole[k](slice(4 * rank(k), 4 * rank(k) + 4)));
    });
    for (std::size_t k = 0; k < count(); ++k)
      compare("reduce_scatter in place", k, download(whole[k](slice(4 * rank(k), 4 * rank(k) + 4))),
              slice_of(reduce_ref(reduce_op::sum, every_rank(float64, n, 9)),
                       std::size_t(4 * rank(k)), 4));

    std::vector<ndarray> s(count()), r(count());  // strided send, transposed recv
    for (std::size_t k = 0; k < count(); ++k) {
      s[k] = upload_strided(mine_[k], input(float32, rank(k), n, 10));
      r[k] = poisoned_transposed(mine_[k], float32, 2, 2);
    }
    grouped([&](std::size_t k, const Communicator& c) { nc::reduce_scatter(c, s[k], r[k]); });
    for (std::size_t k = 0; k < count(); ++k)
      compare("reduce_scatter strided -> transposed", k, download(r[k]),
              slice_of(reduce_ref(reduce_op::sum, every_rank(float32, n, 10)),
                       std::size_t(4 * rank(k)), 4));
  }

  void ring() {
    auto to = [&](int r) { return (r + 1) % size_; };
    auto from = [&](int r) { return (r + size_ - 1) % size_; };
    std::vector<std::vector<ndarray>> out(count()), in(count());
    for (std::size_t k = 0; k < count(); ++k)
      for (dtype t : kAllDtypes) {
        out[k].push_back(upload(mine_[k], input(t, rank(k), 10, 11), {10}));
        in[k].push_back(poisoned(mine_[k], t, {10}));
      }
    grouped([&](std::size_t k, const Communicator& c) {
      for (std::size_t j = 0; j < out[k].size(); ++j) {
        nc::send(c, out[k][j], to(rank(k)));
        nc::recv(c, in[k][j], from(rank(k)));
      }
    });
    for (std::size_t k = 0; k < count(); ++k)
      for (std::size_t j = 0; j < in[k].size(); ++j)
        compare("recv from the previous rank", k, download(in[k][j]),
                round_trip(input(kAllDtypes[j], from(rank(k)), 10, 11)));

    std::vector<ndarray> s(count()), r(count());  // strided send, transposed recv
    for (std::size_t k = 0; k < count(); ++k) {
      s[k] = upload_strided(mine_[k], input(int16, rank(k), 10, 12));
      r[k] = poisoned_transposed(mine_[k], int16, 2, 5);
    }
    grouped([&](std::size_t k, const Communicator& c) {
      nc::send(c, s[k], to(rank(k)));
      nc::recv(c, r[k], from(rank(k)));
    });
    for (std::size_t k = 0; k < count(); ++k)
      compare("send strided, recv transposed", k, download(r[k]),
              round_trip(input(int16, from(rank(k)), 10, 12)));
  }

  void on_a_stream() {
    std::vector<std::unique_ptr<Stream>> streams;
    std::vector<ndarray> x(count()), y(count());
    for (std::size_t k = 0; k < count(); ++k) {
      x[k] = upload(mine_[k], input(float32, rank(k), 16, 13), {16});
      DeviceGuard on(mine_[k].device());
      synchronize_device();  // the upload ran on the null stream, which s does not wait for
      streams.push_back(std::make_unique<Stream>(true));
    }
    {
      std::vector<std::unique_ptr<StreamGuard>> use;
      for (auto& s : streams) use.push_back(std::make_unique<StreamGuard>(*s));
      if (count() == 1)  // a lone call, outside any group
        y[0] = nc::all_reduce(mine_[0], x[0], reduce_op::max);
      else
        nc::group([&] {
          for (std::size_t k = 0; k < count(); ++k)
            y[k] = nc::all_reduce(mine_[k], x[k], reduce_op::max);
        });
      for (auto& s : streams) s->synchronize();
    }
    for (std::size_t k = 0; k < count(); ++k)
      compare("all_reduce max on a kiln::Stream", k, download(y[k]),
              reduce_ref(reduce_op::max, every_rank(float32, 16, 13)));
  }

  void throwing_group() {
    std::vector<ndarray> x(count());
    for (std::size_t k = 0; k < count(); ++k)
      x[k] = upload(mine_[k], input(float32, rank(k), 5, 14), {5});
    const Host before = download(x[0]);
    expect_throw<ShapeError>("a group with a bad call", [&] {
      nc::group([&] {
        for (std::size_t k = 0; k < count(); ++k) nc::all_reduce(mine_[k], x[k], x[k]);
        DeviceGuard on(mine_[0].device());
        nc::all_reduce(mine_[0], x[0], empty({3}, float32));  // 5 vs 3 elements
      });
    });
    for (const auto& c : mine_) c.synchronize();
    compare("the arrays of a group that threw", 0, download(x[0]), before);
    // The communicators still work afterwards.
    grouped([&](std::size_t k, const Communicator& c) { nc::all_reduce(c, x[k], x[k]); });
    for (std::size_t k = 0; k < count(); ++k)
      compare("all_reduce after a group that threw", k, download(x[k]),
              reduce_ref(reduce_op::sum, every_rank(float32, 5, 14)));
  }

  std::span<const Communicator> mine_;
  int size_;
  const char* step_ = "";
  std::vector<std::string> failures_;
};

}  // namespace

std::vector<std::string> run_collective_suite(std::span<const nccl::Communicator> mine) {
  return Suite(mine).run();
}

void keep_nvls_off() { ::setenv("NCCL_NVLS_ENABLE", "0", 0); }

}  // namespace kiln::test
