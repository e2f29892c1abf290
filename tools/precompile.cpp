#include "precompile.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/disk_cache.hpp"
#include "kiln/cache/entry_file.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::tools {
namespace {

enum class Outcome { compiled, cached, failed };

std::string job_label(const PrecompileJob& j) {
  return j.name + (j.variant.empty() ? "" : " [" + j.variant + "]") + " sm_" +
         std::to_string(j.request.arch);
}

}  // namespace

PrecompileSummary precompile(const std::vector<PrecompileJob>& all, const PrecompileOptions& opts) {
  const auto start = std::chrono::steady_clock::now();
  PrecompileSummary sum;
  struct Keyed {
    const PrecompileJob* job;
    cache::Key key;
  };
  std::vector<Keyed> jobs;
  {
    std::unordered_set<cache::Key, cache::KeyHash> seen;
    for (const auto& j : all) {
      const cache::Key k = cache::cache_key(j.request);
      if (seen.insert(k).second)
        jobs.push_back({&j, k});
      else
        ++sum.duplicates;
    }
  }
  cache::CacheConfig cfg;
  cfg.dir = opts.dir;
  cfg.save_source = opts.save_source;
  const cache::DiskCache disk(opts.dir);

  std::mutex out_mutex;
  std::size_t done = 0;
  auto report = [&](const Keyed& kj, Outcome o, const std::string& detail) {
    std::lock_guard lock(out_mutex);
    ++done;
    (o == Outcome::compiled ? sum.compiled : o == Outcome::cached ? sum.cached : sum.failed)++;
    if (o == Outcome::failed)
      sum.failures.push_back(job_label(*kj.job) + " (entry " + std::to_string(kj.job->entry) +
                             "): " + detail);
    if (opts.progress_bar) {
      if (o == Outcome::failed)
        std::fprintf(stderr, "\r\033[KFAILED %s (entry %zu): %s\n", job_label(*kj.job).c_str(),
                     kj.job->entry, detail.c_str());
      constexpr int kWidth = 30;
      const int filled = int(kWidth * done / jobs.size());
      std::fprintf(stderr, "\r\033[K[%s%s] %zu/%zu  compiled %zu  cached %zu  failed %zu",
                   std::string(filled, '#').c_str(), std::string(kWidth - filled, ' ').c_str(),
                   done, jobs.size(), sum.compiled, sum.cached, sum.failed);
      if (done == jobs.size()) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    } else {
      const char* what = o == Outcome::compiled ? "compiled"
                         : o == Outcome::cached ? "cached  "
                                                : "FAILED  ";
      std::fprintf(opts.out, "%s %s %s%s%s\n", what, job_label(*kj.job).c_str(),
                   kj.key.hex().c_str(), detail.empty() ? "" : ": ", detail.c_str());
      std::fflush(opts.out);
    }
  };

  auto run_one = [&](const Keyed& kj) {
    const PrecompileJob& job = *kj.job;
    const auto path = disk.entry_path(kj.key);
    const cache::EntryMetadata meta{job.kind, job.name, job.request.arch};
    if (cache::read_entry_file(path, kj.key, cache::EntryUse::inspect).binary) {
      if (!cache::read_entry_metadata(opts.dir, kj.key))
        cache::write_entry_metadata(opts.dir, kj.key, meta);
      return report(kj, Outcome::cached, "");
    }
    try {
      cache::compile_cached(job.request, cfg);
    } catch (const kiln::CompileError& e) {
      const std::string what = e.what();
      return report(kj, Outcome::failed,
                    "NVRTC rejected it:\n" + (e.log().empty() ? what : e.log()));
    } catch (const std::exception& e) {
      return report(kj, Outcome::failed, e.what());
    }
    const auto back = cache::read_entry_file(path, kj.key, cache::EntryUse::inspect);
    if (!back.binary)
      return report(kj, Outcome::failed,
                    "compiled, but no valid entry at " + path.string() + " (" +
                        (back.missing ? "no file" : back.problem) + ")");
    cache::write_entry_metadata(opts.dir, kj.key, meta);
    report(kj, Outcome::compiled, "");
  };

  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) run_one(jobs[i]);
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
