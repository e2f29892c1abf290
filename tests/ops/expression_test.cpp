// Fused expressions without a GPU: NumPy 2 result types of every operator and function
// (against tests/ops/golden/op_types.txt, made once by NumPy), errors at the operator,
// structural keys, and an NVRTC compile of every operator and function per dtype class.
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "kiln/cache/compile_cache.hpp"
#include "kiln/codegen/op_table.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

// Metadata-only arrays: no buffer, so no GPU is needed to build expressions over them.
// Each gets its own offset, so two of them are two different arrays.
ndarray meta(const Shape& s, dtype t = float32) {
  static std::int64_t next = 0;
  next += 256;
  return ndarray(nullptr, s, c_strides(s, std::int64_t(t.itemsize())), next, t);
}

using Unary = std::function<expr(const ndarray&)>;
// b: an array operand, or nullptr with w = 0/1/2 for a weak int / float / complex scalar.
using Binary = std::function<expr(const ndarray&, const ndarray*, int)>;

#define U(np, fn)                                    \
  {                                                  \
    np, [](const ndarray& a) { return expr(fn(a)); } \
  }
#define B(np, fn)                                               \
  {                                                             \
    np, [](const ndarray& a, const ndarray* b, int w) -> expr { \
      if (b) return fn(a, *b);                                  \
      if (w == 0) return fn(a, 1);                              \
      if (w == 1) return fn(a, 1.0);                            \
      return fn(a, std::complex<double>(0, 1));                 \
    }                                                           \
  }

const std::vector<std::pair<std::string, Unary>>& unary_ops() {
  static const std::vector<std::pair<std::string, Unary>> v = {
      {"negative", [](const ndarray& a) { return -a; }},
      {"positive", [](const ndarray& a) { return +a; }},
      U("absolute", kiln::abs),
      U("logical_not", kiln::logical_not),
      {"invert", [](const ndarray& a) { return ~a; }},
      U("sin", kiln::sin),
      U("cos", kiln::cos),
      U("tan", kiln::tan),
      U("arcsin", kiln::arcsin),
      U("arccos", kiln::arccos),
      U("arctan", kiln::arctan),
      U("sinh", kiln::sinh),
      U("cosh", kiln::cosh),
      U("tanh", kiln::tanh),
      U("arcsinh", kiln::arcsinh),
      U("arccosh", kiln::arccosh),
      U("arctanh", kiln::arctanh),
      U("exp", kiln::exp),
      U("exp2", kiln::exp2),
      U("expm1", kiln::expm1),
      U("log", kiln::log),
      U("log2", kiln::log2),
      U("log10", kiln::log10),
      U("log1p", kiln::log1p),
      U("sqrt", kiln::sqrt),
      U("cbrt", kiln::cbrt),
      U("square", kiln::square),
      U("reciprocal", kiln::reciprocal),
      U("floor", kiln::floor),
      U("ceil", kiln::ceil),
      U("trunc", kiln::trunc),
      U("rint", kiln::rint),
      U("sign", kiln::sign),
      U("isnan", kiln::isnan),
      U("isinf", kiln::isinf),
      U("isfinite", kiln::isfinite),
      U("real", kiln::real),
      U("imag", kiln::imag),
      U("conj", kiln::conj),
      U("angle", kiln::angle),
  };
  return v;
}

#define OPB(np, OP)                                             \
  {                                                             \
    np, [](const ndarray& a, const ndarray* b, int w) -> expr { \
      if (b) return a OP * b;                                   \
      if (w == 0) return a OP 1;                                \
      if (w == 1) return a OP 1.0;                              \
      return a OP std::complex<double>(0, 1);                   \
    }                                                           \
  }

const std::vector<std::pair<std::string, Binary>>& binary_ops() {
  static const std::vector<std::pair<std::string, Binary>> v = {
      OPB("add", +),
      OPB("subtract", -),
      OPB("multiply", *),
      OPB("divide", /),
      B("floor_divide", kiln::floor_divide),
      OPB("remainder", %),
      B("power", kiln::power),
      OPB("equal", ==),
      OPB("not_equal", !=),
      OPB("less", <),
      OPB("less_equal", <=),
      OPB("greater", >),
      OPB("greater_equal", >=),
      B("logical_and", kiln::logical_and),
      B("logical_or", kiln::logical_or),
      B("logical_xor", kiln::logical_xor),
      OPB("bitwise_and", &),
      OPB("bitwise_or", |),
      OPB("bitwise_xor", ^),
      OPB("left_shift", <<),
      OPB("right_shift", >>),
      B("arctan2", kiln::arctan2),
      B("hypot", kiln::hypot),
      B("maximum", kiln::maximum),
      B("minimum", kiln::minimum),
      B("fmax", kiln::fmax),
      B("fmin", kiln::fmin),
      {"where",
       [](const ndarray& a, const ndarray* b, int w) -> expr {
         const auto c = meta({3}, bool_);
         if (b) return kiln::where(c, a, *b);
         if (w == 0) return kiln::where(c, a, 1);
         if (w == 1) return kiln::where(c, a, 1.0);
         return kiln::where(c, a, std::complex<double>(0, 1));
       }},
      {"clip",
       [](const ndarray& a, const ndarray* b, int w) -> expr {
         if (b) return kiln::clip(a, *b, *b);
         if (w == 0) return kiln::clip(a, 1, 1);
         if (w == 1) return kiln::clip(a, 1.0, 1.0);
         return kiln::clip(a, std::complex<double>(0, 1), std::complex<double>(0, 1));
       }},
  };
  return v;
}

std::map<std::string, std::string> golden() {
  std::ifstream in(KILN_TEST_SOURCE_DIR "/ops/golden/op_types.txt");
  REQUIRE(in.good());
  std::map<std::string, std::string> m;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto cut = line.rfind(' ');
    m[line.substr(0, cut)] = line.substr(cut + 1);
  }
  return m;
}

// NumPy has no bfloat16; ml_dtypes' bfloat16 ignores NEP 50 for weak floats (bfloat16 * 2.5
// is float32 there). kiln treats bfloat16 exactly as float16 (a float of the same rank; mixed
// with float16 it is float32), so its expected types are NumPy's float16 rows, renamed.
std::string expected(const std::map<std::string, std::string>& g, const std::string& op, dtype a,
                     const std::string& b) {
  const bool mixed = (a == bfloat16 && b == "float16") || (a == float16 && b == "bfloat16");
  if (mixed) return g.at(op + " float32 float32");
  const bool bf = a == bfloat16 || b == "bfloat16";
  const std::string a2 = a == bfloat16 ? "float16" : std::string(a.name());
  const std::string b2 = b == "bfloat16" ? "float16" : b;
  std::string r = g.at(op + " " + a2 + (b2.empty() ? "" : " " + b2));
  if (bf && r == "float16") r = "bfloat16";
  return r;
}

std::string got(const std::function<expr()>& f) {
  try {
    return std::string(f().dtype().name());
  } catch (const TypeError&) {
    return "TypeError";
  }
}

}  // namespace

TEST_CASE("every unary operator and function has NumPy 2's result type for every dtype", "[ops]") {
  const auto g = golden();
  for (const auto& [name, op] : unary_ops()) {
    const auto& fn = op;  // clang 14 cannot capture a structured binding in a lambda
    for (dtype a : kAllDtypes) {
      INFO(name << " " << a.name());
      CHECK(got([&] { return fn(meta({3}, a)); }) == expected(g, name, a, ""));
    }
  }
}

TEST_CASE(
    "every binary operator and function has NumPy 2's result type for every dtype pair "
    "and weak scalar",
    "[ops]") {
  const auto g = golden();
  const char* weak[] = {"weak_int", "weak_float", "weak_complex"};
  for (const auto& [name, op] : binary_ops()) {
    const auto& fn = op;  // clang 14 cannot capture a structured binding in a lambda
    for (dtype a : kAllDtypes) {
      const auto x = meta({3}, a);
      for (dtype b : kAllDtypes) {
        INFO(name << " " << a.name() << " " << b.name());
        const auto y = meta({3}, b);
        CHECK(got([&] { return fn(x, &y, 0); }) == expected(g, name, a, std::string(b.name())));
      }
      for (int w = 0; w < 3; ++w) {
        INFO(name << " " << a.name() << " " << weak[w]);
        CHECK(got([&] { return fn(x, nullptr, w); }) == expected(g, name, a, weak[w]));
      }
    }
  }
}

TEST_CASE("expressions raise shape and type errors at the operator, naming shapes and dtypes",
          "[ops]") {
  const auto x = meta({2, 3}), y = meta({4});
  KILN_CHECK_THROWS(x + y, ShapeError,
                    Catch::Contains("add: operands could not be broadcast together with shapes "
                                    "(2, 3) (4,)"));
  KILN_CHECK_THROWS(x & meta({2, 3}, int32), TypeError,
                    Catch::Contains("bitwise_and is not supported for float32, int32"));
  KILN_CHECK_THROWS(meta({3}, int8) + 1000, ValueError,
                    Catch::Contains("the integer 1000 is out of bounds for int8"));
  KILN_CHECK_THROWS(kiln::floor(meta({3}, complex64)), TypeError, Catch::Contains("floor"));
  CHECK((x + meta({3})).shape() == Shape{2, 3});
  CHECK(kiln::where(meta({2, 1}, bool_), meta({3}), 0).shape() == Shape{2, 3});
  auto e = kiln::sin(x) * 5 + x * x;
  CHECK(e.dtype() == float32);
  CHECK(e.node().nodes == 8);  // 4 ops, 4 leaves (x twice, 5)
  CHECK((meta({3}, int32) / meta({3}, int32)).dtype() == float64);
  CHECK((meta({3}, float16) * 2.5).dtype() == float16);
  CHECK(expr(x).astype(int16).dtype() == int16);
  CHECK((x > 0).astype(float64).dtype() == float64);
}

TEST_CASE(
    "expression keys are structural; scalar values share a key, dtypes and leaf identity "
    "do not",
    "[ops]") {
  const auto x = meta({3}), y = meta({3}), x64 = meta({3}, float64);
  CHECK(expression_key(x * 5) == expression_key(x * 6));
  CHECK(expression_key(x * 5) == expression_key(y * 5));  // another array, same structure
  CHECK(expression_key(x * 5) == expression_key(meta({7, 9}) * 5));  // shape: the spec's part
  CHECK_FALSE(expression_key(x * 5) == expression_key(x * 5.0f + 0));
  CHECK_FALSE(expression_key(x * 5) == expression_key(x64 * 5));
  CHECK_FALSE(expression_key(x * 5) == expression_key(x * y));
  CHECK_FALSE(expression_key(x * x) == expression_key(x * y));  // an input used twice is one leaf
  CHECK_FALSE(expression_key(x + y) == expression_key(x - y));
  CHECK(aot::expression_leaves(x * x + x).size() == 1);
  CHECK(aot::expression_leaves(x * 2 + y * 3).size() == 4);
  // The same structure finds the same generated kernel (no new source).
  CHECK(&aot::expression_kernel(kiln::sin(x) * 5 + y * y) ==
        &aot::expression_kernel(kiln::sin(y) * 7 + x * x));
  // Layout and index width are the kernel spec's: another spec, another loaded-kernel key.
  const auto& k = aot::expression_kernel(x * y);
  const std::vector<dtype> dts{float32, float32};
  const auto contiguous = k.make_spec(dts, {.vector_width = 4});
  const auto strided = k.make_spec(dts, {.layout = codegen::Layout::strided, .ndim = 2});
  const auto wide = k.make_spec(dts, {.index_bits = 64, .vector_width = 4});
  CHECK(k.source(contiguous) != k.source(strided));
  CHECK(k.source(contiguous) != k.source(wide));
}

// Nodes come from a per-thread cache and type answers from a per-thread memo: trees built on
// several threads, some dropped on another thread than their own, keep their types and keys.
TEST_CASE("expressions built on several threads and dropped on others keep types and keys",
          "[ops]") {
  const std::vector<dtype> types{bool_,   int8,    uint16,  int32,    int64,
                                 float16, float32, float64, complex64};
  std::vector<ndarray> arrays;
  for (dtype t : types) arrays.push_back(meta({4, 3}, t));
  // One thread's answers first: the reference.
  auto describe = [&](std::vector<expr>* keep) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < arrays.size(); ++i)
      for (std::size_t j = 0; j < arrays.size(); ++j) {
        const expr e = kiln::sin(arrays[i]) * 5 + arrays[j] * arrays[j] - 1;
        out.push_back(fmt::format("{} {}", e.dtype(), expression_key(e).hex()));
        if (keep) keep->push_back(e);
      }
    return out;
  };
  const auto reference = describe(nullptr);
  std::vector<std::vector<std::string>> got(4);
  std::vector<std::vector<expr>> kept(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) got[t] = describe(round == 0 ? &kept[t] : nullptr);
    });
  for (auto& th : threads) th.join();
  for (const auto& g : got) CHECK(g == reference);
  // The threads are gone; their trees are dropped here, and built again from their nodes' memory.
  for (auto& k : kept) {
    REQUIRE(k.size() == reference.size());
    CHECK(fmt::format("{} {}", k[5].dtype(), expression_key(k[5]).hex()) == reference[5]);
    k.clear();
  }
  CHECK(describe(nullptr) == reference);
}

TEST_CASE("the reduction hook gives the map expression over named parameters", "[ops]") {
  const auto x = meta({3}), y = meta({3}, float64);
  const auto m = expression_map(x * x + y);
  CHECK(m.in_params == "float32 in0, float64 in1");
  CHECK(m.code.find("in0") != std::string::npos);
  CHECK(m.code.find("in1") != std::string::npos);
  CHECK(m.helpers.empty());
  CHECK_FALSE(expression_map(kiln::maximum(x, y)).helpers.empty());
}

namespace {

// Every op valid for x's dtype, cast to one dtype and summed, 20 ops per kernel (one
// expression this size stays under the split limit).
std::vector<expr> all_ops(const ndarray& x, const ndarray& y) {
  const dtype acc = x.dtype().is_complex() ? complex128 : float64;
  std::vector<expr> out;
  int in_last = 0;
  auto add = [&](const std::function<expr()>& f) {
    try {
      auto e = f().astype(acc);
      if (out.empty() || in_last == 20) {
        out.push_back(e);
        in_last = 1;
      } else {
        out.back() = out.back() + e;
        ++in_last;
      }
    } catch (const TypeError&) {
    }
  };
  // Not structured bindings: clang 14 cannot capture those in a lambda.
  for (const auto& op : unary_ops()) add([&] { return op.second(x); });
  for (const auto& op : binary_ops()) add([&] { return op.second(x, &y, 0); });
  for (const auto& op : binary_ops()) add([&] { return op.second(x, nullptr, 1); });
  add([&] { return expr(x).astype(int16); });
  return out;
}

}  // namespace

TEST_CASE("every operator and function compiles with NVRTC for sm_90 in every dtype class",
          "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  for (dtype t :
       {bool_, int8, uint32, int64, float16, bfloat16, float32, float64, complex64, complex128}) {
    INFO(t.name());
    const auto x = meta({3}, t), y = meta({3}, t);
    int ops = 0;
    for (const expr& e : all_ops(x, y)) {
      ops += 1;
      const auto& k = aot::expression_kernel(e);
      std::vector<dtype> dts;
      for (int j = 0; j < k.nin(); ++j) dts.push_back(k.definition().params[std::size_t(j)].fixed);
      CHECK_FALSE(k.compile_for(k.make_spec(dts), 90).cubin.empty());
    }
    CHECK(ops >= 2);
  }
  // Weak scalars are kernel parameters of the loop dtype.
  const auto x = meta({3}, float16);
  const auto& k = aot::expression_kernel(x * 2.5 + 1);
  CHECK(k.definition().params[1].fixed == float16);
}

TEST_CASE("very large expressions split into parts that fit one kernel each", "[ops]") {
  const auto x = meta({3});
  expr e = x;
  for (int k = 0; k < 50; ++k) e = e * 1.5f + x;
  CHECK(e.node().nodes > 190);
  // Splitting evaluates parts: without a GPU that is where it stops, after every check.
  CHECK_THROWS(e.eval());
}
