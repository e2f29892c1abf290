#pragma once
// kiln-cache precompile: runs compile jobs into one cache folder on a pool of threads
// (NVRTC compiles independent programs in parallel), and counts a job done only when its
// entry is on disk and reads back valid.
//
//   PrecompileSummary s = precompile(jobs, {.dir = "deploy/cache", .jobs = 2});
//   return s.failed ? 1 : 0;
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "manifest.hpp"

namespace kiln::tools {

struct PrecompileOptions {
  std::filesystem::path dir;  // must already pass cache::writable_folder_problem
  int jobs = 1;
  bool save_source = false;
  bool progress_bar = false;  // a redrawn bar on stderr instead of one line per kernel
  std::FILE* out = stdout;
};

struct PrecompileSummary {
  std::size_t compiled = 0, cached = 0, failed = 0, duplicates = 0;
  std::vector<std::string> failures;  // one report per failed job (with the NVRTC log)
  double seconds = 0;
};

/// Runs every job (duplicates by cache key once). Never throws for a job's failure: it is
/// reported in the summary, and the other jobs go on.
PrecompileSummary precompile(const std::vector<PrecompileJob>& jobs, const PrecompileOptions& opts);

}  // namespace kiln::tools
