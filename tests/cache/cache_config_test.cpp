// CacheConfig::from_env: folder defaults and the KILN_CACHE_* / KILN_DISALLOW_COMPILE flags.
#include "kiln/cache/cache_config.hpp"

#include <catch2/catch.hpp>

#include "cache_test_support.hpp"

using namespace kiln::cache;
using kiln::cache::testing::ScopedEnv;

TEST_CASE("cache config reads folder and flags from the environment", "[cache]") {
  ScopedEnv dir("KILN_CACHE_DIR", "/some/cache");
  ScopedEnv mem("KILN_CACHE_IN_MEMORY", "1");
  ScopedEnv src("KILN_CACHE_SAVE_SOURCE", "true");
  ScopedEnv dis("KILN_DISALLOW_COMPILE", "ON");
  const auto cfg = CacheConfig::from_env();
  CHECK(cfg.dir == "/some/cache");
  CHECK(cfg.in_memory_only);
  CHECK(cfg.save_source);
  CHECK(cfg.disallow_compile);
}

TEST_CASE("cache config flags are off when unset or 0", "[cache]") {
  ScopedEnv mem("KILN_CACHE_IN_MEMORY", "0");
  ScopedEnv src("KILN_CACHE_SAVE_SOURCE", std::nullopt);
  ScopedEnv dis("KILN_DISALLOW_COMPILE", "");
  const auto cfg = CacheConfig::from_env();
  CHECK_FALSE(cfg.in_memory_only);
  CHECK_FALSE(cfg.save_source);
  CHECK_FALSE(cfg.disallow_compile);
}

TEST_CASE("cache folder defaults to XDG_CACHE_HOME/kiln, then ~/.cache/kiln", "[cache]") {
  ScopedEnv dir("KILN_CACHE_DIR", std::nullopt);
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg/cache");
    CHECK(CacheConfig::from_env().dir == "/xdg/cache/kiln");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    CHECK(CacheConfig::from_env().dir == "/home/someone/.cache/kiln");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    CHECK(CacheConfig::from_env().dir == "/home/someone/.cache/kiln");
    ScopedEnv empty_dir("KILN_CACHE_DIR", "");
    CHECK(CacheConfig::from_env().dir == "/home/someone/.cache/kiln");
  }
}

TEST_CASE("cache lock timeout is 30 s, read from KILN_CACHE_LOCK_TIMEOUT in seconds", "[cache]") {
  testing::LogCapture log;
  {
    ScopedEnv t("KILN_CACHE_LOCK_TIMEOUT", std::nullopt);
    CHECK(CacheConfig::from_env().lock_timeout_s == 30);
  }
  {
    ScopedEnv t("KILN_CACHE_LOCK_TIMEOUT", "1.5");
    CHECK(CacheConfig::from_env().lock_timeout_s == 1.5);
  }
  {
    ScopedEnv t("KILN_CACHE_LOCK_TIMEOUT", "0");
    CHECK(CacheConfig::from_env().lock_timeout_s == 0);
  }
  for (const char* bad : {"-1", "soon", "5s", "inf"}) {
    ScopedEnv t("KILN_CACHE_LOCK_TIMEOUT", bad);
    CHECK(CacheConfig::from_env().lock_timeout_s == 30);
    CHECK(log.contains(std::string("KILN_CACHE_LOCK_TIMEOUT='") + bad + "'"));
  }
}
