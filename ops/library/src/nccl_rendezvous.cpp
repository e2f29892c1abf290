// How the ranks of a communicator find each other without MPI: NCCL's unique id as hex (for
// the environment), the id file on a shared path, and the launcher's environment.
#include "nccl_rendezvous.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "kiln/runtime/error.hpp"
#include "kiln/runtime/regular_file.hpp"
#include "nccl_library.hpp"

namespace kiln::nccl {
namespace {

constexpr std::string_view kIdFileMagic = "kiln-nccl-rendezvous";
constexpr int kIdFileVersion = 1;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A whole non-negative decimal int, or nullopt.
std::optional<int> parse_count(std::string_view s) {
  int v = 0;
  if (s.empty() || s.front() == '-' || s.front() == '+') return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

int env_count(const char* name, const std::string& text) {
  auto v = parse_count(text);
  if (!v)
    throw ValueError(
        fmt::format("{}={:?} is not a non-negative integer (set by the launcher, "
                    "or by hand for KILN_*)",
                    name, text));
  return *v;
}

}  // namespace

// ---- unique ids ----------------------------------------------------------------------------

UniqueId UniqueId::generate() {
  const auto& a = detail::api();
  static_assert(sizeof(ncclUniqueId) == sizeof(UniqueId::bytes));
  ncclUniqueId raw;
  detail::check_nccl(a.ncclGetUniqueId(&raw), "ncclGetUniqueId");
  UniqueId id;
  std::memcpy(id.bytes.data(), raw.internal, id.bytes.size());
  return id;
}

std::string UniqueId::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(bytes.size() * 2, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    s[2 * i] = kDigits[bytes[i] >> 4];
    s[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return s;
}

UniqueId UniqueId::from_hex(std::string_view text) {
  UniqueId id;
  if (text.size() != id.bytes.size() * 2)
    throw ValueError(fmt::format("an NCCL unique id is {} hex digits; got {} characters",
                                 id.bytes.size() * 2, text.size()));
  for (std::size_t i = 0; i < id.bytes.size(); ++i) {
    const int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      const std::size_t at = hi < 0 ? 2 * i : 2 * i + 1;
      throw ValueError(
          fmt::format("an NCCL unique id is hex digits; character {} is {:?}", at, text[at]));
    }
    id.bytes[i] = std::uint8_t(hi * 16 + lo);
  }
  return id;
}

// ---- the id file ---------------------------------------------------------------------------

std::string format_id_file(const IdFile& f) {
  return fmt::format("{} {}\nsize {}\nid {}\n", kIdFileMagic, kIdFileVersion, f.size, f.id.hex());
}

IdFile parse_id_file(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos)
      throw ValueError(
          fmt::format("NCCL id file: line {} does not end with a newline (a "
                      "truncated file?)",
                      lines.size() + 1));
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  if (lines.size() != 3)
    throw ValueError(
        fmt::format("NCCL id file: expected 3 lines ({} VERSION, size N, id HEX), "
                    "found {}",
                    kIdFileMagic, lines.size()));
  auto field = [&](int line, std::string_view key) {
    const std::string_view l = lines[std::size_t(line - 1)];
    if (l.size() <= key.size() || l.substr(0, key.size()) != key || l[key.size()] != ' ')
      throw ValueError(fmt::format("NCCL id file: line {} should start with \"{} \"; it is {:?}",
                                   line, key, std::string(l.substr(0, 80))));
    return l.substr(key.size() + 1);
  };
  const auto version = parse_count(field(1, kIdFileMagic));
  if (!version || *version != kIdFileVersion)
    throw ValueError(fmt::format("NCCL id file: format version {:?}; this kiln reads version {}",
                                 std::string(field(1, kIdFileMagic)), kIdFileVersion));
  const auto size = parse_count(field(2, "size"));
  if (!size || *size < 1)
    throw ValueError(fmt::format("NCCL id file: line 2: size {:?} is not a positive integer",
                                 std::string(field(2, "size"))));
  IdFile f;
  f.size = *size;
  try {
    f.id = UniqueId::from_hex(field(3, "id"));
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("NCCL id file: line 3: {}", e.what()));
  }
  return f;
}

namespace detail {

std::chrono::milliseconds default_timeout() {
  const auto text = env("KILN_NCCL_TIMEOUT");
  if (!text) return std::chrono::seconds(300);
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(text->c_str(), &end);
  if (text->empty() || end != text->c_str() + text->size() || errno != 0 || !std::isfinite(s) ||
      s <= 0 || s > 1e7)
    throw ValueError(
        fmt::format("KILN_NCCL_TIMEOUT={:?}: expected a positive number of seconds "
                    "(e.g. 300 or 2.5)",
                    *text));
  return std::chrono::milliseconds(std::max<long long>(1, std::llround(s * 1000)));
}

std::chrono::milliseconds timeout_of(const CommunicatorOptions& options) {
  if (!options.timeout) return default_timeout();
  if (options.timeout->count() <= 0)
    throw ValueError(fmt::format("CommunicatorOptions::timeout must be positive; got {} ms",
                                 options.timeout->count()));
  return *options.timeout;
}

void publish_id_file(const std::filesystem::path& file, const IdFile& contents) {
  const std::string text = format_id_file(contents);
  std::string tmp = file.string() + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());  // 0600: the id lets whoever reads it join
  if (fd < 0)
    throw ValueError(
        fmt::format("cannot write the NCCL id file {}: {} (is its folder there and "
                    "writable?)",
                    file.string(), std::strerror(errno)));
  const bool written =
      ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  const int write_errno = errno;
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    throw ValueError(fmt::format("cannot write the NCCL id file {}: {}", file.string(),
                                 std::strerror(write_errno)));
  }
  const int linked = ::link(tmp.c_str(), file.c_str());
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked != 0) {
    if (link_errno == EEXIST)
      throw ValueError(fmt::format(
          "the NCCL id file {} already exists: a run that died left it, or another rank 0 "
          "uses the same path; remove it (or give each run its own path) and start again",
          file.string()));
    throw ValueError(fmt::format("cannot publish the NCCL id file {}: {}", file.string(),
                                 std::strerror(link_errno)));
  }
}

// An id file is three short lines (format_id_file); anything much larger is not one.
constexpr std::uint64_t kMaxIdFileBytes = 4096;

IdFile wait_for_id_file(const std::filesystem::path& file, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    // Never blocks and never reads without bound: a FIFO or a device at the path would
    // otherwise hang the rank past its timeout, or read until memory runs out.
    RegularFile in = RegularFile::open(file, {.follow_links = true});
    if (in.ok()) {
      const auto text = in.read_all(kMaxIdFileBytes);
      if (!text)
        throw ValueError(
            fmt::format("cannot read the NCCL id file {}: {}", file.string(), in.problem()));
      try {
        return parse_id_file(*text);
      } catch (const ValueError& e) {
        throw ValueError(fmt::format("{}: {}", file.string(), e.what()));
      }
    }
    if (!in.missing())
      throw ValueError(
          fmt::format("cannot read the NCCL id file {}: {}", file.string(), in.problem()));
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited >= timeout)
      throw TimeoutError(fmt::format(
          "the NCCL id file {} did not appear within {:.1f} s: is rank 0 running, with the "
          "same path (on a file system every rank sees)?",
          file.string(), std::chrono::duration<double>(timeout).count()));
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(pause, timeout - waited));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace detail

// ---- the launcher's environment ------------------------------------------------------------

LaunchEnvironment launch_environment() {
  struct Pair {
    const char *rank, *size;
  };
  static constexpr Pair kPairs[] = {{"KILN_RANK", "KILN_WORLD_SIZE"},
                                    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                    {"PMI_RANK", "PMI_SIZE"},
                                    {"SLURM_PROCID", "SLURM_NTASKS"},
                                    {"RANK", "WORLD_SIZE"}};
  static constexpr const char* kLocalRanks[] = {"KILN_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"};
  LaunchEnvironment e;
  bool found = false;
  for (const auto& p : kPairs) {
    const auto rank = env(p.rank), size = env(p.size);
    if (!rank && !size) continue;
    if (!rank || !size)
      throw ValueError(
          fmt::format("{} is set but {} is not: a launcher sets both (or set both "
                      "yourself)",
                      rank ? p.rank : p.size, rank ? p.size : p.rank));
    e.rank = env_count(p.rank, *rank);
    e.size = env_count(p.size, *size);
    if (e.size < 1) throw ValueError(fmt::format("{}={} must be at least 1", p.size, e.size));
    if (e.rank >= e.size)
      throw ValueError(fmt::format("{}={} is not below {}={}", p.rank, e.rank, p.size, e.size));
    e.source = fmt::format("{}/{}", p.rank, p.size);
    found = true;
    break;
  }
  if (!found)
    throw ValueError(
        "no rank and size in the environment: start the processes with a launcher (mpirun, "
        "srun, torchrun) or set KILN_RANK and KILN_WORLD_SIZE (and KILN_LOCAL_RANK to pick "
        "the GPU)");
  e.local_rank = e.rank;
  for (const char* name : kLocalRanks) {
    if (auto v = env(name)) {
      e.local_rank = env_count(name, *v);
      break;
    }
  }
  if (auto id = env("KILN_NCCL_UNIQUE_ID")) {
    try {
      e.id = UniqueId::from_hex(*id);
    } catch (const ValueError& err) {
      throw ValueError(fmt::format("KILN_NCCL_UNIQUE_ID: {}", err.what()));
    }
  }
  if (auto f = env("KILN_NCCL_ID_FILE")) {
    if (f->empty()) throw ValueError("KILN_NCCL_ID_FILE is set but empty: give it a path");
    e.id_file = *f;
  }
  return e;
}

}  // namespace kiln::nccl
