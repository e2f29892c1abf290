// The stream-ordered memory pool: use, reuse, release, and out-of-memory.
#include <catch2/catch.hpp>

#include <thread>

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
