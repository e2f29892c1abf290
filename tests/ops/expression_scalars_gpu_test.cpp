// C++ integers beyond the array's range on a GPU: every operator and function NumPy 2
// computes with such an int (comparisons answered exactly, true division and arctan2/hypot in
// their float loop, logical_* with the int as a bool, where's C-cast values, clip's dropped
// bounds, float16 overflowing to inf) against NumPy's own values
// (tests/ops/golden/scalar_values.txt, made by make_scalar_values.py), outputs poisoned
// first. Integers and booleans exactly; floats within 2 ULP of NumPy's (float64 division
// exactly; arctan2 and hypot use CUDA's functions, float16 ones rounded once from float32).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "kiln/kiln.hpp"
#include "support/scalar_ops.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

std::vector<std::string> words_of(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string t; in >> t;) w.push_back(t);
  return w;
}

// The golden input values as a device array of dtype t.
ndarray input_array(dtype t, const std::vector<std::string>& v) {
  auto each = [&](auto conv) {
    using T = decltype(conv(std::string()));
    std::vector<T> h;
    for (const auto& s : v) h.push_back(conv(s));
    return asarray(h);
  };
  switch (t.id()) {
    case dtype_id::bool_:
      return each([](const std::string& s) { return s == "1"; });
    case dtype_id::int8:
      return each([](const std::string& s) { return std::int8_t(std::stoll(s)); });
    case dtype_id::int16:
      return each([](const std::string& s) { return std::int16_t(std::stoll(s)); });
    case dtype_id::int32:
      return each([](const std::string& s) { return std::int32_t(std::stoll(s)); });
    case dtype_id::int64:
      return each([](const std::string& s) { return std::int64_t(std::stoll(s)); });
    case dtype_id::uint8:
      return each([](const std::string& s) { return std::uint8_t(std::stoull(s)); });
    case dtype_id::uint16:
      return each([](const std::string& s) { return std::uint16_t(std::stoull(s)); });
    case dtype_id::uint32:
      return each([](const std::string& s) { return std::uint32_t(std::stoull(s)); });
    case dtype_id::uint64:
      return each([](const std::string& s) { return std::uint64_t(std::stoull(s)); });
    case dtype_id::float16:
      return each([](const std::string& s) { return half(std::strtof(s.c_str(), nullptr)); });
    default:
      FAIL("no golden input for " << t.name());
      return ndarray();
  }
}

// out's values as the golden table writes them (booleans 0/1, integers decimal), floats as
// doubles (compared within ULP separately).
std::vector<std::string> device_text(const ndarray& out) {
  std::vector<std::string> r;
  auto put = [&](auto vec) {
    for (const auto& x : vec) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, half>)
        r.push_back(fmt::format("{}", double(float(x))));
      else if constexpr (std::is_floating_point_v<T>)
        r.push_back(fmt::format("{}", double(x)));
      else
        r.push_back(std::to_string(+x));
    }
  };
  switch (out.dtype().id()) {
    case dtype_id::bool_:
      for (bool b : out.get<bool>()) r.push_back(b ? "1" : "0");
      break;
    case dtype_id::int8:
      put(out.get<std::int8_t>());
      break;
    case dtype_id::int16:
      put(out.get<std::int16_t>());
      break;
    case dtype_id::int32:
      put(out.get<std::int32_t>());
      break;
    case dtype_id::int64:
      put(out.get<std::int64_t>());
      break;
    case dtype_id::uint8:
      put(out.get<std::uint8_t>());
      break;
    case dtype_id::uint16:
      put(out.get<std::uint16_t>());
      break;
    case dtype_id::uint32:
      put(out.get<std::uint32_t>());
      break;
    case dtype_id::uint64:
      put(out.get<std::uint64_t>());
      break;
    case dtype_id::float16:
      put(out.get<half>());
      break;
    case dtype_id::float32:
      put(out.get<float>());
      break;
    case dtype_id::float64:
      put(out.get<double>());
      break;
    default:
      FAIL("unexpected result dtype " << out.dtype().name());
  }
  return r;
}

bool same_value(const std::string& got, const std::string& want, dtype t) {
  if (!t.is_floating()) return got == want;
  const double g = std::strtod(got.c_str(), nullptr), w = std::strtod(want.c_str(), nullptr);
  if (std::isnan(w)) return std::isnan(g);
  if (std::isinf(w) || w == 0) return g == w && std::signbit(g) == std::signbit(w);
  const double eps = t == float16 ? 0x1p-10 : t == float32 ? 0x1p-23 : 0x1p-52;
  return std::fabs(g - w) <= 2 * eps * std::fabs(w);
}

// A poisoned output of e's dtype and shape, e evaluated into it.
ndarray run_into(const expr& e) {
  ndarray out = empty(e.shape(), e.dtype());
  out.fill(e.dtype().is_floating() ? scalar(-12345.0)
           : e.dtype() == bool_    ? scalar(true)
                                   : scalar(99));
  eval_into(e, out);
  return out;
}

}  // namespace

TEST_CASE(
    "ints beyond the array's range give NumPy 2's values for every operator NumPy computes "
    "them with",
    "[gpu][ops]") {
  std::ifstream in(KILN_TEST_SOURCE_DIR "/ops/golden/scalar_values.txt");
  REQUIRE(in.good());
  std::map<std::string, ndarray> inputs;
  std::map<std::string, ndarray> conds;  // where's condition: element k % 3 != 1
  int checked = 0, bad = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto w = words_of(line);
    if (w[0] == "input") {
      const dtype t = dtype::from_name(w[1]);
      const std::vector<std::string> v(w.begin() + 2, w.end());
      inputs[w[1]] = input_array(t, v);
      std::vector<bool> c;
      for (std::size_t k = 0; k < v.size(); ++k) c.push_back(k % 3 != 1);
      conds[w[1]] = asarray(c);
      continue;
    }
    const auto colon = std::find(w.begin(), w.end(), ":");
    REQUIRE(colon != w.end());
    const std::vector<std::string> key(w.begin(), colon);
    const dtype want_type = dtype::from_name(*(colon + 1));
    const std::vector<std::string> want(colon + 2, w.end());
    INFO(line);
    expr e = [&] {
      const std::string& op = key[0];
      if (op == "clip")
        return test::clip_ints(inputs.at(key[1]), test::parse_int_arg(key[2]),
                               test::parse_int_arg(key[3]));
      const bool left = key[1].rfind("int:", 0) == 0;
      const std::string& d = left ? key[2] : key[1];
      const auto v = test::parse_int_arg(left ? key[1] : key[2]);
      if (op == "where")
        return left ? test::where_left(conds.at(d), v, inputs.at(d))
                    : test::where_right(conds.at(d), inputs.at(d), v);
      const auto& f = test::scalar_ops().at(op);
      return left ? f.left(v, inputs.at(d)) : f.right(inputs.at(d), v);
    }();
    REQUIRE(e.dtype() == want_type);
    const auto got = device_text(run_into(e));
    REQUIRE(got.size() == want.size());
    bool ok = true;
    for (std::size_t k = 0; k < got.size(); ++k) ok = ok && same_value(got[k], want[k], want_type);
    if (!ok && ++bad <= 20) {
      std::string g;
      for (const auto& s : got) g += s + " ";
      UNSCOPED_INFO(line << "\n  kiln: " << g);
    }
    ++checked;
  }
  CHECK(checked > 3000);
  CHECK(bad == 0);
}
