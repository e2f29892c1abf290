// kiln-cache end to end: what it compiles is exactly what the library later looks up, it
// says so only when it is true, and bad input is one line and exit status 2.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "kiln/cache/cache_inventory.hpp"
#include "kiln/cache/cache_key.hpp"
#include "kiln/cache/cache_stats.hpp"
#include "kiln/cache/disk_cache.hpp"
#include "kiln/cache/kernel_record.hpp"
#include "kiln/kiln.hpp"
#include "manifest.hpp"
#include "support/test_support.hpp"

namespace {
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

struct Result {
  int status;
  std::string output;
};

Result run_cli(const std::string& args) {
  std::string cmd = std::string(KILN_CACHE_CLI) + " " + args + " 2>&1";
  Result r{0, ""};
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.output += buf;
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::size_t lines(const std::string& s) {
  return std::size_t(std::count(s.begin(), s.end(), '\n'));
}

const char* kMyKernel =
    "elementwise --in 'float32 x, float32 y' --out 'float32 z' "
    "--op 'z = (x - 2 > y) ? x * y : x + y' --name my_kernel "
    "--dtypes float32,float32,float32 --vector-width 4 --arch 90";

// Two elementwise entries (every layout variant of one binding; an exact layout of two
// bindings with a scalar input) and a recorded source entry.
const char* kManifest = R"({
  "kiln_manifest": 1,
  "kernels": [
    {"kind": "elementwise", "in_params": "float32 x, float32 y", "out_params": "float32 z",
     "operation": "z = (x - 2 > y) ? x * y : x + y", "name": "my_kernel",
     "dtypes": [["float32", "float32", "float32"]], "max_ndim": 2, "index64": false},
    {"kind": "elementwise", "in_params": "T x, T a", "out_params": "T y", "operation": "y = a * x",
     "name": "scale", "dtypes": [["float64", "float64"], ["int32", "int32"]], "scalar_inputs": [1],
     "layout": {"layout": "strided", "ndim": 2}},
    {"kind": "source", "kernel_name": "exact", "made_by": "raw",
     "source": "extern \"C\" __global__ void exact(float* x) { x[threadIdx.x] *= 2.0f; }\n"}
  ]
})";

// Every compile request the manifest stands for, as the library would build it.
std::vector<kiln::cache::CompileRequest> requests_of(const fs::path& manifest,
                                                     std::initializer_list<int> archs) {
  const auto m = kiln::tools::read_manifest(manifest);
  std::vector<kiln::cache::CompileRequest> out;
  for (int arch : archs)
    for (const auto& e : m.entries)
      for (auto& j : kiln::tools::expand_entry(m, e, arch)) out.push_back(j.request);
  return out;
}

std::size_t valid_entries(const fs::path& dir) {
  return kiln::cache::scan_cache(dir).valid_entries();
}

// A cache folder with the sample manifest precompiled for sm_80 and sm_90.
struct Precompiled {
  kiln::test::TempDir tmp;
  fs::path dir = tmp.path() / "cache";
  fs::path manifest = tmp.path() / "kernels.json";
  std::vector<kiln::cache::CompileRequest> reqs;
  Result run;
  Precompiled() {
    write_file(manifest, kManifest);
    reqs = requests_of(manifest, {80, 90});
    run = run_cli("precompile " + q(manifest) + " --arch 80,90 --jobs 2 --cache-dir " + q(dir));
  }
};

}  // namespace

TEST_CASE("kiln-cache precompile fills a cache for sm_80 and sm_90 that the library reads back",
          "[tools]") {
  Precompiled p;
  INFO(p.run.output);
  REQUIRE(p.run.status == 0);
  // my_kernel: 3 contiguous widths + 2 strided ndims (float32: one width) + 47 gathered (ndim
  // 1: x, y or neither laid out as the output; ndim 2: groups of 1, 2 and 4, the inputs read
  // whole, constant along the rows and laid out as the output sharing none: 8 + 15 + 15, and
  // 3 + 3 for rows of a vector or more) + 14 tiled (row tiles by one element and by pairs; x,
  // y, both transposed, each side by one element or by pairs: 4 unit pairs) + 6 tiled as runs
  // (x, y, both transposed, the 2 unit pairs with rows by one each) + 21 interleaved
  // (ndim 2: short extents 2..8, widths 1, 2 and 4) (32-bit only); scale: 2 exact; source: 1.
  REQUIRE(p.reqs.size() == 2 * (93 + 2 + 1));
  CHECK_THAT(
      p.run.output,
      Contains("192 compiled, 0 loaded (compiled by another process), 0 already cached, 0 failed"));
  const kiln::cache::DiskCache disk(p.dir);
  for (const auto& r : p.reqs) CHECK(disk.load(kiln::cache::cache_key(r)).has_value());
  CHECK(valid_entries(p.dir) == p.reqs.size());

  // A second run finds them all.
  auto again = run_cli("precompile " + q(p.manifest) + " --arch 80,90 --cache-dir " + q(p.dir));
  CHECK(again.status == 0);
  CHECK_THAT(
      again.output,
      Contains("0 compiled, 0 loaded (compiled by another process), 192 already cached, 0 failed"));

  // The library, with compiling forbidden, finds my_kernel's contiguous sm_90 variant.
  kiln::test::ScopedEnv env("KILN_CACHE_DIR", p.dir.string());
  kiln::test::ScopedEnv forbid("KILN_DISALLOW_COMPILE", "1");
  kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = (x - 2 > y) ? x * y : x + y",
                            "my_kernel");
  const kiln::dtype f32[] = {kiln::float32, kiln::float32, kiln::float32};
  auto compiles = kiln::cache::stats().nvrtc_compiles.load();
  CHECK(k.compile_for(k.make_spec(f32, {.vector_width = 4}), 90).cubin.size() > 0);
  CHECK(kiln::cache::stats().nvrtc_compiles.load() == compiles);
  CHECK_THROWS_AS(k.compile_for(k.make_spec(f32, {.index_bits = 64}), 90), kiln::CacheMissError);
}

TEST_CASE("kiln-cache list, stats and show describe entries by kind, name and arch", "[tools]") {
  Precompiled p;
  REQUIRE(p.run.status == 0);
  auto list = run_cli("list --json --cache-dir " + q(p.dir));
  REQUIRE(list.status == 0);
  const auto j = nlohmann::json::parse(list.output);
  REQUIRE(j.size() == 192);
  std::map<int, int> per_arch;
  std::map<std::string, int> per_name;
  for (const auto& e : j) {
    CHECK(e["valid"] == true);
    per_arch[e["arch"].get<int>()]++;
    per_name[e["name"].get<std::string>()]++;
  }
  CHECK(per_arch == std::map<int, int>{{80, 96}, {90, 96}});
  CHECK(per_name == std::map<std::string, int>{{"my_kernel", 186}, {"scale", 4}, {"exact", 2}});

  auto text = run_cli("list --cache-dir " + q(p.dir));
  CHECK(text.status == 0);
  CHECK(lines(text.output) == 193);
  CHECK_THAT(text.output, Contains("elementwise") && Contains("sm_80") && Contains("my_kernel"));

  auto stats = run_cli("stats --json --cache-dir " + q(p.dir));
  REQUIRE(stats.status == 0);
  const auto s = nlohmann::json::parse(stats.output);
  CHECK(s["entries"] == 192);
  CHECK(s["by_arch"]["sm_80"]["entries"] == 96);
  CHECK(s["by_kind"]["elementwise"]["entries"] == 190);
  CHECK(s["by_kind"]["raw"]["entries"] == 2);  // the source entry's made_by
  CHECK_THAT(run_cli("stats --cache-dir " + q(p.dir)).output, Contains("entries: 192"));

  const std::string key = j[0]["key"];
  auto show = run_cli("show " + key.substr(0, 10) + " --cache-dir " + q(p.dir));
  CHECK(show.status == 0);
  CHECK_THAT(show.output,
             Contains(key) && Contains("status:   valid") && Contains("source:   not saved"));
  CHECK(run_cli("show 0000zz --cache-dir " + q(p.dir)).status == 2);
  CHECK(run_cli("show ffffffffffffffffffffffffffffffff --cache-dir " + q(p.dir)).status == 2);

  // --save-source keeps the source, and show prints it with line numbers.
  kiln::test::TempDir other;
  REQUIRE(run_cli("precompile " + q(p.manifest) + " --arch 90 --save-source --cache-dir " +
                  q(other.path()))
              .status == 0);
  const auto key90 = kiln::cache::cache_key(p.reqs.back()).hex();
  auto shown = run_cli("show " + key90 + " --cache-dir " + q(other.path()));
  CHECK_THAT(shown.output, Contains("exact(float* x)") && Contains("1 | extern"));
}

TEST_CASE(
    "kiln-cache verify catches damaged entries, never counts a symlink, and --fix removes them",
    "[tools]") {
  Precompiled p;
  REQUIRE(p.run.status == 0);
  CHECK(run_cli("verify --cache-dir " + q(p.dir)).status == 0);
  const kiln::cache::DiskCache disk(p.dir);
  const auto e0 = disk.entry_path(kiln::cache::cache_key(p.reqs[0]));
  const auto e1 = disk.entry_path(kiln::cache::cache_key(p.reqs[1]));
  const auto e2 = disk.entry_path(kiln::cache::cache_key(p.reqs[2]));
  {  // flip a payload byte
    std::fstream f(e0, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a' ^ char(f.peek()));
  }
  fs::resize_file(e1, 40);  // truncated inside the header
  fs::remove(e2);
  fs::create_symlink("/etc/passwd", e2);  // a link is never an entry
  fs::create_directories(p.dir / "ab");
  write_file(p.dir / "ab" / "not-kiln.txt", "x");
  fs::create_directories(p.dir / "zz");

  auto stats = run_cli("stats --json --cache-dir " + q(p.dir));
  CHECK(nlohmann::json::parse(stats.output)["entries"] == 189);
  auto v = run_cli("verify --cache-dir " + q(p.dir));
  CHECK(v.status == 1);
  CHECK_THAT(v.output, Contains("payload checksum mismatch") && Contains("truncated") &&
                           Contains("symbolic link, not an entry") &&
                           Contains("189 valid entries, 3 bad"));
  auto fixed = run_cli("verify --fix --cache-dir " + q(p.dir));
  CHECK(fixed.status == 0);
  CHECK_THAT(fixed.output, Contains("removed 3 bad entries"));
  CHECK(fs::exists("/etc/passwd"));
  CHECK(!fs::exists(fs::symlink_status(e2)));
  CHECK(run_cli("verify --cache-dir " + q(p.dir)).status == 0);
  CHECK(valid_entries(p.dir) == 189);
  // Strays are reported but left alone: they are not kiln's.
  CHECK(fs::exists(p.dir / "ab" / "not-kiln.txt"));
}

TEST_CASE("kiln-cache prune removes least recently used entries, never a busy one, and stale files",
          "[tools]") {
  Precompiled p;
  REQUIRE(p.run.status == 0);
  const kiln::cache::DiskCache disk(p.dir);
  // Age three entries by ten days.
  std::vector<fs::path> old;
  for (int i = 0; i < 3; ++i) old.push_back(disk.entry_path(kiln::cache::cache_key(p.reqs[i])));
  for (const auto& e : old) {
    const timespec t[2] = {{::time(nullptr) - 10 * 86400, 0}, {::time(nullptr) - 10 * 86400, 0}};
    REQUIRE(::utimensat(AT_FDCWD, e.c_str(), t, 0) == 0);
  }
  // Another process "compiling" the first one holds its lock.
  const int busy =
      ::open(disk.lock_path(kiln::cache::cache_key(p.reqs[0])).c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(::flock(busy, LOCK_EX) == 0);
  // A temp file left by a dead writer.
  const auto temp = old[1].string() + ".tmp.999999999.0";
  write_file(temp, "partial");

  auto r = run_cli("prune --older-than 7d --cache-dir " + q(p.dir));
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Contains("removed 2 entries") && Contains("kept 1 in use"));
  CHECK(fs::exists(old[0]));
  CHECK(!fs::exists(old[1]));
  CHECK(!fs::exists(temp));
  CHECK(fs::exists(disk.lock_path(kiln::cache::cache_key(p.reqs[0]))));
  CHECK(!fs::exists(disk.lock_path(kiln::cache::cache_key(p.reqs[5]))));  // stale: nobody held it
  ::close(busy);

  // --max-size: the most recently used fit, the oldest go first.
  const auto before = kiln::cache::scan_cache(p.dir);
  auto sized = run_cli("prune --max-size 20k --cache-dir " + q(p.dir));
  CHECK(sized.status == 0);
  const auto after = kiln::cache::scan_cache(p.dir);
  CHECK(after.entry_bytes() <= 20 * 1024);
  CHECK(after.valid_entries() > 0);
  CHECK(after.valid_entries() < before.valid_entries());
  CHECK(!fs::exists(old[0]));  // the oldest

  CHECK(run_cli("prune --cache-dir " + q(p.dir)).status == 2);  // needs a limit
  CHECK(run_cli("prune --max-size lots --cache-dir " + q(p.dir)).status == 2);
  CHECK(run_cli("prune --older-than 3 --cache-dir " + q(p.dir)).status == 2);

  auto cleared = run_cli("clear --cache-dir " + q(p.dir));
  CHECK(cleared.status == 0);
  CHECK(valid_entries(p.dir) == 0);
  for (const auto& f : kiln::cache::scan_cache(p.dir).files)
    CHECK(f.type == kiln::cache::CacheFileType::stray);
  CHECK_THAT(run_cli("stats --cache-dir " + q(p.dir)).output, Contains("entries: 0"));
}

TEST_CASE("two kiln-cache precompile runs into one folder at once both succeed", "[tools]") {
  kiln::test::TempDir tmp;
  const auto manifest = tmp.path() / "kernels.json";
  write_file(manifest, kManifest);
  const std::string cmd =
      "precompile " + q(manifest) + " --arch 90 --jobs 2 --cache-dir " + q(tmp.path() / "c");
  auto a = std::async(std::launch::async, [&] { return run_cli(cmd); });
  auto b = std::async(std::launch::async, [&] { return run_cli(cmd); });
  const Result ra = a.get(), rb = b.get();
  INFO(ra.output << rb.output);
  CHECK(ra.status == 0);
  CHECK(rb.status == 0);
  CHECK(valid_entries(tmp.path() / "c") == 96);
  CHECK(run_cli("verify --cache-dir " + q(tmp.path() / "c")).status == 0);
}

TEST_CASE("kiln-cache precompile reports a kernel that fails with its log, goes on, and exits 1",
          "[tools]") {
  kiln::test::TempDir tmp;
  const auto manifest = tmp.path() / "k.json";
  write_file(manifest, R"([
    {"kind": "elementwise", "in_params": "float32 x", "out_params": "float32 y", "operation": "y = x +* 1",
     "name": "broken", "dtypes": [["float32", "float32"]], "layout": {}},
    {"kind": "elementwise", "in_params": "float32 x", "out_params": "float32 y", "operation": "y = x + 1",
     "name": "fine", "dtypes": [["float32", "float32"]], "layout": {}}])");
  auto r = run_cli("precompile " + q(manifest) + " --arch 90 --cache-dir " + q(tmp.path() / "c"));
  CHECK(r.status == 1);
  CHECK_THAT(
      r.output,
      Contains("operation(1)") &&
          Contains(
              "1 compiled, 0 loaded (compiled by another process), 0 already cached, 1 failed") &&
          Contains("failed: broken"));
  CHECK(valid_entries(tmp.path() / "c") == 1);
}

TEST_CASE("kiln-cache rejects bad manifests with the file, the place and the entry", "[tools]") {
  kiln::test::TempDir tmp;
  const auto dir = tmp.path() / "c";
  auto precompile = [&](const std::string& text) {
    const auto m = tmp.path() / "m.json";
    write_file(m, text);
    return run_cli("precompile " + q(m) + " --arch 90 --cache-dir " + q(dir));
  };
  const std::string ew =
      R"("kind": "elementwise", "in_params": "float32 x", "out_params": "float32 y", "operation": "y = x", "name": "k")";
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"{\"kernels\": [\n  {\"kind\": \"elementwise\",\n   \"name\": x}]}",
       "m.json:3:12: JSON syntax error"},
      {"", "m.json:1:1: JSON syntax error"},
      {R"({"kernels": [{"kind": "source", "kernel_name": "a", "source": "x"}, {"kind": "tensor_core"}]})",
       "entry 2 (tensor_core '#2'): unknown kind 'tensor_core'"},
      {"[{" + ew + R"(, "dtypes": [["float33", "float32"]]}])",
       "entry 1 (elementwise 'k'): unknown dtype 'float33'"},
      {"[{" + ew + R"(, "dtypes": [["float32", "float32"]], "opration": "y = 2"}])",
       "entry 1 (elementwise 'k'): unknown field 'opration'"},
      {"[{" + ew + "}]", "entry 1 (elementwise 'k'): missing field 'dtypes'"},
      {"[{" + ew + R"(, "dtypes": "float32"}])", "field 'dtypes' must be"},
      {"[{" + ew + R"(, "dtypes": [["float32", "float32"]], "layout": {"layout": "diagonal"}}])",
       "'diagonal'"},
      {"[{" + ew + R"(, "dtypes": [["float32", "float32"]]}, {"kind": "reduction", "name": "s"}])",
       "entry 2 (reduction 's'): missing field 'in_params'"},
      {R"([{"kind": "raw", "name": "r"}])", "give exactly one of 'code' and 'file'"},
      {R"([{"kind": "expression"}])",
       "kind 'expression' cannot be precompiled from a manifest entry"},
      {R"([{"name": "k"}])", "entry 1: no \"kind\""},
      {R"([42])", "entry 1: an entry is a JSON object"},
      {R"({"kernels": [], "kernals": []})", "unknown top-level field 'kernals'"},
      {R"({"kiln_manifest": 7, "kernels": []})", "\"kiln_manifest\": 7"},
      {"{\"kind\": \"source\", \"kernel_name\": \"a\", \"source\": \"x\"}\n{\"kind\": \"source\", "
       "oops}\n",
       "m.json:2:"},
      {R"("just a string")", "a manifest is a JSON object"},
      // Past a double's range: nlohmann throws out_of_range, not a syntax error.
      {"[{" + ew + R"(, "dtypes": [["float32", "float32"]], "max_ndim": 42E4967298}])",
       "m.json: number overflow parsing '42E4967298'"},
  };
  for (const auto& c : cases) {
    auto r = precompile(c.text);
    INFO(c.text << "\n->\n" << r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Contains(c.expect));
    CHECK(lines(r.output) == 1);
  }
  CHECK(!fs::exists(dir));  // nothing was compiled or created for a bad manifest

  auto missing =
      run_cli("precompile " + q(tmp.path() / "nope.json") + " --arch 90 --cache-dir " + q(dir));
  CHECK(missing.status == 2);
  CHECK_THAT(missing.output, Contains("nope.json: cannot open the manifest"));
  auto folder = run_cli("precompile " + q(tmp.path()) + " --arch 90 --cache-dir " + q(dir));
  CHECK(folder.status == 2);
}

TEST_CASE("a number past a double's range is a manifest error, set aside by line with keep_going",
          "[tools]") {
  using kiln::tools::ManifestError;
  using kiln::tools::parse_manifest;
  const std::string ok = R"({"kind": "source", "kernel_name": "a", "source": "x"})";
  const std::string big =
      R"({"kind": "source", "kernel_name": "b", "source": "x", "recorded_arch": 1E400})";
  KILN_CHECK_THROWS(parse_manifest(big, "m.json", false), ManifestError,
                    Contains("m.json: number overflow parsing '1E400'"));
  // JSON lines: the entry of that line, by its line number.
  const auto kept = parse_manifest(ok + "\n" + big + "\n", "m.json", true);
  CHECK(kept.entries.size() == 1);
  REQUIRE(kept.invalid.size() == 1);
  CHECK_THAT(kept.invalid[0], Contains("m.json:2: number overflow parsing '1E400'"));
  KILN_CHECK_THROWS(parse_manifest(ok + "\n" + big + "\n", "m.json", false), ManifestError,
                    Contains("m.json:2: number overflow parsing '1E400'"));
  // On the first line nothing says the file is JSON lines: the file is refused.
  KILN_CHECK_THROWS(parse_manifest(big + "\n" + ok + "\n", "m.json", true), ManifestError,
                    Contains("m.json: number overflow parsing '1E400'"));
}

TEST_CASE("kiln-cache refuses cache folders it cannot write or that programs would not read",
          "[tools]") {
  kiln::test::TempDir tmp;
  const auto manifest = tmp.path() / "kernels.json";
  write_file(manifest, kManifest);
  auto precompile = [&](const fs::path& dir) {
    return run_cli("precompile " + q(manifest) + " --arch 90 --cache-dir " + q(dir));
  };
  auto one_line_error = [](const Result& r, const char* expect) {
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(lines(r.output) == 1);
    CHECK_THAT(r.output, Contains(expect));
    CHECK(r.output.find("compiled") == std::string::npos);
  };
  write_file(tmp.path() / "file", "x");
  one_line_error(precompile(tmp.path() / "file"), "is not a folder");
  one_line_error(precompile(tmp.path() / "file" / "cache"), "is a file, not a folder");
  fs::create_directory(tmp.path() / "open");
  fs::permissions(tmp.path() / "open", fs::perms::all);
  one_line_error(precompile(tmp.path() / "open"), "writable by group or others");
  {
    kiln::test::ScopedEnv mem("KILN_CACHE_IN_MEMORY", "1");
    one_line_error(precompile(tmp.path() / "fresh"), "KILN_CACHE_IN_MEMORY=1");
  }
  fs::create_directory(tmp.path() / "ro");
  fs::permissions(tmp.path() / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() == 0) {
    // root writes anyway: the entries really are there, so success is the truth.
    CHECK(precompile(tmp.path() / "ro").status == 0);
    CHECK(valid_entries(tmp.path() / "ro") == 96);
    fs::create_directory(tmp.path() / "theirs");
    REQUIRE(::chown((tmp.path() / "theirs").c_str(), 65534, 65534) == 0);
    one_line_error(precompile(tmp.path() / "theirs"), "owned by uid 65534");
  } else {
    one_line_error(precompile(tmp.path() / "ro"), "cannot write into cache folder");
  }
  fs::permissions(tmp.path() / "ro", fs::perms::owner_all);

  // Inspection commands say the same about a folder that is a file.
  for (const char* cmd : {"list", "stats", "verify", "clear", "prune --max-size 1G"}) {
    auto r = run_cli(std::string(cmd) + " --cache-dir " + q(tmp.path() / "file"));
    INFO(cmd << ": " << r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Contains("is not a folder"));
  }
  // A missing folder is an empty cache, not an error, and is not created by looking.
  CHECK_THAT(run_cli("stats --cache-dir " + q(tmp.path() / "none")).output, Contains("entries: 0"));
  CHECK(!fs::exists(tmp.path() / "none"));
}

TEST_CASE("kiln-cache names the archs NVRTC supports for a bad --arch, and parse errors exit 2",
          "[tools]") {
  kiln::test::TempDir tmp;
  const auto manifest = tmp.path() / "kernels.json";
  write_file(manifest, kManifest);
  for (const char* arch : {"0", "52", "999", "abc", "90,52"}) {
    auto r = run_cli("precompile " + q(manifest) + " --arch " + arch + " --cache-dir " +
                     q(tmp.path() / "c"));
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(lines(r.output) == 1);
    CHECK_THAT(r.output, Contains("supported: ") && Contains("90"));
  }
  CHECK(run_cli("").status == 2);
  CHECK(run_cli("no-such-command").status == 2);
  CHECK(run_cli("precompile").status == 2);
  CHECK(run_cli("list --no-such-flag").status == 2);
  CHECK(run_cli("precompile " + q(manifest) + " --jobs x").status == 2);
  CHECK(run_cli("precompile " + q(manifest) + " --jobs 0 --arch 90").status == 2);
  // Manifests without archs and without --arch: say how to name one.
  write_file(tmp.path() / "noarch.json",
             R"([{"kind": "source", "kernel_name": "a", "source": "x"}])");
  auto none = run_cli("precompile " + q(tmp.path() / "noarch.json") + " --cache-dir " +
                      q(tmp.path() / "c"));
  CHECK(none.status == 2);
  CHECK_THAT(none.output, Contains("pass --arch"));
  auto help = run_cli("--help");
  CHECK(help.status == 0);
  CHECK_THAT(help.output,
             Contains("Exit status: 0 ok; 1 some kernels failed") && Contains("precompile"));
  CHECK(run_cli("prune --help").status == 0);
  auto version = run_cli("--version");
  CHECK(version.status == 0);
  CHECK_THAT(version.output, Contains("kiln-cache ") && Contains("NVRTC"));
}

TEST_CASE("the golden manifest parses; every kind, in format 1", "[tools]") {
  const fs::path golden = fs::path(KILN_TEST_SOURCE_DIR) / "tools" / "golden" / "manifest_v1.json";
  const auto m = kiln::tools::read_manifest(golden);
  CHECK(m.archs == std::vector<int>{80, 90});
  std::vector<std::string> kinds;
  for (const auto& e : m.entries) kinds.push_back(e.kind);
  CHECK(kinds == std::vector<std::string>{"elementwise", "elementwise", "reduction", "raw",
                                          "expression", "source"});
  // Every kind the format defines has a row in the dispatch table.
  std::vector<std::string> table;
  for (const auto& k : kiln::tools::manifest_kinds()) table.emplace_back(k.kind);
  CHECK(table ==
        std::vector<std::string>{"elementwise", "reduction", "raw", "expression", "source"});

  // Every layout variant (float32 strided: one width; gathered; tiled: row tiles by one element
  // and by pairs, x, y or both transposed with 4 unit pairs, each with none, one (from 3 dims)
  // or both (4 dims) sides over two axes, and as runs (rows by one) at each of the 3 tiled
  // dims; packed ndim 3 and 4; interleaved ndim 2..4, short extents 2..8, widths 1, 2, 4), the
  // docs' 654
  // (docs/manifest.md).
  CHECK(kiln::tools::expand_entry(m, m.entries[0], 90).size() ==
        2 * (3 + 4 + 135 + 3 * 2 + 3 * 4 * (1 + 3 + 4) + 3 * 3 * 2 + 2 + 3 * 7 * 3));
  const auto scale = kiln::tools::expand_entry(m, m.entries[1], 80);
  REQUIRE(scale.size() == 2);  // two bindings, one exact layout
  CHECK(scale[0].request.arch == 80);
  CHECK(scale[0].variant == "strided ndim 2 i32");
  CHECK_THAT(scale[0].request.source,
             Contains("SCALE_VERSION"));  // user -D options become #defines
  const auto exact = kiln::tools::expand_entry(m, m.entries[5], 90);
  REQUIRE(exact.size() == 1);
  CHECK(exact[0].request.kernel_name == "exact");
  CHECK(exact[0].kind == "elementwise");
  // A reduction: every strategy and index width its ahead-of-time entry point lists.
  const auto sums = kiln::tools::expand_entry(m, m.entries[2], 90);
  CHECK(sums.size() > 4);
  for (const auto& j : sums) CHECK(j.request.kind == "reduction");
  // A raw module: one compile keeping both template instantiations.
  const auto fills = kiln::tools::expand_entry(m, m.entries[3], 90);
  REQUIRE(fills.size() == 1);
  CHECK(fills[0].request.name_expressions ==
        std::vector<std::string>{"fill<float>", "fill<double>"});
  CHECK(fills[0].request.kind == "raw");
  // Expression text is not parsed: the line says to record the program instead.
  KILN_CHECK_THROWS(kiln::tools::expand_entry(m, m.entries[4], 90), kiln::tools::ManifestError,
                    Contains("KILN_CACHE_RECORD"));
  // An exact tiled layout names its transposed parameters.
  const auto tm = kiln::tools::parse_manifest(R"({"kiln_manifest": 1, "kernels": [
    {"kind": "elementwise", "in_params": "float32 x, float32 y", "out_params": "float32 z",
     "operation": "z = x + y", "name": "tadd", "dtypes": ["float32", "float32"],
     "layout": {"layout": "tiled", "ndim": 2, "staged": [0]}}]})",
                                              "tiled.json");
  const auto tiled = kiln::tools::expand_entry(tm, tm.entries[0], 90);
  REQUIRE(tiled.size() == 1);
  CHECK(tiled[0].variant == "tiled staged 0 i32");
  CHECK_THAT(tiled[0].request.source, Contains("kiln_sm_x["));
  // float16 by eights (16 bytes per access), down the rows of the staged operand too.
  const auto hm = kiln::tools::parse_manifest(R"({"kiln_manifest": 1, "kernels": [
    {"kind": "elementwise", "in_params": "float16 x, float16 y", "out_params": "float16 z",
     "operation": "z = x + y", "name": "hadd", "dtypes": ["float16", "float16"],
     "layout": {"layout": "tiled", "ndim": 2, "staged": [0], "unit_cols": 8, "unit_rows": 8}}]})",
                                              "tiled16.json");
  const auto eights = kiln::tools::expand_entry(hm, hm.entries[0], 90);
  REQUIRE(eights.size() == 1);
  CHECK(eights[0].variant == "tiled staged 0 cols by 8 rows by 8 i32");
  CHECK_THAT(eights[0].request.source, Contains("kiln_load<8>(kiln_u,"));
  // An exact gathered layout with whole rows of int8 names the inputs that read whole vectors.
  const auto gm = kiln::tools::parse_manifest(R"({"kiln_manifest": 1, "kernels": [
    {"kind": "elementwise", "in_params": "int8 x, int8 y", "out_params": "int8 z",
     "operation": "z = x + y", "name": "gadd", "dtypes": ["int8", "int8"],
     "layout": {"layout": "gathered", "ndim": 3, "vector_width": 16, "unit_cols": 16,
                "staged": [1]}}]})",
                                              "gathered.json");
  const auto gathered = kiln::tools::expand_entry(gm, gm.entries[0], 90);
  REQUIRE(gathered.size() == 1);
  CHECK(gathered[0].variant == "gathered ndim 3 w16 groups of 16, whole groups 1 i32");
  CHECK_THAT(gathered[0].request.source, Contains("kiln_load<16>(kiln_w, "));
  // Inputs constant along the rows and laid out as the output, rows of a vector or more.
  const auto cm = kiln::tools::parse_manifest(R"({"kiln_manifest": 1, "kernels": [
    {"kind": "elementwise", "in_params": "float32 x, float32 m", "out_params": "float32 z",
     "operation": "z = x - m", "name": "center", "dtypes": ["float32", "float32"],
     "layout": {"layout": "gathered", "ndim": 3, "vector_width": 4, "row_constant": [1],
                "as_output": [0], "long_rows": true}}]})",
                                              "constants.json");
  const auto centered = kiln::tools::expand_entry(cm, cm.entries[0], 90);
  REQUIRE(centered.size() == 1);
  CHECK(centered[0].variant ==
        "gathered ndim 3 w4 long rows, row constants 1, as the output 0 i32");
  CHECK_THAT(centered[0].request.source, Contains("const bool kiln_here"));
  // An input the program passes as a one-element array (x - x.mean()): its own variants, each
  // reading it once; a float64 scale of float16 arrays keeps the arrays' 16-byte vectors.
  const auto um = kiln::tools::parse_manifest(R"({"kiln_manifest": 1, "kernels": [
    {"kind": "elementwise", "in_params": "T x, T m", "out_params": "T z", "operation": "z = x - m",
     "name": "minus_mean", "dtypes": ["float16", "float16"], "uniform_inputs": [1]},
    {"kind": "elementwise", "in_params": "float16 x, float64 s", "out_params": "float16 z",
     "operation": "z = x * s", "name": "wide_scale", "dtypes": ["float16", "float64"],
     "scalar_inputs": [1], "layout": {"vector_width": 8}}]})",
                                              "uniform.json");
  const auto minus_mean = kiln::tools::expand_entry(um, um.entries[0], 90);
  REQUIRE(!minus_mean.empty());
  for (const auto& j : minus_mean) CHECK_THAT(j.variant, Contains(", one element 1 i"));
  CHECK(minus_mean.front().variant == "contiguous w1, one element 1 i32");
  const auto wide_scale = kiln::tools::expand_entry(um, um.entries[1], 90);
  REQUIRE(wide_scale.size() == 1);
  CHECK(wide_scale[0].variant == "contiguous w8 i32");
  // The sample manifest parses and expands too.
  const auto samples = kiln::tools::read_manifest(fs::path(KILN_TEST_SOURCE_DIR) / ".." /
                                                  "samples" / "kernels.json");
  for (const auto& e : samples.entries) CHECK(!kiln::tools::expand_entry(samples, e, 90).empty());
}

TEST_CASE("record mode lines round-trip; record, precompile into a fresh folder, every key present",
          "[tools]") {
  kiln::test::TempDir tmp;
  const auto record = tmp.path() / "recorded.jsonl";
  kiln::ElementwiseKernel k("T x, T y", "T z", "z = x * y + 1", "fma1",
                            {.preamble = "// \"quoted\" \\ \t\n"});
  auto reqs = k.compile_requests({.dtypes = {kiln::float32, kiln::float32}, .max_ndim = 2}, 90);
  auto more = k.compile_requests(
      {.dtypes = {kiln::int64, kiln::int64}, .max_ndim = 1, .index64 = false}, 90);
  reqs.insert(reqs.end(), more.begin(), more.end());
  reqs.push_back({.source = "template <class T> __global__ void f(T* x) { x[0] = T(1); }",
                  .kernel_name = "f",
                  .options = {"-std=c++17"},
                  .arch = 90,
                  .name_expressions = {"f<float>", "f<double>"},
                  .kind = "raw"});
  // Several threads record at once (each appends whole lines under the flock).
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = std::size_t(t); i < reqs.size(); i += 4)
        kiln::cache::record_kernel(record, reqs[i], i % 2);
    });
  for (auto& t : threads) t.join();

  const auto m = kiln::tools::read_manifest(record);
  REQUIRE(m.entries.size() == reqs.size());
  CHECK(kiln::tools::recorded_archs(m) == std::vector<int>{90});
  for (const auto& e : m.entries) {
    CHECK(e.kind == "source");
    CHECK(e.line == e.number);
  }
  // The same lines as a JSON array read the same.
  std::string array = "[";
  for (const auto& r : reqs)
    array += (array.size() > 1 ? "," : "") + kiln::cache::record_line(r, true);
  write_file(tmp.path() / "array.json", array + "]");
  CHECK(kiln::tools::read_manifest(tmp.path() / "array.json").entries.size() == reqs.size());

  // No --arch: the recorded one (sm_90).
  const auto dir = tmp.path() / "fresh";
  auto r = run_cli("precompile " + q(record) + " --jobs 2 --cache-dir " + q(dir));
  INFO(r.output);
  REQUIRE(r.status == 0);
  const kiln::cache::DiskCache disk(dir);
  for (const auto& req : reqs) CHECK(disk.load(kiln::cache::cache_key(req)).has_value());
  // The name expressions came through: their lowered names are in the entry.
  CHECK(disk.load(kiln::cache::cache_key(reqs.back()))->lowered_names.size() == 2);
  // And for another arch, keyed for that arch.
  REQUIRE(run_cli("precompile " + q(record) + " --arch 80 --cache-dir " + q(dir)).status == 0);
  auto r80 = reqs.front();
  r80.arch = 80;
  CHECK(disk.load(kiln::cache::cache_key(r80)).has_value());
}

TEST_CASE("kiln-cache elementwise precompiles one specialisation the library then finds",
          "[tools]") {
  kiln::test::TempDir dir;
  kiln::test::ScopedEnv env("KILN_CACHE_DIR", dir.path().string());
  auto r = run_cli(kMyKernel);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("compiled my_kernel for sm_90"));
  CHECK_THAT(run_cli(kMyKernel).output, Contains("found my_kernel"));

  kiln::test::ScopedEnv forbid("KILN_DISALLOW_COMPILE", "1");
  kiln::ElementwiseKernel k("float32 x, float32 y", "float32 z", "z = (x - 2 > y) ? x * y : x + y",
                            "my_kernel");
  const kiln::dtype f32[] = {kiln::float32, kiln::float32, kiln::float32};
  auto compiles = kiln::cache::stats().nvrtc_compiles.load();
  CHECK(k.compile_for(k.make_spec(f32, {.vector_width = 4}), 90).cubin.size() > 0);
  CHECK(kiln::cache::stats().nvrtc_compiles.load() == compiles);
  CHECK_THROWS_AS(
      k.compile_for(k.make_spec(f32, {.layout = kiln::codegen::Layout::strided, .ndim = 2}), 90),
      kiln::CacheMissError);
  CHECK_THAT(run_cli("info").output, Contains("entries: 1"));
}

TEST_CASE("kiln-cache elementwise reports bad input with kiln's message", "[tools]") {
  kiln::test::TempDir dir;
  kiln::test::ScopedEnv env("KILN_CACHE_DIR", dir.path().string());
  auto bad_sig = run_cli(
      "elementwise --in 'float32 x, float32' --out 'float32 z' --op 'z = x' --name k --dtypes "
      "float32,float32");
  CHECK(bad_sig.status == 2);
  CHECK_THAT(bad_sig.output, Contains("expected a parameter name"));
  auto bad_dtype = run_cli(
      "elementwise --in 'float32 x' --out 'float32 z' --op 'z = x' --name k --dtypes "
      "float33,float32");
  CHECK(bad_dtype.status == 2);
  CHECK_THAT(bad_dtype.output, Contains("float33"));
  // A kernel NVRTC rejects is a failed kernel: exit 1 with the log.
  auto bad_code = run_cli(
      "elementwise --in 'float32 x' --out 'float32 z' --op 'z = x +* 1' --name k --dtypes "
      "float32,float32");
  CHECK(bad_code.status == 1);
  CHECK_THAT(bad_code.output, Contains("operation(1)"));
}

TEST_CASE("kiln-cache devices exits 1 without a GPU", "[tools]") {
  auto r = run_cli("devices");
  CHECK(r.status == (kiln::device_count() > 0 ? 0 : 1));
}
