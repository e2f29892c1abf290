// NCCL collectives without a GPU: loading NCCL (and failing to), unique ids, the id file and
// launcher environments of the rendezvous, and every argument check a collective makes before
// NCCL sees it (on arrays that only describe memory, see fake()).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "kiln/kiln.hpp"
#include "nccl_plan.hpp"
#include "nccl_rendezvous.hpp"
#include "support/processes.hpp"
#include "support/test_support.hpp"

using namespace kiln;
namespace nc = kiln::nccl;
namespace nd = kiln::nccl::detail;
using Catch::Matchers::Contains;
using kiln::test::ScopedEnv;

namespace {

// An array that only describes memory at `address` on `device`: enough for the checks, which
// never touch the device. Never pass one to anything that launches work.
ndarray fake(dtype t, const Shape& shape, int device = 0, std::uintptr_t address = 0x10000000) {
  Shape strides = shape;
  std::int64_t step = std::int64_t(t.itemsize());
  for (int i = shape.size() - 1; i >= 0; --i) {
    strides[i] = step;
    step *= shape[i];
  }
  auto buffer =
      std::make_shared<Buffer>(reinterpret_cast<void*>(address),
                               std::size_t(shape_size(shape)) * t.itemsize(), device, [] {});
  return ndarray(buffer, shape, strides, 0, t);
}

constexpr nd::CommFacts kRank1Of4{1, 4, 0};

std::string text_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every variable launch_environment() reads, unset for the scope.
struct CleanLaunchEnvironment {
  std::vector<std::unique_ptr<ScopedEnv>> vars;
  CleanLaunchEnvironment() {
    for (const char* name :
         {"KILN_RANK", "KILN_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
          "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "RANK", "WORLD_SIZE",
          "KILN_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
          "LOCAL_RANK", "KILN_NCCL_UNIQUE_ID", "KILN_NCCL_ID_FILE"})
      vars.push_back(std::make_unique<ScopedEnv>(name, std::nullopt));
  }
};

nc::UniqueId counting_id() {
  nc::UniqueId id;
  for (std::size_t i = 0; i < id.bytes.size(); ++i) id.bytes[i] = std::uint8_t(i);
  return id;
}

// What `kiln_nccl_rank probe` says with the given KILN_NCCL_LIBRARY (nullopt: unset).
std::string probe(std::optional<std::string> library) {
  kiln::test::ChildSpec spec{{kiln::test::nccl_rank_program(), "probe"},
                             {{"KILN_NCCL_LIBRARY", library}}};
  const auto results = kiln::test::run_children({spec}, std::chrono::seconds(60));
  INFO(results[0].describe());
  REQUIRE(results[0].exit_code == 0);
  return results[0].output;
}

}  // namespace

// ---- the library ---------------------------------------------------------------------------

TEST_CASE("NCCL loads from the loader's path and reports its version", "[ops][nccl]") {
  INFO(nc::unavailable_reason());
  REQUIRE(nc::available());
  CHECK(nc::unavailable_reason().empty());
  const auto& lib = nc::library();
  CHECK(lib.version >= nc::kMinimumVersion);
  CHECK_THAT(lib.path, Contains("libnccl"));
  CHECK(lib.version_string() == nc::version_string(lib.version));
}

TEST_CASE("NCCL version codes read as major.minor.patch", "[ops][nccl]") {
  CHECK(nc::version_string(22809) == "2.28.9");
  CHECK(nc::version_string(21800) == "2.18.0");
  CHECK(nc::version_string(30001) == "3.0.1");
  CHECK(nc::version_string(2708) == "2.7.8");  // before 2.9: MAJOR*1000 + MINOR*100 + PATCH
}

TEST_CASE("check_library names a missing file, a library that is not NCCL and an old NCCL",
          "[ops][nccl]") {
  KILN_CHECK_THROWS(
      nc::check_library("/nonexistent/libnccl.so.2"), NcclError,
      Contains("cannot load NCCL from /nonexistent/libnccl.so.2") && Contains("KILN_NCCL_LIBRARY"));
  KILN_CHECK_THROWS(nc::check_library("libm.so.6"), NcclError,
                    Contains("is not a usable NCCL: it has no ncclGetVersion"));
  KILN_CHECK_THROWS(nc::check_library(KILN_FAKE_NCCL_OLD), NcclError,
                    Contains("NCCL 2.14.3") && Contains("is older than 2.18.0"));
  KILN_CHECK_THROWS(nc::check_library(KILN_FAKE_NCCL_PARTIAL), NcclError,
                    Contains("it has no ncclGetErrorString"));
  try {
    nc::check_library("/nonexistent/libnccl.so.2");
  } catch (const NcclError& e) {
    CHECK(e.code() == -1);
  }
  const auto real = nc::check_library("libnccl.so.2");
  CHECK(real.version == nc::library().version);
}

TEST_CASE("KILN_NCCL_LIBRARY picks the library kiln loads, and a bad one is a clear error",
          "[ops][nccl]") {
  const std::string loaded = probe(std::nullopt);
  CHECK_THAT(loaded, Contains("available " + nc::library().version_string()));
  CHECK_THAT(probe(nc::library().path), Contains("available " + nc::library().version_string()));
  CHECK_THAT(probe("/nonexistent/libnccl.so.2"),
             Contains("unavailable: cannot load NCCL from /nonexistent/libnccl.so.2 "
                      "(KILN_NCCL_LIBRARY)"));
  CHECK_THAT(probe(KILN_FAKE_NCCL_OLD),
             Contains("unavailable: NCCL 2.14.3") && Contains("older than 2.18.0"));
}

// ---- unique ids and the id file ------------------------------------------------------------

TEST_CASE("unique ids are fresh 128-byte values that round-trip through hex", "[ops][nccl]") {
  const auto a = nc::UniqueId::generate(), b = nc::UniqueId::generate();
  CHECK(a != b);
  const std::string hex = a.hex();
  CHECK(hex.size() == 256);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(nc::UniqueId::from_hex(hex) == a);
  std::string upper = hex;
  for (auto& c : upper) c = char(std::toupper(c));
  CHECK(nc::UniqueId::from_hex(upper) == a);
  CHECK(counting_id().hex().substr(0, 8) == "00010203");
}

TEST_CASE("malformed unique ids are ValueErrors saying what is wrong", "[ops][nccl]") {
  KILN_CHECK_THROWS(nc::UniqueId::from_hex(""), ValueError, Contains("256 hex digits; got 0"));
  KILN_CHECK_THROWS(nc::UniqueId::from_hex(std::string(255, 'a')), ValueError,
                    Contains("got 255 characters"));
  std::string bad(256, '0');
  bad[17] = 'g';
  KILN_CHECK_THROWS(nc::UniqueId::from_hex(bad), ValueError, Contains("character 17 is 'g'"));
}

TEST_CASE("the id file format matches its golden file", "[ops][nccl]") {
  // tests/ops/golden/nccl_id_file_v1.txt: size 4, id bytes 0, 1, ..., 127 (written by hand;
  // a format change must break this test).
  const auto golden =
      std::filesystem::path(KILN_TEST_SOURCE_DIR) / "ops" / "golden" / "nccl_id_file_v1.txt";
  const std::string text = text_of(golden);
  CHECK(nc::format_id_file({4, counting_id()}) == text);
  const auto f = nc::parse_id_file(text);
  CHECK(f.size == 4);
  CHECK(f.id == counting_id());
}

TEST_CASE("malformed id files are ValueErrors naming the line at fault", "[ops][nccl]") {
  const std::string id_line = "id " + counting_id().hex() + "\n";
  KILN_CHECK_THROWS(nc::parse_id_file(""), ValueError, Contains("expected 3 lines"));
  KILN_CHECK_THROWS(nc::parse_id_file("kiln-nccl-rendezvous 1\nsize 2\n" + id_line + "x\n"),
                    ValueError, Contains("found 4"));
  KILN_CHECK_THROWS(nc::parse_id_file("kiln-nccl-rendezvous 1\nsize 2\nid 00"), ValueError,
                    Contains("line 3 does not end with a newline"));
  KILN_CHECK_THROWS(nc::parse_id_file("nccl 1\nsize 2\n" + id_line), ValueError,
                    Contains("line 1 should start with \"kiln-nccl-rendezvous \""));
  KILN_CHECK_THROWS(nc::parse_id_file("kiln-nccl-rendezvous 2\nsize 2\n" + id_line), ValueError,
                    Contains("format version \"2\"; this kiln reads version 1"));
  KILN_CHECK_THROWS(nc::parse_id_file("kiln-nccl-rendezvous 1\nsize 0\n" + id_line), ValueError,
                    Contains("line 2: size \"0\" is not a positive integer"));
  KILN_CHECK_THROWS(nc::parse_id_file("kiln-nccl-rendezvous 1\nsize -2\n" + id_line), ValueError,
                    Contains("line 2"));
  KILN_CHECK_THROWS(nc::parse_id_file("kiln-nccl-rendezvous 1\nranks 2\n" + id_line), ValueError,
                    Contains("line 2 should start with \"size \""));
  KILN_CHECK_THROWS(nc::parse_id_file("kiln-nccl-rendezvous 1\nsize 2\nid abc\n"), ValueError,
                    Contains("line 3: an NCCL unique id is 256 hex digits"));
}

TEST_CASE("the id file is published once, privately, and read back by a waiting rank",
          "[ops][nccl]") {
  kiln::test::TempDir dir;
  const auto file = dir.path() / "nccl-id";
  const nc::IdFile want{3, nc::UniqueId::generate()};
  // A rank that starts first waits for rank 0's file.
  std::thread rank0([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    nd::publish_id_file(file, want);
  });
  const nc::IdFile got = nd::wait_for_id_file(file, std::chrono::seconds(20));
  rank0.join();
  CHECK(got.size == 3);
  CHECK(got.id == want.id);
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);  // the id lets whoever reads it join
  KILN_CHECK_THROWS(nd::publish_id_file(file, want), ValueError,
                    Contains("already exists") && Contains("remove it"));
  CHECK(nd::wait_for_id_file(file, std::chrono::seconds(1)).id == want.id);  // left as it was
  std::size_t entries = 0;
  for (auto it = std::filesystem::directory_iterator(dir.path());
       it != std::filesystem::directory_iterator(); ++it)
    ++entries;
  CHECK(entries == 1);  // no temporary left behind
  KILN_CHECK_THROWS(nd::publish_id_file(dir.path() / "missing" / "id", want), ValueError,
                    Contains("cannot write the NCCL id file"));
  std::ofstream(dir.path() / "junk") << "hello\n";
  KILN_CHECK_THROWS(nd::wait_for_id_file(dir.path() / "junk", std::chrono::seconds(1)), ValueError,
                    Contains("junk") && Contains("expected 3 lines"));
}

TEST_CASE("an id path that is a FIFO or a device is refused at once, never waited on",
          "[ops][nccl]") {
  kiln::test::TempDir dir;
  const auto fifo = dir.path() / "nccl-id";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Before: std::ifstream blocked in open() on a FIFO with no writer, past any timeout, and
  // read /dev/zero until memory ran out.
  auto t0 = std::chrono::steady_clock::now();
  KILN_CHECK_THROWS(nd::wait_for_id_file(fifo, std::chrono::seconds(20)), ValueError,
                    Contains("nccl-id") && Contains("FIFO"));
  KILN_CHECK_THROWS(nd::wait_for_id_file("/dev/zero", std::chrono::seconds(20)), ValueError,
                    Contains("character device"));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(waited < 5.0);
}

TEST_CASE("waiting for an id file that never comes ends in a TimeoutError", "[ops][nccl]") {
  kiln::test::TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  KILN_CHECK_THROWS(nd::wait_for_id_file(dir.path() / "never", std::chrono::milliseconds(300)),
                    TimeoutError, Contains("did not appear within 0.3 s") && Contains("rank 0"));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(waited >= 0.3 * 2);  // KILN_CHECK_THROWS runs the expression twice
  CHECK(waited < 5.0);
}

TEST_CASE("KILN_NCCL_TIMEOUT sets the default timeout and rejects nonsense", "[ops][nccl]") {
  {
    ScopedEnv unset("KILN_NCCL_TIMEOUT", std::nullopt);
    CHECK(nd::default_timeout() == std::chrono::seconds(300));
  }
  {
    ScopedEnv set("KILN_NCCL_TIMEOUT", "2.5");
    CHECK(nd::default_timeout() == std::chrono::milliseconds(2500));
    CHECK(nd::timeout_of({}) == std::chrono::milliseconds(2500));
    nc::CommunicatorOptions o;
    o.timeout = std::chrono::milliseconds(700);
    CHECK(nd::timeout_of(o) == std::chrono::milliseconds(700));
    o.timeout = std::chrono::milliseconds(0);
    KILN_CHECK_THROWS(nd::timeout_of(o), ValueError, Contains("timeout must be positive; got 0"));
  }
  for (const char* bad : {"", "abc", "0", "-3", "5s", "nan", "inf"}) {
    ScopedEnv set("KILN_NCCL_TIMEOUT", bad);
    INFO(bad);
    KILN_CHECK_THROWS(nd::default_timeout(), ValueError,
                      Contains("KILN_NCCL_TIMEOUT") && Contains("positive number of seconds"));
  }
}

// ---- the launcher's environment ------------------------------------------------------------

TEST_CASE("launch_environment reads every launcher's rank, size and local rank", "[ops][nccl]") {
  struct Case {
    const char *rank, *size, *local, *source;
  };
  const Case cases[] = {
      {"KILN_RANK", "KILN_WORLD_SIZE", "KILN_LOCAL_RANK", "KILN_RANK/KILN_WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_RANK/PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_PROCID/SLURM_NTASKS"},
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE"},
  };
  for (const auto& c : cases) {
    INFO(c.source);
    CleanLaunchEnvironment clean;
    ScopedEnv r(c.rank, "5"), s(c.size, "8");
    auto e = nc::launch_environment();
    CHECK(e.rank == 5);
    CHECK(e.size == 8);
    CHECK(e.local_rank == 5);  // no local rank: the rank
    CHECK(e.source == c.source);
    CHECK_FALSE(e.id);
    CHECK_FALSE(e.id_file);
    ScopedEnv l(c.local, "1");
    CHECK(nc::launch_environment().local_rank == 1);
  }
  CleanLaunchEnvironment clean;
  ScopedEnv kr("KILN_RANK", "0"), ks("KILN_WORLD_SIZE", "2");
  ScopedEnv orank("OMPI_COMM_WORLD_RANK", "1"), osize("OMPI_COMM_WORLD_SIZE", "4");
  CHECK(nc::launch_environment().size == 2);  // kiln's own variables first
  ScopedEnv id("KILN_NCCL_UNIQUE_ID", counting_id().hex()), file("KILN_NCCL_ID_FILE", "/shared/id");
  const auto e = nc::launch_environment();
  REQUIRE(e.id);
  CHECK(*e.id == counting_id());
  REQUIRE(e.id_file);
  CHECK(e.id_file->string() == "/shared/id");
}

TEST_CASE("launch_environment rejects missing, half-set and malformed variables", "[ops][nccl]") {
  CleanLaunchEnvironment clean;
  KILN_CHECK_THROWS(nc::launch_environment(), ValueError,
                    Contains("no rank and size in the environment") && Contains("KILN_RANK"));
  {
    ScopedEnv r("OMPI_COMM_WORLD_RANK", "1");
    KILN_CHECK_THROWS(nc::launch_environment(), ValueError,
                      Contains("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"));
  }
  {
    ScopedEnv s("WORLD_SIZE", "2");
    KILN_CHECK_THROWS(nc::launch_environment(), ValueError,
                      Contains("WORLD_SIZE is set but RANK is not"));
  }
  ScopedEnv s("KILN_WORLD_SIZE", "2");
  for (const char* bad : {"", "-1", "1.5", "one", "99999999999"}) {
    INFO(bad);
    ScopedEnv r("KILN_RANK", bad);
    KILN_CHECK_THROWS(nc::launch_environment(), ValueError,
                      Contains("KILN_RANK=") && Contains("is not a non-negative integer"));
  }
  {
    ScopedEnv r("KILN_RANK", "2");
    KILN_CHECK_THROWS(nc::launch_environment(), ValueError,
                      Contains("KILN_RANK=2 is not below KILN_WORLD_SIZE=2"));
  }
  ScopedEnv r("KILN_RANK", "1");
  {
    ScopedEnv zero("KILN_WORLD_SIZE", "0");
    KILN_CHECK_THROWS(nc::launch_environment(), ValueError,
                      Contains("KILN_WORLD_SIZE=0 must be at least 1"));
  }
  {
    ScopedEnv l("KILN_LOCAL_RANK", "x");
    KILN_CHECK_THROWS(nc::launch_environment(), ValueError, Contains("KILN_LOCAL_RANK=\"x\""));
  }
  {
    ScopedEnv id("KILN_NCCL_UNIQUE_ID", "abcd");
    KILN_CHECK_THROWS(nc::launch_environment(), ValueError,
                      Contains("KILN_NCCL_UNIQUE_ID: an NCCL unique id is 256 hex digits"));
  }
  {
    ScopedEnv f("KILN_NCCL_ID_FILE", "");
    KILN_CHECK_THROWS(nc::launch_environment(), ValueError,
                      Contains("KILN_NCCL_ID_FILE is set but empty"));
  }
  CHECK(nc::launch_environment().rank == 1);
}

// ---- argument checks -----------------------------------------------------------------------

TEST_CASE("every dtype travels as NCCL's type or is refused with a TypeError", "[ops][nccl]") {
  using W = nd::WireType;
  using nc::reduce_op;
  using nd::Call;
  struct Row {
    dtype t;
    W type;
    std::size_t per_element;
  };
  const Row rows[] = {
      {bool_, W::uint8, 1},     {int8, W::int8, 1},         {int16, W::int8, 2},
      {int32, W::int32, 1},     {int64, W::int64, 1},       {uint8, W::uint8, 1},
      {uint16, W::uint8, 2},    {uint32, W::uint32, 1},     {uint64, W::uint64, 1},
      {float16, W::float16, 1}, {bfloat16, W::bfloat16, 1}, {float32, W::float32, 1},
      {float64, W::float64, 1}, {complex64, W::float32, 2}, {complex128, W::float64, 2}};
  STATIC_REQUIRE(sizeof(rows) / sizeof(rows[0]) == kNumDtypes);
  for (const auto& row : rows) {
    INFO(row.t.name());
    for (Call c : {Call::broadcast, Call::all_gather, Call::send, Call::recv}) {
      const auto w = nd::wire_type(row.t, c, std::nullopt);  // data movement: every dtype
      CHECK(w.type == row.type);
      CHECK(w.per_element == row.per_element);
    }
    for (reduce_op op :
         {reduce_op::sum, reduce_op::prod, reduce_op::max, reduce_op::min, reduce_op::avg}) {
      const bool ok = row.t == bool_ ? (op == reduce_op::max || op == reduce_op::min)
                      : row.t.itemsize() == 2 && row.t.is_integer() ? false
                      : row.t.is_complex() ? (op == reduce_op::sum || op == reduce_op::avg)
                      : row.t.is_integer() ? op != reduce_op::avg
                                           : true;
      for (Call c : {Call::all_reduce, Call::reduce, Call::reduce_scatter}) {
        INFO(int(op));
        if (ok)
          CHECK(nd::wire_type(row.t, c, op).type == row.type);
        else
          CHECK_THROWS_AS(nd::wire_type(row.t, c, op), TypeError);
      }
    }
  }
  KILN_CHECK_THROWS(nd::wire_type(bool_, Call::all_reduce, reduce_op::sum), TypeError,
                    Contains("all_reduce with sum on bool") && Contains("max (any) and min (all)"));
  KILN_CHECK_THROWS(nd::wire_type(int16, Call::reduce, reduce_op::max), TypeError,
                    Contains("no 16-bit integer type") && Contains("cast to int32"));
  KILN_CHECK_THROWS(
      nd::wire_type(complex64, Call::reduce_scatter, reduce_op::max), TypeError,
      Contains("reduce_scatter with max on complex64") && Contains("sum and avg only"));
  KILN_CHECK_THROWS(nd::wire_type(int32, Call::all_reduce, reduce_op::avg), TypeError,
                    Contains("avg needs a floating or complex dtype"));
}

TEST_CASE("all_reduce checks handles, devices, dtypes, sizes, op and overlap", "[ops][nccl]") {
  const auto c = kRank1Of4;
  const auto x = fake(float32, {4, 5}), y = fake(float32, {20}, 0, 0x20000000);
  auto p = nd::plan_all_reduce(c, x, y, nc::reduce_op::max);
  CHECK(p.count == 20);
  CHECK(p.wire.type == nd::WireType::float32);
  CHECK(p.op == 2);  // ncclMax
  CHECK(p.uses_send);
  CHECK(p.uses_recv);
  CHECK_FALSE(p.in_place);
  CHECK_FALSE(p.stage_send);
  CHECK_FALSE(p.stage_recv);
  CHECK(nd::plan_all_reduce(c, x, x, nc::reduce_op::sum).in_place);
  CHECK(nd::plan_all_reduce(c, fake(complex128, {3}), fake(complex128, {3}, 0, 0x20000000),
                            nc::reduce_op::sum)
            .count == 6);  // float64 pairs

  KILN_CHECK_THROWS(nd::plan_all_reduce(c, ndarray{}, y, nc::reduce_op::sum), ValueError,
                    Contains("all_reduce: send is an empty ndarray handle"));
  KILN_CHECK_THROWS(nd::plan_all_reduce(c, x, ndarray{}, nc::reduce_op::sum), ValueError,
                    Contains("recv is an empty ndarray handle"));
  KILN_CHECK_THROWS(nd::plan_all_reduce(c, fake(float32, {20}, 1), y, nc::reduce_op::sum),
                    ValueError,
                    Contains("send is on device 1, but the communicator (rank 1 of 4) is on "
                             "device 0"));
  KILN_CHECK_THROWS(
      nd::plan_all_reduce(c, x, fake(float64, {20}, 0, 0x20000000), nc::reduce_op::sum), TypeError,
      Contains("send is float32 but recv is float64"));
  KILN_CHECK_THROWS(
      nd::plan_all_reduce(c, x, fake(float32, {21}, 0, 0x20000000), nc::reduce_op::sum), ShapeError,
      Contains("send has 20 elements (shape (4, 5)) but recv has 21"));
  KILN_CHECK_THROWS(nd::plan_all_reduce(c, x, y, static_cast<nc::reduce_op>(9)), ValueError,
                    Contains("reduce_op 9 is not one of"));
  KILN_CHECK_THROWS(
      nd::plan_all_reduce(c, fake(bool_, {8}), fake(bool_, {8}, 0, 0x20000000), nc::reduce_op::sum),
      TypeError, Contains("on bool"));
  // Partial overlap: recv starts 4 bytes into send.
  KILN_CHECK_THROWS(
      nd::plan_all_reduce(c, x, fake(float32, {20}, 0, 0x10000004), nc::reduce_op::sum), ValueError,
      Contains("recv overlaps send without being the same array"));
  // The same contiguous memory through another shape is in place (NCCL compares pointers);
  // a transposed view of it is neither the same array nor disjoint.
  CHECK(nd::plan_all_reduce(c, x, x.reshape_view({20}).value(), nc::reduce_op::sum).in_place);
  CHECK_THROWS_AS(nd::plan_all_reduce(c, x, x.T(), nc::reduce_op::sum), ValueError);
  // Size 0 is fine.
  CHECK(nd::plan_all_reduce(c, fake(float32, {0}), fake(float32, {0}), nc::reduce_op::sum).count ==
        0);
}

TEST_CASE("broadcast and reduce check only the arrays this rank hands NCCL", "[ops][nccl]") {
  const auto c = kRank1Of4;
  const auto x = fake(int64, {6}), y = fake(int64, {6}, 0, 0x20000000);
  // Not the root: send is not read, recv is written.
  auto b = nd::plan_broadcast(c, ndarray{}, y, 0);
  CHECK_FALSE(b.uses_send);
  CHECK(b.uses_recv);
  CHECK(b.peer == 0);
  CHECK(b.count == 6);
  CHECK(nd::plan_broadcast(c, fake(float32, {99}), y, 0).count == 6);  // ignored
  // The root: both, same dtype and size.
  CHECK(nd::plan_broadcast(c, x, y, 1).uses_send);
  CHECK(nd::plan_broadcast(c, y, y, 1).in_place);
  KILN_CHECK_THROWS(nd::plan_broadcast(c, ndarray{}, y, 1), ValueError,
                    Contains("send (on the root) is an empty ndarray handle"));
  KILN_CHECK_THROWS(nd::plan_broadcast(c, fake(int64, {5}), y, 1), ShapeError,
                    Contains("the root's send has 5 elements"));
  KILN_CHECK_THROWS(nd::plan_broadcast(c, x, y, 4), ValueError,
                    Contains("broadcast: root 4 is not a rank of this communicator (0 to 3)"));
  KILN_CHECK_THROWS(nd::plan_broadcast(c, x, y, -1), ValueError, Contains("root -1"));

  auto r = nd::plan_reduce(c, x, ndarray{}, 0, nc::reduce_op::prod);
  CHECK(r.uses_send);
  CHECK_FALSE(r.uses_recv);
  CHECK(r.op == 1);  // ncclProd
  CHECK(nd::plan_reduce(c, x, y, 1, nc::reduce_op::sum).uses_recv);
  CHECK(nd::plan_reduce(c, x, x, 1, nc::reduce_op::sum).in_place);
  KILN_CHECK_THROWS(nd::plan_reduce(c, x, ndarray{}, 1, nc::reduce_op::sum), ValueError,
                    Contains("recv (on the root) is an empty ndarray handle"));
  KILN_CHECK_THROWS(nd::plan_reduce(c, x, fake(int32, {6}, 0, 0x20000000), 1, nc::reduce_op::sum),
                    TypeError, Contains("send is int64 but recv is int32"));
  KILN_CHECK_THROWS(nd::plan_reduce(c, x, y, 7, nc::reduce_op::sum), ValueError,
                    Contains("reduce: root 7"));
  KILN_CHECK_THROWS(nd::plan_reduce(c, x, y, 0, nc::reduce_op::avg), TypeError,
                    Contains("avg needs a floating or complex dtype"));
}

TEST_CASE("all_gather and reduce_scatter check block sizes and take NCCL's in-place forms",
          "[ops][nccl]") {
  const auto c = kRank1Of4;  // rank 1 of 4
  const auto send = fake(float32, {2, 3}), recv = fake(float32, {4, 2, 3}, 0, 0x20000000);
  auto g = nd::plan_all_gather(c, send, recv);
  CHECK(g.count == 6);  // per rank
  CHECK_FALSE(g.in_place);
  KILN_CHECK_THROWS(nd::plan_all_gather(c, send, fake(float32, {23}, 0, 0x20000000)), ShapeError,
                    Contains("recv needs 4 x 6 = 24 elements") && Contains("it has 23"));
  // In place: send is this rank's block of recv (elements 6 to 12).
  CHECK(nd::plan_all_gather(c, recv(std::int64_t(1)), recv).in_place);
  KILN_CHECK_THROWS(nd::plan_all_gather(c, recv(std::int64_t(2)), recv), ValueError,
                    Contains("send overlaps recv without being this rank's block of it (elements "
                             "6 to 12"));

  const auto big = fake(float64, {8}), part = fake(float64, {2}, 0, 0x20000000);
  auto s = nd::plan_reduce_scatter(c, big, part, nc::reduce_op::min);
  CHECK(s.count == 2);  // per rank
  CHECK(s.op == 3);     // ncclMin
  KILN_CHECK_THROWS(nd::plan_reduce_scatter(c, fake(float64, {7}), part, nc::reduce_op::sum),
                    ShapeError, Contains("send needs 4 x 2 = 8 elements") && Contains("it has 7"));
  CHECK(nd::plan_reduce_scatter(c, big, big(slice(2, 4)), nc::reduce_op::sum).in_place);
  KILN_CHECK_THROWS(nd::plan_reduce_scatter(c, big, big(slice(4, 6)), nc::reduce_op::sum),
                    ValueError, Contains("recv overlaps send without being this rank's block"));
  KILN_CHECK_THROWS(nd::plan_reduce_scatter(c, fake(uint16, {8}), fake(uint16, {2}, 0, 0x20000000),
                                            nc::reduce_op::sum),
                    TypeError, Contains("no 16-bit integer type"));
}

TEST_CASE("send and recv check the peer and move any dtype", "[ops][nccl]") {
  const auto c = kRank1Of4;
  auto s = nd::plan_point_to_point(c, nd::Call::send, fake(int16, {5}), 3);
  CHECK(s.uses_send);
  CHECK_FALSE(s.uses_recv);
  CHECK(s.count == 10);  // bytes
  CHECK(s.peer == 3);
  auto r = nd::plan_point_to_point(c, nd::Call::recv, fake(complex64, {5}), 1);  // itself
  CHECK(r.uses_recv);
  CHECK(r.count == 10);
  KILN_CHECK_THROWS(nd::plan_point_to_point(c, nd::Call::send, fake(int16, {5}), 4), ValueError,
                    Contains("send: peer 4 is not a rank of this communicator (0 to 3)"));
  KILN_CHECK_THROWS(nd::plan_point_to_point(c, nd::Call::recv, ndarray{}, 0), ValueError,
                    Contains("recv: x is an empty ndarray handle"));
  KILN_CHECK_THROWS(nd::plan_point_to_point(c, nd::Call::recv, fake(int8, {5}, 2), 0), ValueError,
                    Contains("x is on device 2"));
}

TEST_CASE("non-contiguous arrays are staged and contiguous ones go to NCCL as they are",
          "[ops][nccl]") {
  const auto c = kRank1Of4;
  const auto m = fake(float32, {4, 6});
  const auto y = fake(float32, {24}, 0, 0x20000000);
  auto t = nd::plan_all_reduce(c, m.T(), y, nc::reduce_op::sum);
  CHECK(t.stage_send);
  CHECK_FALSE(t.stage_recv);
  auto u = nd::plan_all_reduce(c, y, m.T(), nc::reduce_op::sum);
  CHECK_FALSE(u.stage_send);
  CHECK(u.stage_recv);
  auto both = nd::plan_all_reduce(c, m.T(), m.T(), nc::reduce_op::sum);  // in place on a view
  CHECK(both.in_place);
  CHECK(both.stage_send);
  CHECK(both.stage_recv);
  const auto every_other = m(kiln::all, slice(std::nullopt, std::nullopt, 2));
  CHECK(nd::plan_all_gather(c, every_other, fake(float32, {48}, 0, 0x30000000)).stage_send);
  CHECK(nd::plan_point_to_point(c, nd::Call::recv, m.T(), 0).stage_recv);
  CHECK_FALSE(nd::plan_point_to_point(c, nd::Call::recv, m, 0).stage_recv);
  // A view with stride 0 (broadcast) reads one element many times: staged too.
  CHECK(nd::plan_broadcast(c, ndarray{}, fake(float32, {1}).broadcast_to({24}), 0).stage_recv);
}

// ---- communicators without NCCL work -------------------------------------------------------

TEST_CASE("an empty Communicator raises ValueError for every call", "[ops][nccl]") {
  nc::Communicator none;
  CHECK_FALSE(none.defined());
  CHECK_FALSE(none.aborted());
  const auto x = fake(float32, {4});
  const auto empty_comm = Contains("nccl::Communicator is empty");
  KILN_CHECK_THROWS(none.rank(), ValueError, empty_comm);
  KILN_CHECK_THROWS(none.synchronize(), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::all_reduce(none, x, x), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::all_reduce(none, x), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::broadcast(none, x, 0), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::reduce(none, x, x, 0), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::all_gather(none, x), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::reduce_scatter(none, x), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::send(none, x, 0), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::recv(none, x, 0), ValueError, empty_comm);
  KILN_CHECK_THROWS(nc::group([&] { nc::all_reduce(none, x, x); }), ValueError, empty_comm);
}

TEST_CASE("communicator arguments are checked before NCCL or a GPU is asked", "[ops][nccl]") {
  const auto id = counting_id();
  KILN_CHECK_THROWS(nc::Communicator(0, 0, id), ValueError, Contains("size must be at least 1"));
  KILN_CHECK_THROWS(nc::Communicator(2, 2, id), ValueError, Contains("rank 2 is not in [0, 2)"));
  KILN_CHECK_THROWS(nc::Communicator(2, -1, id), ValueError, Contains("rank -1"));
  nc::CommunicatorOptions o;
  o.timeout = std::chrono::milliseconds(-5);
  KILN_CHECK_THROWS(nc::Communicator(2, 0, id, o), ValueError,
                    Contains("timeout must be positive"));
  KILN_CHECK_THROWS(nc::Communicator::from_file("/tmp/x", 3, 3), ValueError,
                    Contains("from_file: rank 3 is not in [0, 3)"));
  CleanLaunchEnvironment clean;
  KILN_CHECK_THROWS(nc::Communicator::from_environment(), ValueError,
                    Contains("no rank and size in the environment"));
  ScopedEnv r("KILN_RANK", "0"), s("KILN_WORLD_SIZE", "2");
  KILN_CHECK_THROWS(nc::Communicator::from_environment(), ValueError,
                    Contains("no NCCL unique id") && Contains("KILN_NCCL_UNIQUE_ID") &&
                        Contains("KILN_NCCL_ID_FILE"));
}

TEST_CASE("a group whose body throws hands nothing to NCCL and closes", "[ops][nccl]") {
  CHECK_THROWS_WITH(nc::group([] { throw std::runtime_error("from the body"); }), "from the body");
  nc::group([] {});  // nothing queued, nothing open
  int inner_ran = 0;
  nc::group([&] {
    try {
      nc::group([&] {
        ++inner_ran;
        throw ValueError("inner");
      });
    } catch (const ValueError&) {
    }
  });
  CHECK(inner_ran == 1);
  KILN_CHECK_THROWS(nd::group_end(), ValueError, Contains("group_end without group_begin"));
}
