#pragma once
// kiln-cache manifests (format: docs/manifest.md): which kernels to put in a cache.
// A manifest file is a JSON object {"kiln_manifest": 1, "archs": [...], "kernels": [...]},
// a bare JSON array of entries, or JSON lines (one entry per line: what record mode writes).
// Each entry has a "kind"; a table maps each kind to the function that turns an entry into
// compile requests through that kind's ahead-of-time entry point.
//
//   Manifest m = read_manifest("samples/kernels.json");      // ManifestError: file:line:col
//   for (const auto& e : m.entries)
//     for (auto& job : expand_entry(m, e, 90)) cache::compile_cached(job.request, cfg);
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/compile_request.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::tools {

/// A manifest that cannot be read, parsed or understood. what() starts with the file name
/// (and line:column for syntax errors, the entry number otherwise).
class ManifestError : public kiln::ValueError {
 public:
  using kiln::ValueError::ValueError;
};

struct ManifestEntry {
  std::size_t number = 0;  // 1-based position in the manifest
  std::size_t line = 0;    // JSON lines: the line it is on (else 0)
  nlohmann::json json;
  std::string kind;  // json["kind"]
  std::string name;  // a name for messages: "name", "kernel_name", or "#<number>"
  /// "entry 3 (elementwise 'my_kernel')" for messages.
  std::string label() const;
};

struct Manifest {
  std::filesystem::path path;
  std::vector<int> archs;  // the object form's "archs" (may be empty)
  std::vector<ManifestEntry> entries;
};

Manifest read_manifest(const std::filesystem::path& path);
/// Parses `text`; `path` names it in messages and anchors relative "file" fields.
Manifest parse_manifest(std::string_view text, const std::filesystem::path& path);

/// One kernel to compile: a request plus how to describe it.
struct PrecompileJob {
  cache::CompileRequest request;
  std::string variant;    // "contiguous w4 i32", "strided ndim 2 i64", "" when exact
  std::size_t entry = 0;  // ManifestEntry::number
  std::string kind, name;
};

/// What an entry of one kind compiles to for `arch`. Throws kiln::Error for bad entries
/// (expand_entry prefixes the entry's label), including a kind the format defines but
/// kiln-cache cannot build from an entry (its message says what to do instead).
using KindExpander = std::vector<PrecompileJob> (*)(const Manifest&, const ManifestEntry&,
                                                    int arch);

struct ManifestKind {
  std::string_view kind;
  KindExpander expand;
};
/// The dispatch table: every kind the format defines, in documentation order.
std::span<const ManifestKind> manifest_kinds();

/// The jobs of `entry` for `arch`; throws ManifestError naming the file and the entry.
std::vector<PrecompileJob> expand_entry(const Manifest& m, const ManifestEntry& entry, int arch);

/// The archs recorded in `source` entries ("recorded_arch"), sorted, for when no --arch is
/// given.
std::vector<int> recorded_archs(const Manifest& m);

}  // namespace kiln::tools
