#include "kiln/cache/cache_config.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/cache/size_and_age.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::cache {
namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

std::filesystem::path home_dir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  // No HOME (daemons, some containers): ask the password database.
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_dir && *pw->pw_dir) return pw->pw_dir;
  return {};
}

}  // namespace

CacheConfig CacheConfig::from_env() {
  CacheConfig cfg;
  cfg.in_memory_only = env_flag("KILN_CACHE_IN_MEMORY");
  cfg.save_source = env_flag("KILN_CACHE_SAVE_SOURCE");
  cfg.disallow_compile = env_flag("KILN_DISALLOW_COMPILE");
  if (const char* t = std::getenv("KILN_CACHE_LOCK_TIMEOUT"); t && *t) {
    char* end = nullptr;
    const double s = std::strtod(t, &end);
    if (end != t && *end == '\0' && s >= 0 && std::isfinite(s))
      cfg.lock_timeout_s = s;
    else
      kiln::detail::logger().warn(
          "KILN_CACHE_LOCK_TIMEOUT='{}' is not a number of seconds >= 0; using {} s", t,
          cfg.lock_timeout_s);
  }
  if (const char* t = std::getenv("KILN_CACHE_MAX_SIZE"); t && *t) {
    try {
      cfg.max_bytes = parse_size(t);
    } catch (const kiln::ValueError& e) {
      kiln::detail::logger().warn("KILN_CACHE_MAX_SIZE: {}; the cache has no size limit", e.what());
    }
  }
  if (const char* list = std::getenv("KILN_CACHE_READONLY_DIRS"); list && *list) {
    std::string_view rest(list);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (colon != 0) cfg.readonly_dirs.emplace_back(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) {
    cfg.dir = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x && x[0] == '/') {
    cfg.dir = std::filesystem::path(x) / "kiln";  // XDG says to ignore relative values
  } else if (auto home = home_dir(); !home.empty()) {
    cfg.dir = home / ".cache" / "kiln";
  } else if (!cfg.in_memory_only) {
    kiln::detail::logger().warn(
        "no KILN_CACHE_DIR, XDG_CACHE_HOME or home folder; kernels are cached in memory only");
    cfg.in_memory_only = true;
  }
  return cfg;
}

}  // namespace kiln::cache
