// The automatic size limit (KILN_CACHE_MAX_SIZE): a write that takes the cache past it evicts
// the least recently used entries, down to 90% of it; entries a program loads count as used.
#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <ctime>

#include "cache_test_support.hpp"
#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/disk_cache.hpp"

using namespace kiln::cache;
using namespace kiln::cache::testing;
namespace fs = std::filesystem;

namespace {
void age(const fs::path& p, std::int64_t seconds) {
  const timespec t[2] = {{std::time(nullptr) - seconds, 0}, {std::time(nullptr) - seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), t, 0) == 0);
}
}  // namespace

TEST_CASE("a write past the size limit evicts the least recently used entries", "[cache]") {
  TempDir tmp;
  CacheConfig cfg = disk_config(tmp.path());
  const DiskCache disk(tmp.path());
  std::vector<CompileRequest> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back(tiny_request(std::to_string(9300 + i)));
  for (const auto& r : reqs) compile_cached(r, cfg);
  const std::uint64_t one = fs::file_size(disk.entry_path(cache_key(reqs[0])));
  // Oldest first: 0, 1, 2, 3; then a program loads 0, which makes it the most recent.
  for (int i = 0; i < 4; ++i) age(disk.entry_path(cache_key(reqs[std::size_t(i)])), 1000 - 100 * i);
  REQUIRE(disk.load(cache_key(reqs[0])));

  // Room for three and a half: the fifth write passes it, and eviction goes down to 90%.
  cfg.max_bytes = 3 * one + one / 2;
  const auto fifth = tiny_request("9304");
  compile_cached(fifth, cfg);
  const Inventory inv = scan_cache(tmp.path());
  CHECK(inv.entry_bytes() <= *cfg.max_bytes / 10 * 9);
  CHECK(disk.load(cache_key(fifth)));                            // just written: kept
  CHECK(fs::exists(disk.entry_path(cache_key(reqs[0]))));        // used last: kept
  CHECK(fs::exists(disk.entry_path(cache_key(reqs[3]))));        // next most recent: kept
  CHECK_FALSE(fs::exists(disk.entry_path(cache_key(reqs[1]))));  // least recently used: gone
  CHECK_FALSE(fs::exists(disk.entry_path(cache_key(reqs[2]))));
  CHECK(inv.valid_entries() == 3);
}

TEST_CASE("the size limit is read from KILN_CACHE_MAX_SIZE", "[cache]") {
  LogCapture log;
  {
    ScopedEnv max("KILN_CACHE_MAX_SIZE", "2G");
    CHECK(CacheConfig::from_env().max_bytes == std::uint64_t{2} << 30);
  }
  {
    ScopedEnv max("KILN_CACHE_MAX_SIZE", std::nullopt);
    CHECK_FALSE(CacheConfig::from_env().max_bytes);
  }
  ScopedEnv max("KILN_CACHE_MAX_SIZE", "nan");
  CHECK_FALSE(CacheConfig::from_env().max_bytes);
  CHECK(log.contains("KILN_CACHE_MAX_SIZE"));
}
