#include "kiln/runtime/detail/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string_view>

namespace kiln::detail {
namespace {

std::optional<spdlog::level::level_enum> level_from_env(bool& unknown) {
  unknown = false;
  const char* v = std::getenv("KILN_LOG");
  if (v == nullptr || *v == '\0') return std::nullopt;
  const std::string_view s(v);
  if (s == "trace") return spdlog::level::trace;
  if (s == "debug") return spdlog::level::debug;
  if (s == "info") return spdlog::level::info;
  if (s == "warn" || s == "warning") return spdlog::level::warn;
  if (s == "error") return spdlog::level::err;
  if (s == "critical") return spdlog::level::critical;
  if (s == "off") return spdlog::level::off;
  unknown = true;
  return std::nullopt;
}

std::shared_ptr<spdlog::logger> make_logger() {
  bool unknown = false;
  const auto level = level_from_env(unknown);
  // Respect a logger the program registered itself: that is how a user redirects kiln's output.
  if (auto existing = spdlog::get("kiln")) {
    if (level) existing->set_level(*level);
    return existing;
  }
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("kiln", std::move(sink));
  log->set_pattern("[kiln] [%l] %v");
  log->set_level(level.value_or(spdlog::level::warn));
  try {
    spdlog::register_logger(log);
  } catch (const spdlog::spdlog_ex&) {
    // Someone registered "kiln" between get() and here; theirs wins.
    if (auto existing = spdlog::get("kiln")) return existing;
  }
  return log;
}

// A KILN_LOG kiln does not know is said once, at start-up, whether or not anything is ever
// logged (the logger is made on first use, which a program that logs nothing never reaches):
// a typo must not silently leave the level at its default.
const bool kLogLevelChecked = [] {
  bool unknown = false;
  (void)level_from_env(unknown);
  if (unknown)
    std::fprintf(stderr,
                 "[kiln] [warning] KILN_LOG='%s' is not one of trace, debug, info, warn, error, "
                 "off; using warn\n",
                 std::getenv("KILN_LOG"));
  return true;
}();

}  // namespace

spdlog::logger& logger() {
  // Held by shared_ptr for the life of the process so that late log calls (static
  // destructors) still find a live logger even after spdlog's registry is dropped.
  static const std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

}  // namespace kiln::detail
