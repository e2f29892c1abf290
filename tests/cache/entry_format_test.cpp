// The on-disk entry format: exact bytes (golden file), round trip, and every check that
// makes a damaged file be ignored instead of used.
#include "kiln/cache/entry_format.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

#include "cache_test_support.hpp"

using namespace kiln::cache;
using kiln::cache::testing::read_file;

namespace {
const Key kKey{0x0123456789abcdefull, 0xfedcba9876543210ull};
Binary sample() {
  return Binary{std::string("\x7f"
                            "ELF fake cubin\0\x01\x02",
                            18),
                {"_Z1fIfEvPT_", "k"}};
}
std::filesystem::path golden_dir() {
#ifdef KILN_TEST_SOURCE_DIR
  return std::filesystem::path(KILN_TEST_SOURCE_DIR) / "cache" / "golden";
#else
  return std::filesystem::path(__FILE__).parent_path() / "golden";
#endif
}
}  // namespace

TEST_CASE("cache entry bytes match the checked-in v1 golden file", "[cache]") {
  // tests/cache/golden/entry_v1.kbin was written by an independent script from the layout in
  // entry_format.hpp. A format change must fail here: bump kCacheFormatVersion and add a new
  // golden file instead of editing this one.
  const auto path = golden_dir() / "entry_v1.kbin";
  REQUIRE(std::filesystem::exists(path));
  const std::string golden = read_file(path);
  const std::string bytes = encode_entry(kKey, sample());
  CHECK(kCacheFormatVersion == 1);
  REQUIRE(bytes.size() == golden.size());
  CHECK(bytes.substr(0, kEntryHeaderSize) == golden.substr(0, kEntryHeaderSize));
  CHECK(bytes == golden);
  auto back = decode_entry(golden, kKey);
  REQUIRE(back);
  CHECK(*back == sample());
}

TEST_CASE("cache entry round-trips empty and large binaries", "[cache]") {
  for (const Binary& b : {Binary{}, Binary{std::string(1 << 20, '\xab'), {}},
                          Binary{"x", {"", "a", std::string(300, 'n')}}}) {
    std::string why;
    auto back = decode_entry(encode_entry(kKey, b), kKey, &why);
    INFO(why);
    REQUIRE(back);
    CHECK(*back == b);
  }
}

TEST_CASE("cache entry decoding rejects every kind of damage", "[cache]") {
  const std::string good = encode_entry(kKey, sample());
  std::string why;
  auto rejects = [&](const std::string& bytes, const Key& key, const std::string& reason) {
    why.clear();
    const bool rejected = !decode_entry(bytes, key, &why).has_value();
    INFO("expected: " << reason << ", got: " << why);
    CHECK(rejected);
    CHECK(why.find(reason) != std::string::npos);
  };
  rejects("", kKey, "shorter than the header");
  rejects(good.substr(0, 20), kKey, "shorter than the header");
  rejects(good.substr(0, good.size() - 1), kKey, "truncated");
  rejects(good + "x", kKey, "trailing bytes");
  auto m = good;
  m[0] = 'X';
  rejects(m, kKey, "magic");
  auto v = good;
  v[8] = 2;
  rejects(v, kKey, "version");
  auto h = good;
  h[12] = 64;
  rejects(h, kKey, "header size");
  rejects(good, Key{kKey.hi, kKey.lo + 1}, "key");
  for (std::size_t i = kEntryHeaderSize; i < good.size(); ++i) {
    auto p = good;
    p[i] = static_cast<char>(p[i] ^ 0x10);
    rejects(p, kKey, "checksum");
  }
  auto c = good;
  c[40] ^= 1;
  rejects(c, kKey, "checksum");
}
