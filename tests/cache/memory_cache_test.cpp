// MemoryCache: lookups, stable addresses, make() once per key under concurrency,
// retry after a throwing make(), different keys created in parallel.
#include "kiln/cache/memory_cache.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kiln/cache/cache_key.hpp"

using namespace kiln::cache;

TEST_CASE("memory cache finds what get_or_create made, at a stable address", "[cache]") {
  MemoryCache<std::string> cache;
  const Key a{1, 2}, b{3, 4};
  CHECK(cache.find(a) == nullptr);
  std::string& va = cache.get_or_create(a, [] { return std::string("alpha"); });
  CHECK(va == "alpha");
  CHECK(cache.find(a) == &va);
  for (std::uint64_t i = 0; i < 1000; ++i)  // rehashing must not move values
    cache.get_or_create(Key{i, 100}, [&] { return std::to_string(i); });
  CHECK(cache.find(a) == &va);
  CHECK(cache.get_or_create(a, []() -> std::string {
    FAIL("make() ran twice");
    return {};
  }) == "alpha");
  CHECK(cache.find(b) == nullptr);
  CHECK(cache.size() == 1001);
  cache.clear();
  CHECK(cache.size() == 0);
  CHECK(cache.find(a) == nullptr);
}

TEST_CASE("memory cache runs make once per key with many concurrent callers", "[cache]") {
  MemoryCache<int> cache;
  std::atomic<int> makes{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  std::vector<int*> seen(16);
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      seen[t] = &cache.get_or_create(Key{7, 7}, [&] {
        ++makes;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return 42;
      });
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  CHECK(makes == 1);
  for (int* p : seen) CHECK(p == seen[0]);
  CHECK(*seen[0] == 42);
}

TEST_CASE("memory cache creates different keys in parallel", "[cache]") {
  MemoryCache<int> cache;
  std::atomic<int> inside{0}, max_inside{0};
  auto make = [&] {
    const int now = ++inside;
    int m = max_inside.load();
    while (now > m && !max_inside.compare_exchange_weak(m, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    --inside;
    return 1;
  };
  std::thread t1([&] { cache.get_or_create(Key{1, 0}, make); });
  std::thread t2([&] { cache.get_or_create(Key{2, 0}, make); });
  t1.join();
  t2.join();
  CHECK(max_inside == 2);
  CHECK(cache.size() == 2);
}

TEST_CASE("memory cache retries a key whose make threw", "[cache]") {
  MemoryCache<int> cache;
  CHECK_THROWS_AS(cache.get_or_create(Key{9, 9}, []() -> int { throw std::runtime_error("no"); }),
                  std::runtime_error);
  CHECK(cache.find(Key{9, 9}) == nullptr);
  CHECK(cache.size() == 0);
  CHECK(cache.get_or_create(Key{9, 9}, [] { return 5; }) == 5);
  CHECK(cache.size() == 1);
}
