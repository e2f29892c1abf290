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
//
// Every number is range-checked (an arch, an ndim, an index), never wrapped into another one;
// archs are written 90 or "90a" (nvrtc_archs.hpp). With keep_going, an entry that is not even
// JSON (a JSON lines file) or not an object with a kind is set aside in `invalid` instead of
// rejecting the file, so a recorded file with one torn line still gives the others.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cache/compile_request.hpp"
#include "kiln/codegen/elementwise_spec.hpp"
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
  std::vector<std::string> invalid;  // keep_going: entries set aside, one message each
};

/// The largest manifest kiln-cache reads (a recorded one holds every kernel's source).
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{1} << 30;

/// Reads the file at `path` ("-": standard input), a regular file of at most
/// kMaxManifestBytes (a FIFO or device is refused, never waited on).
Manifest read_manifest(const std::filesystem::path& path, bool keep_going = false);
/// Parses `text`; `path` names it in messages and anchors relative "file" fields.
Manifest parse_manifest(std::string_view text, const std::filesystem::path& path,
                        bool keep_going = false);

/// An elementwise variant in a few words: "contiguous w4 i32", "strided ndim 2 i64",
/// "tiled staged 0 cols by 2 i32", "gathered ndim 3 w4 long rows, row constants 1 i32", ...
std::string describe(const codegen::ElementwiseSpec& s);

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
/// given. Values that are not an arch kiln could use are left out (expand_entry names them).
std::vector<int> recorded_archs(const Manifest& m);

/// A JSON number as an int in [lo, hi], or kiln::ValueError naming `what` and the range: JSON
/// integers are 64-bit and nlohmann's get<int>() wraps (4294967298 would become 2).
int checked_int(const nlohmann::json& v, const std::string& what, long long lo, long long hi);

/// An arch as a manifest writes it: an integer (90) or a string ("90", "90a", "sm_90a");
/// kiln::ValueError naming `what` otherwise (or when NVRTC cannot target it).
int manifest_arch(const nlohmann::json& v, const std::string& what);

}  // namespace kiln::tools
