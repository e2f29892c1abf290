// The one way kiln opens a file to read: never blocks on a FIFO, never reads a device or an
// unbounded file, never follows a link where the file is kiln's own.
#include "kiln/runtime/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <future>

#include "support/test_support.hpp"

using Catch::Matchers::Contains;
using kiln::read_regular_file;
using kiln::RegularFile;
using kiln::test::TempDir;
namespace fs = std::filesystem;

namespace {
void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// Runs f on a thread and fails (instead of hanging the suite) if it does not return in time.
template <class F>
auto within_seconds(int s, F f) {
  auto r = std::async(std::launch::async, f);
  if (r.wait_for(std::chrono::seconds(s)) != std::future_status::ready) {
    FAIL("blocked for " << s << " s");
  }
  return r.get();
}
}  // namespace

TEST_CASE("regular files are read whole, up to a cap", "[runtime]") {
  TempDir tmp;
  write_file(tmp.path() / "f", "hello");
  std::string why;
  CHECK(read_regular_file(tmp.path() / "f", 100, why) == "hello");
  CHECK_FALSE(read_regular_file(tmp.path() / "f", 4, why));
  CHECK_THAT(why, Contains("larger than the 4-byte limit (5 bytes)"));
  CHECK_FALSE(read_regular_file(tmp.path() / "missing", 100, why));
  CHECK_THAT(why, Contains("No such file"));
  auto f = RegularFile::open(tmp.path() / "missing", {});
  CHECK(f.missing());
}

TEST_CASE("a FIFO is refused at once, never waited on", "[runtime]") {
  TempDir tmp;
  const fs::path fifo = tmp.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string why;
  const bool read = within_seconds(20, [&] { return bool(read_regular_file(fifo, 100, why)); });
  if (!read) {
    CHECK_THAT(why, Contains("FIFO") && Contains("not a regular file"));
  } else {
    // Unblock nothing: it returned, so it did not wait; but it must not have read a FIFO.
    FAIL("a FIFO was read");
  }
}

TEST_CASE("devices are refused without being read", "[runtime]") {
  std::string why;
  CHECK_FALSE(
      within_seconds(20, [&] { return bool(read_regular_file("/dev/zero", 1 << 20, why)); }));
  CHECK_THAT(why, Contains("character device"));
  CHECK_FALSE(read_regular_file("/", 100, why));
  CHECK_THAT(why, Contains("a folder"));
}

TEST_CASE("links are followed only where the user named the path", "[runtime]") {
  TempDir tmp;
  write_file(tmp.path() / "target", "secret");
  fs::create_symlink(tmp.path() / "target", tmp.path() / "link");
  auto own = RegularFile::open(tmp.path() / "link", {.follow_links = false});
  CHECK_FALSE(own.ok());
  CHECK_THAT(own.problem(), Contains("symbolic link"));
  auto named = RegularFile::open(tmp.path() / "link", {.follow_links = true});
  REQUIRE(named.ok());
  CHECK(named.read_all(100) == "secret");
}
