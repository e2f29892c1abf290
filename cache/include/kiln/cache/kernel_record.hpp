#pragma once
// Record mode: with KILN_CACHE_RECORD=path.json, every kernel a program loads (a miss of the
// loaded-kernel cache, never a hit) is appended to a manifest as one JSON line, a `source`
// entry: the exact generated source, options and name expressions (arch-independent), plus
// the kind and name for humans and whether the disk cache had it. `kiln-cache precompile`
// reads such a file (JSON lines or a JSON array) and rebuilds exactly those cache entries,
// for any arch, on a machine without a GPU. Several processes may record into one file at
// once: each line is written whole under an flock.
//
//   KILN_CACHE_RECORD=kernels.jsonl ./my_program
//   kiln-cache precompile kernels.jsonl --arch 90 --cache-dir deploy/kiln-cache
//
// One line: {"kind":"source","made_by":"elementwise","kernel_name":"my_kernel",
//            "cache":"compiled","recorded_arch":90,"options":[...],"name_expressions":[],
//            "source":"..."}
#include <filesystem>
#include <string>
#include <string_view>

#include "kiln/cache/compile_request.hpp"

namespace kiln::cache {

/// The manifest named by KILN_CACHE_RECORD, or empty when recording is off. Read once per
/// process.
const std::filesystem::path& record_path();

/// Appends `s` to `out` as a JSON string literal (quoted; quotes, backslashes and control
/// characters escaped): the record's lines, and the benchmarks' JSON.
void put_json_string(std::string& out, std::string_view s);

/// The JSON line (with its trailing newline) recording `req`.
std::string record_line(const CompileRequest& req, bool compiled);

/// Appends record_line(req, compiled) to `manifest` under an exclusive flock, creating the
/// file (0600) if needed. Failures are logged as warnings (once per file), never thrown:
/// recording must not break the program it watches.
void record_kernel(const std::filesystem::path& manifest, const CompileRequest& req, bool compiled);

}  // namespace kiln::cache
