#include "kiln/cache/compile_cache.hpp"

#include <sys/stat.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/disk_cache.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
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
  BinarySource source = BinarySource::compiled;
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
  std::string where;
  if (cfg.in_memory_only) {
    where = "in memory (KILN_CACHE_IN_MEMORY=1)";
  } else {
    where = cfg.dir.empty() ? std::string("(no cache folder is set)") : "at " + cfg.dir.string();
    std::string readonly;
    for (const auto& d : cfg.readonly_dirs) readonly += (readonly.empty() ? "" : ", ") + d.string();
    if (!readonly.empty())
      where += ", nor in the read-only caches " + readonly + " (KILN_CACHE_READONLY_DIRS)";
  }
  throw kiln::CacheMissError("kiln: kernel '" + req.kernel_name + "' (key " + key.hex() + ", " +
                             arch_name(req.arch) + ") is not in the kernel cache " + where + note +
                             ", and KILN_DISALLOW_COMPILE=1 forbids compiling it; precompile "
                             "it into that cache (kiln-cache) or unset KILN_DISALLOW_COMPILE");
}

Binary compile_now(const CompileRequest& req, BinarySource& source) {
  stats().nvrtc_compiles.fetch_add(1, std::memory_order_relaxed);
  kiln::detail::logger().debug("compiling kernel '{}' for {}", req.kernel_name,
                               arch_name(req.arch));
  source = BinarySource::compiled;
  return nvrtc_compile(req);
}

Binary load_or_compile(const CompileRequest& req, const Key& key, const CacheConfig& cfg,
                       BinarySource& source) {
  if (cfg.in_memory_only) {
    if (cfg.disallow_compile) throw_miss(req, key, cfg, "");
    return compile_now(req, source);
  }
  // Deployed caches first: looked at, never written, locked or touched.
  for (const auto& dir : cfg.readonly_dirs) {
    if (auto bin = DiskCache(dir, Access::read).load(key)) {
      stats().disk_hits.fetch_add(1, std::memory_order_relaxed);
      source = BinarySource::readonly_disk;
      return std::move(*bin);
    }
  }
  DiskCache disk(cfg.dir);
  const auto id_before = file_id(disk.entry_path(key));
  if (auto bin = disk.load(key)) {
    stats().disk_hits.fetch_add(1, std::memory_order_relaxed);
    source = BinarySource::disk;
    return std::move(*bin);
  }
  stats().disk_misses.fetch_add(1, std::memory_order_relaxed);
  if (cfg.disallow_compile)
    throw_miss(req, key, cfg, disk.usable() ? "" : " (the folder was refused, see the warning)");
  // A refused or unwritable folder: still give the caller a binary, but never write there.
  if (!disk.prepare_folder(key)) return compile_now(req, source);

  bool waited = false;
  const auto lock = detail::FileLock::acquire(
      disk.lock_path(key), "kernel '" + req.kernel_name + "' (key " + key.hex() + ")",
      cfg.lock_timeout_s, waited);
  if (waited) stats().lock_waits.fetch_add(1, std::memory_order_relaxed);
  if (const auto id_now = file_id(disk.entry_path(key)); id_now && id_now != id_before) {
    if (auto bin = disk.load(key)) {
      stats().disk_hits.fetch_add(1, std::memory_order_relaxed);
      source = BinarySource::other_process;
      return std::move(*bin);
    }
  }
  Binary bin = compile_now(req, source);
  if (disk.store(key, bin, cfg.save_source ? std::string_view(req.source) : std::string_view{}) &&
      cfg.max_bytes)
    enforce_size_limit(disk.dir(), *cfg.max_bytes);
  return bin;
}

// Everything in a config that changes what compile_cached does.
std::string compile_cache_flight_id(const Key& key, const CacheConfig& cfg) {
  std::string id = key.hex() + (cfg.in_memory_only ? 'm' : 'd') +
                   (cfg.disallow_compile ? 'n' : 'y') + (cfg.save_source ? 's' : '-') +
                   std::to_string(cfg.max_bytes.value_or(0)) + '\n' + cfg.dir.string();
  for (const auto& d : cfg.readonly_dirs) id += '\n' + d.string();
  return id;
}

}  // namespace

Binary compile_cached(const CompileRequest& req, const CacheConfig& cfg, BinarySource* source) {
  check_request(req);
  const Key key = cache_key(req);
  // Callers with different configs must not share a flight (one may forbid compiling).
  const std::string flight_id = compile_cache_flight_id(key, cfg);
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
    if (source) *source = flight->source;
    return *flight->result;
  }

  std::optional<Binary> result;
  BinarySource from = BinarySource::compiled;
  std::exception_ptr error;
  try {
    result = load_or_compile(req, key, cfg, from);
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
    flight->source = from;
    flight->error = error;
    flight->done = true;
  }
  flight->cv.notify_all();
  if (error) std::rethrow_exception(error);
  if (source) *source = from;
  return std::move(*result);
}

}  // namespace kiln::cache
