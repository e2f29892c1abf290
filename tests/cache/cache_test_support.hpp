#pragma once
// Helpers shared by the cache tests: a fresh temp folder per test, a capture of kiln's log,
// tiny NVRTC requests, and env variables set for one scope.
#include <spdlog/logger.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/cache/cache_config.hpp"
#include "kiln/cache/compile_request.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "support/test_support.hpp"

namespace kiln::cache::testing {

using kiln::test::ScopedEnv;
using kiln::test::TempDir;

/// Routes kiln's log into memory for the scope (keeps test output quiet, lets tests check
/// that a warning was logged).
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    auto& log = kiln::detail::logger();
    saved_ = log.sinks();
    saved_level_ = log.level();
    log.sinks() = {sink_};
    if (saved_level_ > spdlog::level::warn) log.set_level(spdlog::level::warn);
  }
  ~LogCapture() {
    auto& log = kiln::detail::logger();
    log.sinks() = saved_;
    log.set_level(saved_level_);
  }
  std::string text() const {
    std::string all;
    for (const auto& line : sink_->last_formatted()) all += line;
    return all;
  }
  bool contains(const std::string& s) const { return text().find(s) != std::string::npos; }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::vector<spdlog::sink_ptr> saved_;
  spdlog::level::level_enum saved_level_;
};

/// The smallest kernel worth compiling; `tag` makes the source (and so the key) unique.
inline CompileRequest tiny_request(const std::string& tag = "0") {
  CompileRequest req;
  req.source = "extern \"C\" __global__ void k(float* x) { x[0] = " + tag + "; }\n";
  req.kernel_name = "k";
  req.arch = 90;
  return req;
}

inline CacheConfig disk_config(const std::filesystem::path& dir) {
  CacheConfig cfg;
  cfg.dir = dir;
  return cfg;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace kiln::cache::testing
