// compile_cached in one process: disk hits and misses, damaged entries recompiled over,
// refused folders, in-memory mode, saved sources, KILN_DISALLOW_COMPILE, threads.
#include "kiln/cache/compile_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "cache_test_support.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/disk_cache.hpp"
#include "kiln/cache/entry_format.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln::cache;
using namespace kiln::cache::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
struct Counts {
  std::uint64_t hits, misses, compiles, bad;
  static Counts now() {
    auto& s = stats();
    return {s.disk_hits.load(), s.disk_misses.load(), s.nvrtc_compiles.load(),
            s.bad_entries.load()};
  }
  Counts operator-(const Counts& o) const {
    return {hits - o.hits, misses - o.misses, compiles - o.compiles, bad - o.bad};
  }
};
std::size_t files_under(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; it != end; it.increment(ec))
    n += it->is_regular_file();
  return n;
}
}  // namespace

TEST_CASE("compile_cached compiles on a miss and loads from disk on the next call", "[cache]") {
  TempDir tmp;
  const auto cfg = disk_config(tmp.path());
  const auto req = tiny_request("11");
  const auto c0 = Counts::now();
  const Binary first = compile_cached(req, cfg);
  auto d = Counts::now() - c0;
  CHECK(d.compiles == 1);
  CHECK(d.misses == 1);
  CHECK(d.hits == 0);
  const fs::path entry = DiskCache(tmp.path()).entry_path(cache_key(req));
  REQUIRE(fs::exists(entry));
  CHECK_FALSE(fs::exists(DiskCache(tmp.path()).source_path(cache_key(req))));

  const auto c1 = Counts::now();
  const Binary second = compile_cached(req, cfg);
  d = Counts::now() - c1;
  CHECK(d.compiles == 0);
  CHECK(d.hits == 1);
  CHECK(second == first);
}

TEST_CASE("compile_cached recompiles and rewrites a corrupt, truncated or foreign entry",
          "[cache]") {
  TempDir tmp;
  const auto cfg = disk_config(tmp.path());
  const auto req = tiny_request("12");
  const Binary good = compile_cached(req, cfg);
  const fs::path entry = DiskCache(tmp.path()).entry_path(cache_key(req));
  const std::string good_bytes = read_file(entry);

  std::string flipped = good_bytes;
  flipped[kEntryHeaderSize + 100] ^= 0x01;  // a byte inside the cubin
  std::string wrong_magic = good_bytes;
  wrong_magic[3] = 'X';
  const std::string truncated = good_bytes.substr(0, good_bytes.size() - 7);
  const std::string header_only = good_bytes.substr(0, 30);

  for (const auto& [what, bytes] :
       std::vector<std::pair<std::string, std::string>>{{"flipped payload byte", flipped},
                                                        {"wrong magic", wrong_magic},
                                                        {"truncated payload", truncated},
                                                        {"truncated header", header_only}}) {
    INFO(what);
    write_file(entry, bytes);
    LogCapture log;
    const auto c = Counts::now();
    const Binary again = compile_cached(req, cfg);
    const auto d = Counts::now() - c;
    CHECK(d.bad == 1);
    CHECK(d.compiles == 1);
    CHECK(again == good);
    CHECK(log.contains("ignoring kernel cache entry"));
    CHECK(read_file(entry) == good_bytes);  // rewritten with a valid entry
  }
}

TEST_CASE("compile_cached still works when the cache folder is writable by others", "[cache]") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "world-writable";
  fs::create_directory(dir);
  ::chmod(dir.c_str(), 0777);
  LogCapture log;
  const auto c = Counts::now();
  const Binary bin = compile_cached(tiny_request("13"), disk_config(dir));
  CHECK(bin.cubin.substr(0, 4) ==
        "\x7f"
        "ELF");
  CHECK((Counts::now() - c).compiles == 1);
  CHECK(fs::is_empty(dir));
  CHECK(log.contains("not using kernel cache folder"));
}

TEST_CASE("compile_cached in memory only reads and writes no files", "[cache]") {
  TempDir tmp;
  auto cfg = disk_config(tmp.path() / "kiln");
  cfg.in_memory_only = true;
  const auto c = Counts::now();
  compile_cached(tiny_request("14"), cfg);
  compile_cached(tiny_request("14"), cfg);
  const auto d = Counts::now() - c;
  CHECK(d.compiles == 2);
  CHECK(d.hits + d.misses == 0);
  CHECK_FALSE(fs::exists(tmp.path() / "kiln"));
}

TEST_CASE("compile_cached in memory only is chosen by KILN_CACHE_IN_MEMORY=1", "[cache]") {
  TempDir tmp;
  ScopedEnv dir("KILN_CACHE_DIR", (tmp.path() / "kiln").string());
  ScopedEnv mem("KILN_CACHE_IN_MEMORY", "1");
  compile_cached(tiny_request("15"));
  CHECK_FALSE(fs::exists(tmp.path() / "kiln"));
}

TEST_CASE("compile_cached keeps the .cu beside the binary with KILN_CACHE_SAVE_SOURCE=1",
          "[cache]") {
  TempDir tmp;
  ScopedEnv dir("KILN_CACHE_DIR", tmp.path().string());
  ScopedEnv src("KILN_CACHE_SAVE_SOURCE", "1");
  ScopedEnv mem("KILN_CACHE_IN_MEMORY", std::nullopt);
  const auto req = tiny_request("16");
  compile_cached(req);
  const DiskCache disk(tmp.path());
  CHECK(fs::exists(disk.entry_path(cache_key(req))));
  CHECK(read_file(disk.source_path(cache_key(req))) == req.source);
}

TEST_CASE("compile_cached with KILN_DISALLOW_COMPILE=1 throws on a miss and loads a hit",
          "[cache]") {
  TempDir tmp;
  ScopedEnv dir("KILN_CACHE_DIR", tmp.path().string());
  ScopedEnv mem("KILN_CACHE_IN_MEMORY", std::nullopt);
  auto req = tiny_request("17");
  req.kernel_name = "precompiled_kernel";
  {
    ScopedEnv dis("KILN_DISALLOW_COMPILE", "1");
    const auto c = Counts::now();
    try {
      compile_cached(req);
      FAIL("expected kiln::CacheMissError");
    } catch (const kiln::CacheMissError& e) {
      CHECK_THAT(e.what(), Contains("precompiled_kernel"));
      CHECK_THAT(e.what(), Contains("not in the kernel cache at " + tmp.path().string()));
      CHECK_THAT(e.what(), Contains("KILN_DISALLOW_COMPILE"));
    }
    CHECK((Counts::now() - c).compiles == 0);
  }
  compile_cached(req);  // precompile
  ScopedEnv dis("KILN_DISALLOW_COMPILE", "1");
  const auto c = Counts::now();
  CHECK(compile_cached(req).cubin.size() > 64);
  CHECK((Counts::now() - c).hits == 1);
  auto in_memory = CacheConfig::from_env();
  in_memory.in_memory_only = true;
  CHECK_THROWS_AS(compile_cached(req, in_memory), kiln::CacheMissError);
}

TEST_CASE("compile_cached propagates CompileError and caches nothing", "[cache]") {
  TempDir tmp;
  CompileRequest req;
  req.kernel_name = "bad";
  req.source = "extern \"C\" __global__ void bad() { undeclared_thing(); }\n";
  CHECK_THROWS_AS(compile_cached(req, disk_config(tmp.path())), kiln::CompileError);
  CHECK(fs::exists(tmp.path()));
  // Only the lock file may remain; no entry.
  CHECK_FALSE(fs::exists(DiskCache(tmp.path()).entry_path(cache_key(req))));
}

TEST_CASE("compile_cached from many threads compiles a missing kernel once", "[cache]") {
  TempDir tmp;
  const auto cfg = disk_config(tmp.path());
  const auto req = tiny_request("18");
  const auto c = Counts::now();
  std::vector<Binary> results(8);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&] { r = compile_cached(req, cfg); });
  for (auto& t : threads) t.join();
  CHECK((Counts::now() - c).compiles == 1);
  for (const auto& r : results) CHECK(r == results[0]);
  CHECK(files_under(tmp.path()) == 2);  // the entry and its lock file
}

TEST_CASE("compile_cached in memory only serves concurrent threads", "[cache]") {
  auto cfg = CacheConfig{};
  cfg.in_memory_only = true;
  const auto req = tiny_request("19");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&] { ok += compile_cached(req, cfg).cubin.size() > 64; });
  for (auto& t : threads) t.join();
  CHECK(ok == 6);
}

TEST_CASE("compile_cached refuses a FIFO at the entry, lock or fan-out path without blocking",
          "[cache]") {
  TempDir tmp;
  const auto cfg = disk_config(tmp.path());
  const auto req = tiny_request("15");
  DiskCache disk(tmp.path());
  const Key key = cache_key(req);
  const fs::path fanout = disk.entry_path(key).parent_path();
  fs::path fifo;
  SECTION("the .kbin") { fifo = disk.entry_path(key); }
  SECTION("the .lock") { fifo = disk.lock_path(key); }
  SECTION("the fan-out folder") { fifo = fanout; }
  if (fifo != fanout) REQUIRE(disk.prepare_folder(key));
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);

  LogCapture log;
  const auto before = Counts::now();
  // In a thread with a deadline: a regression must fail this test, not hang the suite.
  auto result = std::async(std::launch::async, [&] { return compile_cached(req, cfg); });
  if (result.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    // Unblock a reader stuck in open() so the thread (and the test) can finish.
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
    FAIL("compile_cached blocked on the FIFO at " << fifo);
  }
  CHECK(result.get().cubin.size() > 64);
  const auto d = Counts::now() - before;
  CHECK(d.compiles == 1);
  CHECK(d.bad >= 1);
  CHECK(log.contains("FIFO"));
  if (fifo == disk.entry_path(key)) {
    // The new entry was renamed over the FIFO: the next call is a disk hit.
    CHECK(fs::is_regular_file(disk.entry_path(key)));
    CHECK(disk.load(key));
  }
}
