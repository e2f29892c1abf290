#include "kiln/cache/kernel_record.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "kiln/runtime/detail/log.hpp"

namespace kiln::cache {
namespace {

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
  out += ",\"recorded_arch\":" + std::to_string(req.arch);
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
  const int fd = ::open(manifest.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return warn_once(manifest, std::strerror(errno));
  // O_APPEND alone can interleave a long line written in several chunks; the flock keeps
  // every line whole across processes (and across threads: each call opens its own file).
  int r;
  do r = ::flock(fd, LOCK_EX);
  while (r != 0 && errno == EINTR);
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
