// Hostile input never hangs, crashes or reads without bound: FIFOs and links where kiln keeps
// its own files, devices named by a manifest, numbers that would wrap, architecture options
// where kiln chooses the architecture.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"
#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/cache_layout.hpp"
#include "kiln/cache/kernel_record.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "manifest.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using kiln::test::line_count;
using kiln::test::q;
using kiln::test::run_cli;
using kiln::test::write_text;

// kiln-cache with a deadline: a hang fails the test (status 137) instead of stalling the suite.
kiln::test::CliResult run_cli_within(const std::string& args, bool stdout_only = false) {
  return kiln::test::run_shell("timeout -s KILL 60 " + std::string(KILN_CACHE_CLI) + " " + args +
                               (stdout_only ? " 2>/dev/null" : " 2>&1"));
}

kiln::cache::CompileRequest tiny(const std::string& tag) {
  kiln::cache::CompileRequest r;
  r.kernel_name = "k";
  r.source = "extern \"C\" __global__ void k(float* x) { x[0] = 1; } // " + tag + "\n";
  r.kind = "raw";
  return r;
}

}  // namespace

TEST_CASE("kiln-cache show neither blocks on a FIFO nor follows a link at the saved source",
          "[tools]") {
  kiln::test::TempDir tmp;
  const fs::path dir = tmp.path() / "c", manifest = tmp.path() / "m.jsonl";
  const auto req = tiny("show");
  write_text(manifest, kiln::cache::record_line(req, true));
  REQUIRE(run_cli("precompile " + q(manifest) + " --arch 90 --cache-dir " + q(dir)).status == 0);
  auto r90 = req;
  r90.arch = 90;
  const auto key = kiln::cache::cache_key(r90);
  const fs::path cu = kiln::cache::CacheLayout(dir).source_path(key);

  REQUIRE(::mkfifo(cu.c_str(), 0600) == 0);
  auto fifo = run_cli_within("show " + key.hex() + " --cache-dir " + q(dir));
  INFO(fifo.output);
  CHECK(fifo.status == 0);  // the entry itself is fine
  CHECK_THAT(fifo.output, Contains("status:   valid") && Contains("FIFO"));

  fs::remove(cu);
  write_text(tmp.path() / "secret", "TOP SECRET CONTENTS\n");
  fs::create_symlink(tmp.path() / "secret", cu);
  auto link = run_cli_within("show " + key.hex() + " --cache-dir " + q(dir));
  INFO(link.output);
  CHECK(link.output.find("TOP SECRET") == std::string::npos);
  CHECK_THAT(link.output, Contains("symbolic link"));
  auto json = run_cli_within("show " + key.hex() + " --json --cache-dir " + q(dir), true);
  CHECK(json.output.find("TOP SECRET") == std::string::npos);
}

TEST_CASE("KILN_CACHE_RECORD at a FIFO never blocks the program and records nothing there",
          "[tools]") {
  kiln::test::TempDir tmp;
  const fs::path fifo = tmp.path() / "record.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto req = tiny("record");
  for (bool reader : {false, true}) {
    INFO("a reader holds the FIFO open: " << reader);
    const int rfd = reader ? ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK) : -1;
    auto done = std::async(std::launch::async, [&] {
      kiln::cache::record_kernel(fifo, req, true);
      return true;
    });
    const bool returned = done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    if (!returned) {
      const int unblock = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // let a writer finish
      FAIL("record_kernel blocked on a FIFO");
      ::close(unblock);
    }
    if (rfd >= 0) {
      char buf[16];
      CHECK(::read(rfd, buf, sizeof buf) <= 0);  // nothing was written into the FIFO
      ::close(rfd);
    }
  }
}

TEST_CASE("a raw manifest entry naming a device is refused without reading it", "[tools]") {
  kiln::test::TempDir tmp;
  const fs::path manifest = tmp.path() / "m.json";
  for (const char* file : {"/dev/zero", "/dev/urandom"}) {
    write_text(manifest,
               std::string(R"([{"kind": "raw", "file": ")") + file + R"(", "name": "k"}])");
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_cli_within("precompile " + q(manifest) + " --arch 90 --cache-dir " +
                                  q(tmp.path() / "c"));
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Contains(file) && Contains("character device"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  }
  // A manifest that is a FIFO or a device is refused the same way.
  const fs::path fifo = tmp.path() / "m.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const fs::path& m : {fifo, fs::path("/dev/zero")}) {
    const auto r =
        run_cli_within("precompile " + q(m) + " --arch 90 --cache-dir " + q(tmp.path() / "c"));
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Contains("not a regular file"));
  }
}

TEST_CASE("manifest numbers out of range are errors, never wrapped into other values", "[tools]") {
  kiln::test::TempDir tmp;
  const std::string ew =
      R"("kind": "elementwise", "in_params": "float32 x", "out_params": "float32 y", "operation": "y = x", "name": "k", "dtypes": ["float32", "float32"])";
  const std::string src = R"("kind": "source", "kernel_name": "k", "source": "x")";
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"[{" + ew + R"(, "max_ndim": 4294967298}])", "field 'max_ndim' is 4294967298, out of range"},
      {"[{" + ew + R"(, "max_ndim": -4294967295}])", "out of range"},
      {"[{" + ew + R"(, "max_ndim": 18446744073709551615}])", "out of range"},
      {"[{" + ew + R"(, "raw_ndim": 33}])", "field 'raw_ndim' is 33"},
      {"[{" + ew + R"(, "scalar_inputs": [4294967296]}])", "scalar_inputs[0]"},
      {"[{" + ew + R"(, "uniform_inputs": [4294967296]}])", "uniform_inputs[0]"},
      {"[{" + ew + R"(, "uniform_inputs": [1]}])", "uniform input 1 is not an input (0..0)"},
      {"[{" + ew + R"(, "scalar_inputs": [0], "uniform_inputs": [0]}])",
       "input 0 is in both scalar_inputs and uniform_inputs"},
      {"[{" + ew + R"(, "layout": {"index_bits": 4294967328}}])", "index_bits"},
      {"[{" + ew + R"(, "layout": {"staged": [64]}}])", "staged[0]"},
      {"[{" + ew + R"(, "layout": {"layout": "tiled", "ndim": 2, "unit_cols": 4294967298}}])",
       "unit_cols"},
      // In range for the field, too wide for float32 (pairs at most).
      {"[{" + ew + R"(, "layout": {"layout": "tiled", "ndim": 2, "unit_cols": 4}}])",
       "layout unit_cols 4 is not possible here"},
      {"[{" + ew + R"(, "max_ndim": 2.5}])", "must be an integer"},
      {R"({"archs": [4294967386], "kernels": []})", "\"archs\"[0]"},
      {R"({"archs": ["sm_52"], "kernels": []})", "supported: "},
      {"[{" + src + R"(, "recorded_arch": 4294967386}])", "recorded_arch"},
  };
  for (const auto& c : cases) {
    write_text(tmp.path() / "m.json", c.text);
    const auto r = run_cli("precompile " + q(tmp.path() / "m.json") + " --arch 90 --cache-dir " +
                           q(tmp.path() / "c"));
    INFO(c.text << "\n->\n" << r.output);
    CHECK(r.status == 2);
    CHECK(line_count(r.output) == 1);
    CHECK_THAT(r.output, Contains(c.expect));
  }
  CHECK(!fs::exists(tmp.path() / "c"));
}

TEST_CASE("an architecture option in a source entry is refused like everywhere else", "[tools]") {
  kiln::test::TempDir tmp;
  for (const char* opt : {"-arch=sm_80", "--gpu-architecture=compute_80", "-code=sm_80"}) {
    write_text(
        tmp.path() / "m.json",
        std::string(R"([{"kind": "source", "kernel_name": "k", "source": "x", "options": [")") +
            opt + R"("]}])");
    const auto r = run_cli("precompile " + q(tmp.path() / "m.json") + " --arch 90 --cache-dir " +
                           q(tmp.path() / "c"));
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Contains(opt) && Contains("entry 1") && Contains("supported: "));
  }
  CHECK(!fs::exists(tmp.path() / "c"));
}

TEST_CASE("arch-specific targets precompile as 90a and record the kernel's need", "[tools]") {
  kiln::test::TempDir tmp;
  const fs::path dir = tmp.path() / "c";
  auto req = tiny("specific");
  req.arch = kiln::cache::arch_specific(90);
  const std::string line = kiln::cache::record_line(req, true);
  CHECK_THAT(line, Contains("\"recorded_arch\":90") && Contains("\"arch_specific\":true"));
  write_text(tmp.path() / "m.jsonl", line);
  // No --arch: the recorded 90, made arch-specific because the entry says the kernel needs it.
  const auto r = run_cli("precompile " + q(tmp.path() / "m.jsonl") + " --cache-dir " + q(dir));
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("sm_90a"));
  CHECK(kiln::cache::scan_cache(dir).valid_entries() == 1);
  const auto list =
      nlohmann::json::parse(kiln::test::run_cli_stdout("list --json --cache-dir " + q(dir)).output);
  CHECK(list[0]["arch"] == 90);
  CHECK(list[0]["arch_specific"] == true);
  CHECK(list[0]["arch_name"] == "sm_90a");
  // --arch 90a for a generic kernel compiles it for sm_90a; an arch with none is refused.
  write_text(tmp.path() / "g.jsonl", kiln::cache::record_line(tiny("generic"), true));
  CHECK(run_cli("precompile " + q(tmp.path() / "g.jsonl") + " --arch 90a --cache-dir " + q(dir))
            .status == 0);
  const auto bad =
      run_cli("precompile " + q(tmp.path() / "g.jsonl") + " --arch 80a --cache-dir " + q(dir));
  CHECK(bad.status == 2);
  CHECK_THAT(bad.output, Contains("sm_80a is not an architecture") && Contains("90a"));
}
