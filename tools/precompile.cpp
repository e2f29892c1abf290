#include "precompile.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/entry_file.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::tools {

const char* to_string(JobOutcome o) noexcept {
  switch (o) {
    case JobOutcome::compiled:
      return "compiled";
    case JobOutcome::loaded:
      return "loaded";
    case JobOutcome::cached:
      return "cached";
    case JobOutcome::failed:
      return "failed";
  }
  return "?";
}

namespace {

std::string job_label(const PrecompileJob& j) {
  return j.name + (j.variant.empty() ? "" : " [" + j.variant + "]") + " " +
         cache::arch_name(j.request.arch);
}

}  // namespace

PrecompileSummary precompile(const std::vector<PrecompileJob>& all, const PrecompileOptions& opts) {
  const auto start = std::chrono::steady_clock::now();
  PrecompileSummary sum;
  struct Keyed {
    std::size_t index;
    cache::Key key;
  };
  std::vector<Keyed> jobs;
  {
    std::unordered_set<cache::Key, cache::KeyHash> seen;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const cache::Key k = cache::cache_key(all[i].request);
      if (seen.insert(k).second)
        jobs.push_back({i, k});
      else
        ++sum.duplicates;
    }
  }
  cache::CacheConfig cfg;
  cfg.dir = opts.dir;
  cfg.save_source = opts.save_source;
  cfg.lock_timeout_s = opts.lock_timeout_s;
  const cache::CacheLayout layout(opts.dir);
  sum.reports.resize(jobs.size());

  std::mutex out_mutex;
  std::size_t done = 0;
  auto report = [&](std::size_t n, JobOutcome o, const std::string& detail) {
    const Keyed& kj = jobs[n];
    const PrecompileJob& job = all[kj.index];
    std::lock_guard lock(out_mutex);
    sum.reports[n] = {kj.index, kj.key.hex(), o, o == JobOutcome::failed ? detail : ""};
    ++done;
    (o == JobOutcome::compiled ? sum.compiled
     : o == JobOutcome::loaded ? sum.loaded
     : o == JobOutcome::cached ? sum.cached
                               : sum.failed)++;
    if (o == JobOutcome::failed)
      sum.failures.push_back(job_label(job) + " (entry " + std::to_string(job.entry) +
                             "): " + detail);
    if (opts.quiet) return;
    if (opts.progress_bar) {
      if (o == JobOutcome::failed)
        std::fprintf(stderr, "\r\033[KFAILED %s (entry %zu): %s\n", job_label(job).c_str(),
                     job.entry, detail.c_str());
      constexpr int kWidth = 30;
      const int filled = int(kWidth * done / jobs.size());
      std::fprintf(stderr,
                   "\r\033[K[%s%s] %zu/%zu  compiled %zu  loaded %zu  cached %zu  failed %zu",
                   std::string(filled, '#').c_str(), std::string(kWidth - filled, ' ').c_str(),
                   done, jobs.size(), sum.compiled, sum.loaded, sum.cached, sum.failed);
      if (done == jobs.size()) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    } else {
      const char* what = o == JobOutcome::compiled ? "compiled"
                         : o == JobOutcome::loaded ? "loaded  "
                         : o == JobOutcome::cached ? "cached  "
                                                   : "FAILED  ";
      std::fprintf(opts.out, "%s %s %s%s%s\n", what, job_label(job).c_str(), kj.key.hex().c_str(),
                   detail.empty() ? "" : ": ", detail.c_str());
      std::fflush(opts.out);
    }
  };

  auto run_one = [&](std::size_t n) {
    const Keyed& kj = jobs[n];
    const PrecompileJob& job = all[kj.index];
    const auto path = layout.entry_path(kj.key);
    const cache::EntryMetadata meta{job.kind, job.name, job.request.arch};
    if (cache::read_entry_file(path, kj.key, cache::EntryUse::look).binary) {
      if (!cache::read_entry_metadata(opts.dir, kj.key))
        cache::write_entry_metadata(opts.dir, kj.key, meta);
      return report(n, JobOutcome::cached, "");
    }
    cache::BinarySource source = cache::BinarySource::compiled;
    try {
      cache::compile_cached(job.request, cfg, &source);
    } catch (const kiln::CompileError& e) {
      const std::string what = e.what();
      return report(n, JobOutcome::failed,
                    "NVRTC rejected it:\n" + (e.log().empty() ? what : e.log()));
    } catch (const std::exception& e) {
      return report(n, JobOutcome::failed, e.what());
    }
    const auto back = cache::read_entry_file(path, kj.key, cache::EntryUse::look);
    if (!back.binary)
      return report(n, JobOutcome::failed,
                    "compiled, but no valid entry at " + path.string() + " (" +
                        (back.missing ? "no file" : back.problem) + ")");
    cache::write_entry_metadata(opts.dir, kj.key, meta);
    // Not there when this job looked, yet not compiled here: another process made it.
    report(n, source == cache::BinarySource::compiled ? JobOutcome::compiled : JobOutcome::loaded,
           "");
  };

  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) run_one(i);
  };
  const int n = std::max(1, std::min<int>(opts.jobs, int(jobs.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sum;
}

}  // namespace kiln::tools
