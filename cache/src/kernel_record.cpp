#include "kiln/cache/kernel_record.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "kiln/cache/cache_config.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/regular_file.hpp"

namespace kiln::cache {
void put_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

namespace {

void put_json_list(std::string& out, const std::vector<std::string>& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    put_json_string(out, v[i]);
  }
  out += ']';
}

void warn_once(const std::filesystem::path& p, const std::string& why) {
  static std::mutex m;
  static std::set<std::string> warned;
  {
    std::lock_guard lock(m);
    if (!warned.insert(p.string()).second) return;
  }
  kiln::detail::logger().warn("KILN_CACHE_RECORD: cannot record into {}: {}", p.string(), why);
}

}  // namespace

const std::filesystem::path& record_path() {
  static const std::filesystem::path p = [] {
    const char* v = std::getenv("KILN_CACHE_RECORD");
    return std::filesystem::path(v && *v ? v : "");
  }();
  return p;
}

std::string record_line(const CompileRequest& req, bool compiled) {
  std::string out;
  out.reserve(req.source.size() + req.source.size() / 8 + 256);
  out += "{\"kind\":\"source\",\"made_by\":";
  put_json_string(out, req.kind.empty() ? "unknown" : req.kind);
  out += ",\"kernel_name\":";
  put_json_string(out, req.kernel_name);
  out += ",\"cache\":";
  out += compiled ? "\"compiled\"" : "\"hit\"";
  out += ",\"recorded_arch\":" + std::to_string(base_arch(req.arch));
  // Arch-specific (sm_90a) is the kernel's need, not the device's: precompiling this entry for
  // any arch keeps it.
  if (is_arch_specific(req.arch)) out += ",\"arch_specific\":true";
  out += ",\"options\":";
  put_json_list(out, req.options);
  out += ",\"name_expressions\":";
  put_json_list(out, req.name_expressions);
  out += ",\"source\":";
  put_json_string(out, req.source);
  out += "}\n";
  return out;
}

void record_kernel(const std::filesystem::path& manifest, const CompileRequest& req,
                   bool compiled) {
  const std::string line = record_line(req, compiled);
  // The user named the path, so a link is followed; but a FIFO or device must never block the
  // program (O_NONBLOCK: opening a FIFO with no reader fails at once, with one it succeeds and
  // fstat refuses it), and only a regular file is written.
  struct stat st {};
  if (::stat(manifest.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return warn_once(manifest, "it is " + file_kind(st.st_mode) + ", not a regular file");
  const int fd =
      ::open(manifest.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) return warn_once(manifest, std::strerror(errno));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return warn_once(manifest, "it is " + file_kind(st.st_mode) + ", not a regular file");
  }
  // O_APPEND alone can interleave a long line written in several chunks; the flock keeps
  // every line whole across processes (and across threads: each call opens its own file).
  // The wait is bounded like the cache's own locks: a stopped recorder must not stop this one.
  const double timeout_s = CacheConfig::from_env().lock_timeout_s;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) break;
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EWOULDBLOCK ||
        std::chrono::steady_clock::now() - start > std::chrono::duration<double>(timeout_s)) {
      ::close(fd);
      return warn_once(manifest, err == EWOULDBLOCK
                                     ? "another process held its lock for longer than "
                                       "KILN_CACHE_LOCK_TIMEOUT; kernel '" +
                                           req.kernel_name + "' was not recorded"
                                     : std::string(std::strerror(err)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      warn_once(manifest, std::strerror(errno));
      break;
    }
    done += std::size_t(n);
  }
  ::close(fd);  // releases the flock
}

}  // namespace kiln::cache
