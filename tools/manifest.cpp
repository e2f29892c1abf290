#include "manifest.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/runtime/regular_file.hpp"

namespace kiln::tools {
namespace fs = std::filesystem;
using nlohmann::json;

std::string ManifestEntry::label() const {
  return "entry " + std::to_string(number) + (line ? " (line " + std::to_string(line) + ")" : "") +
         " (" + (kind.empty() ? "no kind" : kind) + " '" + name + "')";
}

namespace {

// line:column (1-based) of byte `offset` in `text`.
std::string position(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// nlohmann's message without its own "[json.exception.parse_error.101] parse error at line
// 1, column 2: " prefix (we say where ourselves).
std::string parse_reason(const json::parse_error& e) {
  std::string m = e.what();
  if (auto at = m.find(": "); at != std::string::npos) m = m.substr(at + 2);
  return m;
}

// nlohmann's message for a number too large for a double ("number overflow parsing
// '1E400'"), without its "[json.exception.out_of_range.406] " prefix. The parser throws it as
// out_of_range, not parse_error, and it has no byte position.
std::string overflow_reason(const json::out_of_range& e) {
  std::string m = e.what();
  if (auto at = m.find("] "); at != std::string::npos) m = m.substr(at + 2);
  return m;
}

ManifestEntry make_entry(const Manifest& m, json j, std::size_t number, std::size_t line) {
  ManifestEntry e;
  e.number = number;
  e.line = line;
  const std::string where = m.path.string() + ": entry " + std::to_string(number) +
                            (line ? " (line " + std::to_string(line) + ")" : "");
  if (!j.is_object())
    throw ManifestError(where + ": an entry is a JSON object, not " + std::string(j.type_name()));
  if (!j.contains("kind"))
    throw ManifestError(where +
                        ": no \"kind\" (one of elementwise, reduction, raw, expression, source)");
  if (!j["kind"].is_string()) throw ManifestError(where + ": \"kind\" must be a string");
  e.kind = j["kind"].get<std::string>();
  for (const char* f : {"name", "kernel_name"})
    if (j.contains(f) && j[f].is_string()) {
      e.name = j[f].get<std::string>();
      break;
    }
  if (e.name.empty())
    e.name = std::to_string(number).insert(0, 1, '#');  // (GCC 12 -Wrestrict misfires on "#" + s)
  e.json = std::move(j);
  return e;
}

}  // namespace

int checked_int(const json& v, const std::string& what, long long lo, long long hi) {
  const std::string range = " (" + std::to_string(lo) + ".." + std::to_string(hi) + ")";
  if (!v.is_number_integer()) throw kiln::ValueError(what + " must be an integer" + range);
  // Unsigned first: a value past INT64_MAX would wrap negative as int64.
  const bool fits = v.is_number_unsigned()
                        ? v.get<std::uint64_t>() <= std::uint64_t(hi)
                        : v.get<std::int64_t>() >= lo && v.get<std::int64_t>() <= hi;
  if (!fits || v.get<std::int64_t>() < lo)
    throw kiln::ValueError(what + " is " + v.dump() + ", out of range" + range);
  return int(v.get<std::int64_t>());
}

int manifest_arch(const json& v, const std::string& what) {
  try {
    if (v.is_string()) return cache::parse_arch(v.get<std::string>());
    const int arch = checked_int(v, what, 0, cache::kArchSpecificFlag - 1);
    cache::check_arch(arch);
    return arch;
  } catch (const kiln::ValueError& e) {
    throw kiln::ValueError(what + ": " + e.what());
  }
}

Manifest parse_manifest(std::string_view text, const fs::path& path, bool keep_going) {
  Manifest m;
  m.path = path;
  // An entry that cannot be read: rejects the file, or with keep_going is set aside.
  auto add = [&](auto&& make) {
    try {
      m.entries.push_back(make());
    } catch (const ManifestError& e) {
      if (!keep_going) throw;
      m.invalid.push_back(e.what());
    }
  };
  // JSON lines: the first line is a complete object by itself.
  const std::size_t first_nl = text.find('\n');
  auto first_line_is_object = [&] {
    if (first_nl == std::string_view::npos) return false;
    try {
      return json::parse(text.substr(0, first_nl)).is_object();
    } catch (const json::exception&) {
      return false;
    }
  };
  json doc;
  bool lines = false;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& whole) {
    lines = whole.byte > first_nl && first_line_is_object();
    if (!lines)
      throw ManifestError(path.string() + ":" + position(text, whole.byte ? whole.byte - 1 : 0) +
                          ": JSON syntax error: " + parse_reason(whole));
  } catch (const json::out_of_range& whole) {
    lines = first_line_is_object();
    if (!lines) throw ManifestError(path.string() + ": " + overflow_reason(whole));
  }
  if (lines) {
    std::size_t start = 0, line = 1, number = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view one = text.substr(start, end - start);
      if (one.find_first_not_of(" \t\r") != std::string_view::npos) {
        ++number;
        add([&] {
          json j;
          try {
            j = json::parse(one);
          } catch (const json::parse_error& e) {
            throw ManifestError(path.string() + ":" + std::to_string(line) + ":" +
                                std::to_string(e.byte ? e.byte : 1) +
                                ": JSON syntax error: " + parse_reason(e));
          } catch (const json::out_of_range& e) {
            throw ManifestError(path.string() + ":" + std::to_string(line) + ": " +
                                overflow_reason(e));
          }
          return make_entry(m, std::move(j), number, line);
        });
      }
      start = end + 1;
      ++line;
    }
    return m;
  }
  json kernels;
  if (doc.is_array()) {
    kernels = std::move(doc);
  } else if (doc.is_object() && doc.contains("kind")) {
    kernels = json::array({std::move(doc)});  // a one-line JSON lines file
  } else if (doc.is_object()) {
    static const std::set<std::string> known{"kiln_manifest", "archs", "kernels", "comment"};
    for (const auto& [k, v] : doc.items())
      if (!known.count(k))
        throw ManifestError(path.string() + ": unknown top-level field '" + k +
                            "' (known: kiln_manifest, archs, kernels, comment)");
    if (doc.contains("kiln_manifest") && doc["kiln_manifest"] != 1)
      throw ManifestError(path.string() + ": \"kiln_manifest\": " + doc["kiln_manifest"].dump() +
                          " is not a format this kiln-cache reads (1)");
    if (!doc.contains("kernels") || !doc["kernels"].is_array())
      throw ManifestError(path.string() + ": no \"kernels\" list");
    if (doc.contains("archs")) {
      const json& a = doc["archs"];
      if (!a.is_array())
        throw ManifestError(path.string() + ": \"archs\" must be a list such as [80, 90, \"90a\"]");
      try {
        for (std::size_t k = 0; k < a.size(); ++k)
          m.archs.push_back(manifest_arch(a[k], "\"archs\"[" + std::to_string(k) + "]"));
      } catch (const kiln::ValueError& e) {
        throw ManifestError(path.string() + ": " + e.what());
      }
    }
    kernels = std::move(doc["kernels"]);
  } else {
    throw ManifestError(path.string() +
                        ": a manifest is a JSON object with \"kernels\", a JSON array of "
                        "entries, or JSON lines; this is " +
                        std::string(doc.type_name()));
  }
  std::size_t number = 0;
  for (auto& j : kernels) {
    ++number;
    add([&] { return make_entry(m, std::move(j), number, 0); });
  }
  return m;
}

namespace {

// Standard input, up to the cap (a pipe has no size to check first).
std::string read_stdin() {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw ManifestError(std::string("-: cannot read standard input: ") + std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + std::size_t(n) > kMaxManifestBytes)
      throw ManifestError("-: standard input is larger than the " +
                          std::to_string(kMaxManifestBytes) + "-byte manifest limit");
    text.append(buf, std::size_t(n));
  }
}

}  // namespace

Manifest read_manifest(const fs::path& path, bool keep_going) {
  if (path == "-") return parse_manifest(read_stdin(), "-", keep_going);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw ManifestError(path.string() + ": is a folder, not a manifest file");
  auto file = RegularFile::open(path, {.follow_links = true});
  if (file.missing())
    throw ManifestError(path.string() + ": cannot open the manifest: " + std::strerror(ENOENT));
  auto text = file.read_all(kMaxManifestBytes);
  if (!text) throw ManifestError(path.string() + ": cannot read the manifest: " + file.problem());
  return parse_manifest(*text, path, keep_going);
}

std::vector<int> recorded_archs(const Manifest& m) {
  std::set<int> archs;
  for (const auto& e : m.entries) {
    if (e.kind != "source" || !e.json.contains("recorded_arch")) continue;
    try {
      archs.insert(manifest_arch(e.json["recorded_arch"], "recorded_arch"));
    } catch (const kiln::ValueError&) {
    }
  }
  return {archs.begin(), archs.end()};
}

std::vector<PrecompileJob> expand_entry(const Manifest& m, const ManifestEntry& e, int arch) {
  for (const ManifestKind& k : manifest_kinds()) {
    if (k.kind != e.kind) continue;
    try {
      auto jobs = k.expand(m, e, arch);
      for (auto& j : jobs) {
        j.entry = e.number;
        j.kind = e.kind == "source" ? j.request.kind : e.kind;
        j.name = j.request.kernel_name;
      }
      return jobs;
    } catch (const ManifestError&) {
      throw;
    } catch (const kiln::Error& err) {
      throw ManifestError(m.path.string() + ": " + e.label() + ": " + err.what());
    } catch (const json::exception& err) {
      throw ManifestError(m.path.string() + ": " + e.label() + ": " + err.what());
    }
  }
  std::string known;
  for (const ManifestKind& k : manifest_kinds())
    known += (known.empty() ? "" : ", ") + std::string(k.kind);
  throw ManifestError(m.path.string() + ": " + e.label() + ": unknown kind '" + e.kind +
                      "' (known: " + known + ")");
}

}  // namespace kiln::tools
