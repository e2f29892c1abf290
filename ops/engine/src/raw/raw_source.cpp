#include "raw_source.hpp"

#include <fmt/format.h>

#include <cctype>
#include <set>

#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/codegen/nvrtc_defaults.hpp"
#include "kiln/engine/raw_module.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/regular_file.hpp"
#include "raw_checks.hpp"

namespace kiln {

std::string normalize_name_expression(std::string_view expr) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  out.reserve(expr.size());
  for (std::size_t k = 0; k < expr.size(); ++k) {
    const char c = expr[k];
    if (!std::isspace(static_cast<unsigned char>(c))) {
      out += c;
      continue;
    }
    std::size_t j = k;
    while (j < expr.size() && std::isspace(static_cast<unsigned char>(expr[j]))) ++j;
    // Keep one space only where dropping it would join two tokens ("unsigned int").
    if (!out.empty() && j < expr.size() && ident(out.back()) && ident(expr[j])) out += ' ';
    k = j - 1;
  }
  return out;
}

namespace detail {
namespace fs = std::filesystem;

namespace {

// Never blocks on a FIFO and never reads a device or an unbounded file ("file": "/dev/zero").
std::optional<std::string> read_file(const fs::path& p, std::string& why) {
  return read_regular_file(p, kMaxUserFileBytes, why);
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// #include "name" or <name>: the name and whether it was quoted.
struct Include {
  std::string name;
  bool quoted;
};
std::vector<Include> includes_of(std::string_view text) {
  std::vector<Include> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    std::size_t k = 0;
    auto skip = [&] {
      while (k < line.size() && (line[k] == ' ' || line[k] == '\t')) ++k;
    };
    skip();
    if (k >= line.size() || line[k] != '#') continue;
    ++k;
    skip();
    if (line.substr(k, 7) != "include") continue;
    k += 7;
    skip();
    if (k >= line.size() || (line[k] != '"' && line[k] != '<')) continue;
    const char close = line[k] == '"' ? '"' : '>';
    const auto stop = line.find(close, k + 1);
    if (stop == std::string_view::npos) continue;
    out.push_back({std::string(line.substr(k + 1, stop - k - 1)), close == '"'});
  }
  return out;
}

}  // namespace

std::vector<fs::path> include_dirs(const std::vector<std::string>& options) {
  std::vector<fs::path> dirs;
  for (std::size_t k = 0; k < options.size(); ++k) {
    const std::string& o = options[k];
    for (std::string_view flag : {"--include-path=", "-I"}) {
      if (!o.starts_with(flag)) continue;
      std::string d = o.substr(flag.size());
      if (d.empty() && k + 1 < options.size()) d = options[++k];
      if (!d.empty()) dirs.emplace_back(d);
      break;
    }
    if (o == "--include-path" && k + 1 < options.size()) dirs.emplace_back(options[++k]);
  }
  return dirs;
}

UserHeaders scan_user_headers(std::string_view source, const fs::path& source_dir,
                              const std::vector<std::string>& options) {
  const std::vector<fs::path> dirs = include_dirs(options);
  UserHeaders out;
  Hasher128 h;
  h.str("kiln.user-headers.v1");
  std::set<fs::path> seen;
  // (text, folder of the file it came from); iterative so deep include chains cannot recurse.
  std::vector<std::pair<std::string, fs::path>> todo;
  todo.emplace_back(std::string(source), source_dir);
  while (!todo.empty()) {
    auto [text, here] = std::move(todo.back());
    todo.pop_back();
    for (const Include& inc : includes_of(text)) {
      fs::path found;
      const fs::path name(inc.name);
      if (name.is_absolute()) {
        if (is_file(name)) found = name;
      } else {
        if (inc.quoted && !here.empty() && is_file(here / name)) found = here / name;
        for (std::size_t d = 0; found.empty() && d < dirs.size(); ++d)
          if (is_file(dirs[d] / name)) found = dirs[d] / name;
      }
      if (found.empty()) continue;  // CUDA's or the system's: NVRTC finds it or says so
      std::error_code ec;
      const fs::path canon = fs::weakly_canonical(found, ec);
      if (!seen.insert(ec ? found : canon).second) continue;
      std::string why;
      auto contents = read_file(found, why);
      if (!contents) continue;  // NVRTC reads it or says why
      // The name as written and the contents, never the folder: a moved tree still hits.
      h.str(inc.name);
      h.str(*contents);
      out.files.push_back(ec ? found : canon);
      todo.emplace_back(std::move(*contents), found.parent_path());
    }
  }
  if (!out.files.empty()) out.digest = h.digest().hex();
  return out;
}

namespace {

void hash_source(RawSource& s) {
  Hasher128 h;
  h.str("kiln.raw.v1");
  h.u32(std::uint32_t(s.kind));
  h.str(s.code);
  h.u64(s.options.size());
  for (const auto& o : s.options) h.str(o);
  h.u64(s.name_expressions.size());
  for (const auto& n : s.name_expressions) h.str(n);
  h.str(s.headers.digest);
  if (s.arch_specific) h.str("arch-specific");
  s.hash = h.digest();
}

}  // namespace

std::shared_ptr<RawSource> RawSource::from_code(std::string code, raw_options&& opts,
                                                std::string origin, const fs::path& dir) {
  auto s = std::make_shared<RawSource>();
  s->kind = Kind::source;
  s->code = std::move(code);
  s->origin = std::move(origin);
  s->cooperative = opts.cooperative;
  s->arch_specific = opts.arch_specific;
  // The architecture check of every kind (-arch is kiln's choice); user options kept as given,
  // plus --std=c++17 when no standard is named (CCCL headers need C++17).
  (void)codegen::with_nvrtc_defaults(opts.options);
  bool has_std = false;
  for (const auto& o : opts.options)
    has_std = has_std || o.starts_with("-std") || o.starts_with("--std");
  if (!has_std) s->options.push_back("--std=c++17");
  if (!dir.empty()) s->options.push_back("-I" + dir.string());
  s->options.insert(s->options.end(), opts.options.begin(), opts.options.end());
  for (const auto& e : opts.name_expressions) {
    std::string n = normalize_name_expression(e);
    if (n.empty()) throw ValueError("RawModule: an empty name expression");
    s->name_expressions.push_back(std::move(n));
  }
  s->headers = scan_user_headers(s->code, dir, s->options);
  hash_source(*s);
  return s;
}

std::shared_ptr<RawSource> RawSource::from_file(const fs::path& path, raw_options&& opts) {
  std::string why;
  auto bytes = read_file(path, why);
  if (!bytes) throw ValueError(fmt::format("cannot read CUDA file '{}': {}", path.string(), why));
  const std::string ext = path.extension().string();
  Kind kind = Kind::source;
  if (ext == ".cubin")
    kind = Kind::cubin;
  else if (ext == ".ptx")
    kind = Kind::ptx;
  else if (ext == ".fatbin")
    kind = Kind::fatbin;
  if (kind == Kind::source) {
    std::error_code ec;
    const fs::path abs = fs::absolute(path, ec);
    return from_code(std::move(*bytes), std::move(opts), path.string(),
                     (ec ? path : abs).parent_path());
  }
  if (!opts.name_expressions.empty() || !opts.options.empty() || opts.arch_specific)
    throw ValueError(
        fmt::format("'{}' is a compiled {} file: NVRTC options, name expressions and "
                    "arch_specific apply to source code only (.cu)",
                    path.string(), ext.substr(1)));
  if (bytes->empty()) throw ValueError(fmt::format("CUDA file '{}' is empty", path.string()));
  auto s = std::make_shared<RawSource>();
  s->kind = kind;
  s->code = std::move(*bytes);  // std::string keeps a NUL after the bytes, as PTX needs
  s->origin = path.string();
  s->cooperative = opts.cooperative;
  hash_source(*s);
  return s;
}

cache::CompileRequest RawSource::request(int arch) const {
  cache::CompileRequest req;
  req.source = code;
  req.kernel_name = name_expressions.empty() ? origin : name_expressions.front();
  req.options = options;
  req.kind = "raw";
  req.arch = arch_specific ? cache::arch_specific(arch) : arch;
  req.name_expressions = name_expressions;
  req.key_extra = headers.digest;
  return req;
}

const cache::LoadedKernel& RawSource::module_on(int device) const {
  const Hash128 key = cache::kernel_key(hash, std::span<const std::byte>(), device);
  return cache::loaded_entry(key, [&] {
    if (kind != Kind::source) {
      cache::LoadedKernel k;
      k.module = Module::load(code, device);
      return k;
    }
    return cache::compile_and_load(
        device, [&](int arch) { return request(arch); }, false);
  });
}

std::string RawSource::symbol(const cache::LoadedKernel& module, std::string_view name) const {
  const std::string n = normalize_name_expression(name);
  for (std::size_t k = 0; k < name_expressions.size() && k < module.lowered_names.size(); ++k)
    if (name_expressions[k] == n) return module.lowered_names[k];
  return std::string(name);
}

std::string RawSource::missing_message(const cache::LoadedKernel& module, std::string_view what,
                                       std::string_view name) const {
  return missing_name_message(origin, what, name, module.module->function_names(), name_expressions,
                              module.lowered_names);
}

}  // namespace detail
}  // namespace kiln
