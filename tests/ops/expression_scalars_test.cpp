// C++ integer scalars in expressions as NumPy 2 treats Python ints (NEP 50 as shipped): the
// int is converted to the dtype of the loop the operator resolves to, and only one that does
// not fit that dtype is refused. Checked against NumPy's own outcomes for ints beyond every
// dtype's range (the `int:` lines of tests/ops/golden/op_types.txt): the result dtype, or the
// error NumPy raises, with a message that names NumPy's error only where NumPy raises it.
// The values are checked on a GPU by expression_scalars_gpu_test.cpp.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "kiln/kiln.hpp"
#include "support/scalar_ops.hpp"
#include "support/test_support.hpp"

using namespace kiln;

namespace {

ndarray meta(const Shape& s, dtype t) {
  static std::int64_t next = 0;
  next += 256;
  return ndarray(nullptr, s, c_strides(s, std::int64_t(t.itemsize())), next, t);
}

struct golden_line {
  std::vector<std::string> words;  // op, operands
  std::string want;
};

std::vector<golden_line> out_of_range_lines() {
  std::ifstream in(KILN_TEST_SOURCE_DIR "/ops/golden/op_types.txt");
  REQUIRE(in.good());
  std::vector<golden_line> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.find(" int:") == std::string::npos) continue;
    std::istringstream s(line);
    golden_line g;
    for (std::string w; s >> w;) g.words.push_back(w);
    g.want = g.words.back();
    g.words.pop_back();
    out.push_back(g);
  }
  return out;
}

bool is_int(const std::string& w) { return w.rfind("int:", 0) == 0; }

// What kiln does, in the golden table's words: the dtype, or the error NumPy's would be.
std::string outcome(const std::function<expr()>& build) {
  try {
    return std::string(build().dtype().name());
  } catch (const TypeError&) {
    return "TypeError";
  } catch (const ValueError& e) {
    const std::string m = e.what();
    if (m.find("raises OverflowError") != std::string::npos) return "OverflowError";
    if (m.find("NumPy raises ValueError") != std::string::npos) return "ValueError";
    return "ValueError naming no NumPy error: " + m;
  }
}

std::string kiln_outcome(const golden_line& g) {
  const auto& w = g.words;
  const std::string& op = w[0];
  if (op == "clip") {
    const auto a = meta({3}, dtype::from_name(w[1]));
    return outcome(
        [&] { return test::clip_ints(a, test::parse_int_arg(w[2]), test::parse_int_arg(w[3])); });
  }
  const bool left = is_int(w[1]);
  const auto a = meta({3}, dtype::from_name(left ? w[2] : w[1]));
  const auto v = test::parse_int_arg(left ? w[1] : w[2]);
  if (op == "where") {
    const auto c = meta({3}, bool_);
    return outcome([&] { return left ? test::where_left(c, v, a) : test::where_right(c, a, v); });
  }
  const auto& f = test::scalar_ops().at(op);
  return outcome([&] { return left ? f.left(v, a) : f.right(a, v); });
}

}  // namespace

TEST_CASE(
    "ints beyond the array's range give NumPy 2's result dtype or error for every operator "
    "and function",
    "[ops]") {
  const auto lines = out_of_range_lines();
  REQUIRE(lines.size() > 8000);
  int checked = 0;
  for (const auto& g : lines) {
    std::string key;
    for (const auto& w : g.words) key += w + " ";
    INFO(key);
    CHECK(kiln_outcome(g) == g.want);
    ++checked;
  }
  CHECK(checked == int(lines.size()));
}

TEST_CASE("the issue's scalar cases give NumPy 2's dtypes and errors", "[ops]") {
  const auto u8 = meta({4}, uint8), u16 = meta({4}, uint16), u64 = meta({4}, uint64);
  const auto i8 = meta({4}, int8), f16 = meta({4}, float16), b = meta({4}, bool_);
  // Comparisons with any int are answered (bool), whatever the array's dtype.
  CHECK((u8 < -1).dtype() == bool_);
  CHECK((u16 == -3).dtype() == bool_);
  CHECK((u64 >= -2).dtype() == bool_);
  CHECK((i8 != 300).dtype() == bool_);
  // True division and the float functions convert the int to their float loop.
  CHECK((-3 / u8).dtype() == float64);
  CHECK((u8 / -2).dtype() == float64);
  CHECK(kiln::arctan2(u8, -3).dtype() == float16);
  CHECK(kiln::hypot(u16, -2).dtype() == float32);
  CHECK(kiln::logical_and(-1, u8).dtype() == bool_);
  CHECK(kiln::where(b, u8, -1).dtype() == uint8);
  CHECK(kiln::clip(u8, -1, 300).dtype() == uint8);
  CHECK((f16 + 100000).dtype() == float16);  // inf, as NumPy (which warns)
  // Still errors, as NumPy's OverflowError, naming it.
  KILN_CHECK_THROWS(u8 + -1, ValueError,
                    Catch::Contains("add: the integer -1 is out of bounds for uint8") &&
                        Catch::Contains("NumPy raises OverflowError"));
  KILN_CHECK_THROWS(u8 + 300, ValueError, Catch::Contains("out of bounds for uint8"));
  KILN_CHECK_THROWS(kiln::maximum(u8, -1), ValueError, Catch::Contains("maximum"));
  KILN_CHECK_THROWS(kiln::clip(u8, 300, 400), ValueError,
                    Catch::Contains("maximum: the integer 300"));
  KILN_CHECK_THROWS(kiln::logical_and(u64, std::uint64_t(1) << 63), ValueError,
                    Catch::Contains("does not fit int64") && Catch::Contains("C long"));
  KILN_CHECK_THROWS(b < (std::uint64_t(1) << 63), ValueError,
                    Catch::Contains("out of bounds for int64"));
  KILN_CHECK_THROWS(kiln::power(i8, -1), ValueError, Catch::Contains("negative integer powers"));
  // No loop wins over the int's range: invert of float16 is a TypeError.
  KILN_CHECK_THROWS(~kiln::sin(u8 == -3), TypeError, Catch::Contains("invert"));
  KILN_CHECK_THROWS(f16 & 300, TypeError, Catch::Contains("bitwise_and"));
  // In place: the operator's rule, then NumPy's same_kind cast into the target.
  ndarray x = meta({0}, uint8);  // empty: defined without a buffer, so no device is needed
  KILN_CHECK_THROWS(x += -1, ValueError, Catch::Contains("NumPy raises OverflowError"));
  KILN_CHECK_THROWS(x /= -2, TypeError, Catch::Contains("same_kind"));
  KILN_CHECK_THROWS(x <<= 300, ValueError, Catch::Contains("left_shift"));
}

TEST_CASE("comparisons with an int beyond an integer array's range compare with the range's end",
          "[ops]") {
  const auto u8 = meta({4}, uint8), i64 = meta({4}, int64);
  struct Case {
    expr e;
    codegen::op_id op;  // the comparison against the bound with the same answer everywhere
    std::string bound;
  };
  using codegen::op_id;
  const Case cases[] = {
      {u8 < -1, op_id::less, "0"},            // never
      {u8 >= -1, op_id::greater_equal, "0"},  // always
      {u8 == 300, op_id::greater, "255"},     // never
      {u8 != 300, op_id::less_equal, "255"},  // always
      {-1 < u8, op_id::greater_equal, "0"},   // always
      {300 <= u8, op_id::greater, "255"},     // never
      {i64 > (std::uint64_t(1) << 63), op_id::greater, "9223372036854775807"},
      {i64 < (std::uint64_t(1) << 63), op_id::less_equal, "9223372036854775807"},
  };
  for (const auto& c : cases) {
    INFO(c.bound);
    REQUIRE(c.e.dtype() == bool_);
    CHECK(c.e.node().op == c.op);
    const auto& bound = *c.e.node().child[1];
    CHECK(bound.k == detail::expr_node::kind::scalar);
    CHECK(bound.value.str() == c.bound);
    CHECK(bound.type == c.e.node().child[0]->type);
  }
  // In range: the comparison as written, the int in the array's dtype.
  const expr e = u8 < 7;
  CHECK(e.node().op == codegen::op_id::less);
  CHECK(e.node().child[1]->type == uint8);
}

TEST_CASE("where converts its ints as a C cast and clip drops int bounds past the range", "[ops]") {
  const auto u8 = meta({4}, uint8), i8 = meta({4}, int8), c = meta({4}, bool_);
  CHECK(kiln::where(c, u8, -1).node().child[2]->value.str() == "255");
  CHECK(kiln::where(c, i8, 1000).node().child[2]->value.str() == "-24");
  CHECK(kiln::where(c, u8, std::uint64_t(18446744073709551615ull)).node().child[2]->value.str() ==
        "255");
  CHECK(kiln::clip(u8, -1, 300).node().op == codegen::op_id::positive);
  CHECK(kiln::clip(u8, -1, 3).node().op == codegen::op_id::minimum);
  CHECK(kiln::clip(u8, 1, 300).node().op == codegen::op_id::maximum);
  CHECK(kiln::clip(u8, 0, 255).node().op == codegen::op_id::positive);  // at the ends: no bound
  CHECK(kiln::clip(u8, 1, 3).node().op == codegen::op_id::minimum);
  CHECK(kiln::clip(meta({4}, bool_), -1, 300).dtype() == int64);  // bool arrays: no dropping
}

TEST_CASE("scalar helpers say whether an int fits a dtype and wrap it as a C cast", "[ops]") {
  CHECK(scalar(-1).fits(int8));
  CHECK_FALSE(scalar(-1).fits(uint64));
  CHECK(scalar(255).fits(uint8));
  CHECK_FALSE(scalar(256).fits(uint8));
  CHECK(scalar(std::uint64_t(1) << 63).fits(uint64));
  CHECK_FALSE(scalar(std::uint64_t(1) << 63).fits(int64));
  CHECK(scalar(std::int64_t(INT64_MIN)).fits(int64));
  CHECK(scalar(1e300).fits(int8));  // floats convert (truncating), never refused
  CHECK(scalar(-1).wrapped(uint8).str() == "255");
  CHECK(scalar(-129).wrapped(int8).str() == "127");
  CHECK(scalar(std::uint64_t(1) << 63).wrapped(int64).str() == "-9223372036854775808");
  CHECK(scalar(2.5).wrapped(int8).str() == "2.5");
}
