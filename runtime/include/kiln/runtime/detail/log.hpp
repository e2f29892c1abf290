#pragma once
// kiln's one logger, shared by every module: a spdlog logger named "kiln" writing to
// stderr. Its level comes from the environment variable KILN_LOG
// (trace | debug | info | warn | error | off; default warn), read once on first use.
//
//   kiln::detail::logger().warn("cache folder {} is writable by others; not using it", dir);
//
// A program that wants kiln's messages elsewhere registers its own spdlog logger named
// "kiln" before kiln's first log call; kiln then uses that logger (and leaves its level
// alone unless KILN_LOG is set).
#include <spdlog/logger.h>

namespace kiln::detail {

/// The process-wide "kiln" logger. Thread-safe; never throws after first use.
spdlog::logger& logger();

}  // namespace kiln::detail
