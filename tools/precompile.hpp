#pragma once
// kiln-cache precompile: runs compile jobs into one cache folder on a pool of threads
// (NVRTC compiles independent programs in parallel), and counts a job done only when its
// entry is on disk and reads back valid. "compiled" means NVRTC ran in this process; an entry
// another process wrote meanwhile (several precompiles into one folder) is counted apart.
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
  bool quiet = false;         // no line per kernel (JSON output)
  /// How long to wait for another process compiling the same kernel (KILN_CACHE_LOCK_TIMEOUT,
  /// --lock-timeout) before compiling it too.
  double lock_timeout_s = 30;
  std::FILE* out = stdout;
};

enum class JobOutcome {
  compiled,  // NVRTC ran here and the entry reads back valid
  loaded,    // another process compiled it while this one waited (or just before)
  cached,    // the entry was there before this job started
  failed,
};
const char* to_string(JobOutcome o) noexcept;

struct JobReport {
  std::size_t job = 0;  // index into the jobs given to precompile
  std::string key;      // hex
  JobOutcome outcome = JobOutcome::failed;
  std::string error;  // failed: why (with the NVRTC log)
};

struct PrecompileSummary {
  std::size_t compiled = 0, loaded = 0, cached = 0, failed = 0, duplicates = 0;
  std::vector<std::string> failures;  // one report per failed job (with the NVRTC log)
  std::vector<JobReport> reports;     // one per job run (duplicates are not run), in job order
  double seconds = 0;
};

/// Runs every job (duplicates by cache key once). Never throws for a job's failure: it is
/// reported in the summary, and the other jobs go on.
PrecompileSummary precompile(const std::vector<PrecompileJob>& jobs, const PrecompileOptions& opts);

}  // namespace kiln::tools
