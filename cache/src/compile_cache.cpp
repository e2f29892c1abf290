#include "kiln/cache/compile_cache.hpp"

#include <sys/stat.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/disk_cache.hpp"
#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/error.hpp"
#include "posix_file.hpp"

namespace kiln::cache {

CacheStats& stats() {
  static CacheStats s;
  return s;
}

namespace {

// One in-progress compile-or-load; threads asking for the same thing wait on it and share
// its result instead of each taking the file lock in turn.
struct Flight {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::optional<Binary> result;
  std::exception_ptr error;
};

std::mutex flights_mutex;
std::map<std::string, std::shared_ptr<Flight>> flights;

// Which file currently holds an entry: a change after we got the lock means another
// process finished while we waited. (A bad entry that did not change is not re-read, so it
// is logged and counted once.)
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};
std::optional<FileId> file_id(const std::filesystem::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

[[noreturn]] void throw_miss(const CompileRequest& req, const Key& key, const CacheConfig& cfg,
                             const char* note) {
  std::string where = cfg.in_memory_only ? std::string("in memory (KILN_CACHE_IN_MEMORY=1)")
                                         : "at " + cfg.dir.string();
  throw kiln::CacheMissError("kiln: kernel '" + req.kernel_name + "' (key " + key.hex() +
                             ", sm_" + std::to_string(req.arch) + ") is not in the kernel cache " +
                             where + note +
                             ", and KILN_DISALLOW_COMPILE=1 forbids compiling it; precompile "
                             "it into that cache (kiln-cache) or unset KILN_DISALLOW_COMPILE");
}

Binary compile_now(const CompileRequest& req) {
  stats().nvrtc_compiles.fetch_add(1, std::memory_order_relaxed);
  kiln::detail::logger().debug("compiling kernel '{}' for sm_{}", req.kernel_name, req.arch);
  return nvrtc_compile(req);
}

Binary load_or_compile(const CompileRequest& req, const Key& key, const CacheConfig& cfg) {
  if (cfg.in_memory_only) {
    if (cfg.disallow_compile) throw_miss(req, key, cfg, "");
    return compile_now(req);
  }
  DiskCache disk(cfg.dir);
  const auto id_before = file_id(disk.entry_path(key));
  if (auto bin = disk.load(key)) {
    stats().disk_hits.fetch_add(1, std::memory_order_relaxed);
    return std::move(*bin);
  }
  stats().disk_misses.fetch_add(1, std::memory_order_relaxed);
  if (cfg.disallow_compile)
    throw_miss(req, key, cfg, disk.usable() ? "" : " (the folder was refused, see the warning)");
  // A refused or unwritable folder: still give the caller a binary, but never write there.
  if (!disk.prepare_folder(key)) return compile_now(req);

  bool waited = false;
  const auto lock = detail::FileLock::acquire(
      disk.lock_path(key), "kernel '" + req.kernel_name + "' (key " + key.hex() + ")",
      cfg.lock_timeout_s, waited);
  if (waited) stats().lock_waits.fetch_add(1, std::memory_order_relaxed);
  if (const auto id_now = file_id(disk.entry_path(key)); id_now && id_now != id_before) {
    if (auto bin = disk.load(key)) {
      stats().disk_hits.fetch_add(1, std::memory_order_relaxed);
      return std::move(*bin);
    }
  }
  Binary bin = compile_now(req);
  disk.store(key, bin, cfg.save_source ? std::string_view(req.source) : std::string_view{});
  return bin;
}

}  // namespace

Binary compile_cached(const CompileRequest& req, const CacheConfig& cfg) {
  const Key key = cache_key(req);
  // Callers with different configs must not share a flight (one may forbid compiling).
  const std::string flight_id = key.hex() + (cfg.in_memory_only ? 'm' : 'd') +
                                (cfg.disallow_compile ? 'n' : 'y') + (cfg.save_source ? 's' : '-') +
                                cfg.dir.string();
  std::shared_ptr<Flight> flight;
  bool leader = false;
  {
    std::lock_guard lock(flights_mutex);
    auto& slot = flights[flight_id];
    if (!slot) {
      slot = std::make_shared<Flight>();
      leader = true;
    }
    flight = slot;
  }
  if (!leader) {
    stats().thread_waits.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock lock(flight->m);
    flight->cv.wait(lock, [&] { return flight->done; });
    if (flight->error) std::rethrow_exception(flight->error);
    return *flight->result;
  }

  std::optional<Binary> result;
  std::exception_ptr error;
  try {
    result = load_or_compile(req, key, cfg);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard lock(flights_mutex);
    flights.erase(flight_id);
  }
  {
    std::lock_guard lock(flight->m);
    flight->result = result;
    flight->error = error;
    flight->done = true;
  }
  flight->cv.notify_all();
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

}  // namespace kiln::cache
