// DiskCache on its own (no NVRTC): layout, atomic writes, permission checks, bad entries.
#include "kiln/cache/disk_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "cache_test_support.hpp"
#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/entry_format.hpp"

using namespace kiln::cache;
using namespace kiln::cache::testing;
namespace fs = std::filesystem;

namespace {
const Key kKey{0xab00000000000001ull, 0x2ull};
const Binary kBin{
    "\x7f"
    "ELFcubin",
    {"_Z1kv"}};
mode_t mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}
}  // namespace

TEST_CASE("disk cache stores one file per entry in 0700 fan-out folders", "[cache]") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "nested" / "kiln";
  DiskCache disk(dir);
  CHECK(disk.entry_path(kKey) == dir / "ab" / "ab000000000000010000000000000002.kbin");
  CHECK_FALSE(disk.load(kKey));  // folder does not exist yet: a plain miss
  disk.store(kKey, kBin, "");
  CHECK(mode_of(dir) == 0700);
  CHECK(mode_of(dir / "ab") == 0700);
  CHECK(mode_of(disk.entry_path(kKey)) == 0600);
  CHECK(read_file(disk.entry_path(kKey)) == encode_entry(kKey, kBin));
  // Nothing but the entry: temp files are renamed away, no source unless asked.
  CHECK(std::distance(fs::directory_iterator(dir / "ab"), fs::directory_iterator()) == 1);
  auto back = disk.load(kKey);
  REQUIRE(back);
  CHECK(*back == kBin);
}

TEST_CASE("disk cache keeps the source beside the binary when asked", "[cache]") {
  TempDir tmp;
  DiskCache disk(tmp.path());
  disk.store(kKey, kBin, "__global__ void k() {}\n");
  CHECK(disk.source_path(kKey) == tmp.path() / "ab" / "ab000000000000010000000000000002.cu");
  CHECK(read_file(disk.source_path(kKey)) == "__global__ void k() {}\n");
}

TEST_CASE("disk cache overwrites an entry atomically with a new file", "[cache]") {
  TempDir tmp;
  DiskCache disk(tmp.path());
  disk.store(kKey, kBin, "");
  struct stat before {};
  REQUIRE(::stat(disk.entry_path(kKey).c_str(), &before) == 0);
  const Binary other{"other", {}};
  disk.store(kKey, other, "");
  struct stat after {};
  REQUIRE(::stat(disk.entry_path(kKey).c_str(), &after) == 0);
  CHECK(before.st_ino != after.st_ino);  // renamed over, never rewritten in place
  CHECK(*disk.load(kKey) == other);
}

TEST_CASE("disk cache ignores, logs and counts a damaged entry", "[cache]") {
  TempDir tmp;
  DiskCache disk(tmp.path());
  disk.store(kKey, kBin, "");
  const auto path = disk.entry_path(kKey);
  const std::string good = read_file(path);
  auto damaged = good;
  damaged[damaged.size() - 2] ^= 0x40;
  for (const std::string& bytes :
       {damaged, good.substr(0, good.size() / 2), std::string("garbage")}) {
    write_file(path, bytes);
    LogCapture log;
    const auto bad_before = stats().bad_entries.load();
    CHECK_FALSE(disk.load(kKey));
    CHECK(stats().bad_entries.load() == bad_before + 1);
    CHECK(log.contains("ignoring kernel cache entry"));
    CHECK(log.contains(path.string()));
  }
}

TEST_CASE("disk cache refuses a folder writable by others and never writes into it", "[cache]") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "open";
  fs::create_directory(dir);
  ::chmod(dir.c_str(), 0777);
  LogCapture log;
  DiskCache disk(dir);
  CHECK_FALSE(disk.usable());
  CHECK(log.contains("writable by group or others"));
  CHECK(log.contains(dir.string()));
  disk.store(kKey, kBin, "src");
  CHECK(fs::is_empty(dir));
  CHECK_FALSE(disk.load(kKey));
}

TEST_CASE("disk cache refuses an entry or fan-out folder writable by others", "[cache]") {
  TempDir tmp;
  DiskCache disk(tmp.path());
  disk.store(kKey, kBin, "");
  LogCapture log;
  ::chmod(disk.entry_path(kKey).c_str(), 0666);
  CHECK_FALSE(disk.load(kKey));
  CHECK(log.contains("refused"));
  ::chmod(disk.entry_path(kKey).c_str(), 0600);
  REQUIRE(disk.load(kKey));
  ::chmod((tmp.path() / "ab").c_str(), 0770);
  CHECK_FALSE(disk.load(kKey));
  CHECK(log.contains((tmp.path() / "ab").string()));
}

// [root]: only root can chown to another user; elsewhere the runner reports it skipped.
TEST_CASE("disk cache refuses a folder or entry owned by another user", "[cache][root]") {
  TempDir tmp;
  DiskCache disk(tmp.path());
  disk.store(kKey, kBin, "");
  LogCapture log;
  REQUIRE(::chown(disk.entry_path(kKey).c_str(), 65534, 65534) == 0);
  CHECK_FALSE(disk.load(kKey));
  CHECK(log.contains("owned by uid 65534"));
  const fs::path other = tmp.path() / "other";
  fs::create_directory(other);
  ::chmod(other.c_str(), 0700);
  REQUIRE(::chown(other.c_str(), 65534, 65534) == 0);
  DiskCache theirs(other);
  CHECK_FALSE(theirs.usable());
  theirs.store(kKey, kBin, "");
  CHECK(fs::is_empty(other));
}

TEST_CASE("disk cache refuses an entry that is a symlink", "[cache]") {
  TempDir tmp;
  DiskCache disk(tmp.path());
  disk.store(kKey, kBin, "");
  const auto path = disk.entry_path(kKey);
  fs::rename(path, tmp.path() / "elsewhere.kbin");
  fs::create_symlink(tmp.path() / "elsewhere.kbin", path);
  LogCapture log;
  CHECK_FALSE(disk.load(kKey));
  CHECK(log.contains("ignoring kernel cache entry"));
}
