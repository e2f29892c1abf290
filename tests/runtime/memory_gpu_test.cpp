// The stream-ordered memory pool: use, reuse, release, and out-of-memory.
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using kiln::test::random_vector;

TEST_CASE("the memory pool reports use, reuses freed blocks and releases them", "[runtime][gpu]") {
  auto& pool = get_default_memory_pool();
  synchronize_device();
  pool.free_all_blocks();
  std::size_t used0 = pool.used_bytes();
  {
    auto a = empty({1 << 20}, float32);  // 4 MiB
    CHECK(pool.used_bytes() >= used0 + (4u << 20));
    CHECK(pool.total_bytes() >= pool.used_bytes());
  }
  synchronize_device();
  CHECK(pool.used_bytes() == used0);
  std::size_t held = pool.total_bytes();
  CHECK(held >= (4u << 20));  // kept for reuse
  {
    auto b = empty({1 << 20}, float32);
    CHECK(pool.total_bytes() == held);  // served from the cached block
  }
  synchronize_device();
  pool.free_all_blocks();
  CHECK(pool.total_bytes() < held);
}

TEST_CASE("small blocks freed on a stream come back on that stream only, and stay correct",
          "[runtime][gpu]") {
  auto& pool = get_default_memory_pool();
  synchronize_device();
  pool.free_all_blocks();
  const std::size_t used0 = pool.used_bytes();
  Stream a, b;
  void* first = nullptr;
  {
    StreamGuard on(a);
    auto x = empty({100}, float32);  // 400 bytes: the 512-byte class
    first = x.data();
    CHECK(pool.used_bytes() >= used0 + 400);
  }
  CHECK(pool.used_bytes() == used0);  // a kept block is not live
  {
    StreamGuard on(b);
    auto y = empty({128}, float32);  // same class, another stream: not that block
    CHECK(y.data() != first);
  }
  {
    StreamGuard on(a);
    auto z = empty({128}, float32);  // same class, same stream: that block, no driver call
    CHECK(z.data() == first);
  }
  // Blocks handed around two streams while kernels use them: every value stays right.
  const auto h = random_vector<float>(300);
  std::vector<ndarray> kept;
  for (int i = 0; i < 200; ++i) {
    StreamGuard on(i % 2 ? a : b);
    ndarray x = asarray(h);
    ndarray y = x * float(i);
    if (i % 10 == 3) kept.push_back(y);
  }
  synchronize_device();
  std::size_t bad = 0;
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const auto got = kept[k].get<float>();
    const float scale = float(k * 10 + 3);
    for (std::size_t j = 0; j < h.size(); ++j)
      if (got[j] != h[j] * scale) ++bad;
  }
  CHECK(bad == 0);
  kept.clear();
  synchronize_device();
  CHECK(pool.used_bytes() == used0);
  pool.free_all_blocks();
  CHECK(pool.used_bytes() == used0);
}

TEST_CASE("asking for far more than the card has raises OutOfMemoryError", "[runtime][gpu]") {
  std::int64_t huge = std::int64_t(device_properties(current_device()).total_memory) * 4;
  try {
    auto a = empty({huge}, uint8);
    FAIL("allocation of " << huge << " bytes succeeded");
  } catch (const OutOfMemoryError& e) {
    CHECK(e.requested_bytes() == std::size_t(huge));
    CHECK_THAT(e.what(), Catch::Matchers::Contains(std::to_string(huge)));
  }
  auto ok = empty({1024}, uint8);  // the pool still works afterwards
  CHECK(ok.size() == 1024);
}
