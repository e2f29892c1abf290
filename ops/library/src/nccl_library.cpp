// NCCL loaded at run time: dlopen, every entry point by dlsym, the version checked once.
#include "nccl_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <cstdlib>
#include <optional>
#include <variant>

#include "kiln/runtime/error.hpp"

namespace kiln::nccl {
namespace detail {
namespace {

constexpr const char* kHint =
    "install NCCL (the libnccl2 package, or `pip install nvidia-nccl-cu13`) or point "
    "KILN_NCCL_LIBRARY at a libnccl.so.2";

std::string where_loaded(void* handle, const std::string& asked) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    return map->l_name;
  return asked;
}

// Never dlclose'd: NCCL may start threads, and a library checked once costs only its mapping.
Api open_api(const std::string& what, const char* origin) {
  void* h = ::dlopen(what.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = ::dlerror();
    throw NcclError(fmt::format("cannot load NCCL from {}{} ({}): {}", what, origin,
                                why ? why : "unknown loader error", kHint),
                    -1);
  }
  Api a;
  a.info.path = where_loaded(h, what);
  auto find = [&](auto& fn, const char* name) {
    ::dlerror();
    void* p = ::dlsym(h, name);
    if (p == nullptr)
      throw NcclError(fmt::format("{}{} is not a usable NCCL: it has no {} ({})", a.info.path,
                                  origin, name, kHint),
                      -1);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  find(a.ncclGetVersion, "ncclGetVersion");
  int v = 0;
  if (a.ncclGetVersion(&v) != ncclSuccess)
    throw NcclError(fmt::format("{}{}: ncclGetVersion failed ({})", a.info.path, origin, kHint),
                    -1);
  a.info.version = v;
  if (v < kMinimumVersion)
    throw NcclError(
        fmt::format("NCCL {} ({}{}) is older than {}, the oldest kiln supports: {}",
                    version_string(v), a.info.path, origin, version_string(kMinimumVersion), kHint),
        -1);
#define KILN_FIND(name) find(a.name, #name);
  KILN_FIND(ncclGetErrorString)
  KILN_FIND(ncclGetLastError)
  KILN_FIND(ncclGetUniqueId)
  KILN_FIND(ncclCommInitRankConfig)
  KILN_FIND(ncclCommFinalize)
  KILN_FIND(ncclCommDestroy)
  KILN_FIND(ncclCommAbort)
  KILN_FIND(ncclCommGetAsyncError)
  KILN_FIND(ncclAllReduce)
  KILN_FIND(ncclBroadcast)
  KILN_FIND(ncclReduce)
  KILN_FIND(ncclAllGather)
  KILN_FIND(ncclReduceScatter)
  KILN_FIND(ncclSend)
  KILN_FIND(ncclRecv)
  KILN_FIND(ncclGroupStart)
  KILN_FIND(ncclGroupEnd)
#undef KILN_FIND
  return a;
}

// The process's library, or why there is none (asked once; later calls repeat the answer).
const std::variant<Api, NcclError>& process_library() {
  static const std::variant<Api, NcclError> lib = []() -> std::variant<Api, NcclError> {
    try {
      if (const char* env = std::getenv("KILN_NCCL_LIBRARY"); env && *env)
        return open_api(env, " (KILN_NCCL_LIBRARY)");
      return open_api("libnccl.so.2", "");
    } catch (const NcclError& e) {
      return e;
    }
  }();
  return lib;
}

}  // namespace

const Api& api() {
  const auto& lib = process_library();
  if (const auto* e = std::get_if<NcclError>(&lib)) throw *e;
  return std::get<Api>(lib);
}

const char* result_name(ncclResult_t r) noexcept {
  switch (r) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "unknown NCCL result";
  }
}

void throw_nccl(ncclResult_t r, const char* call, ncclComm_t comm) {
  const Api& a = api();
  const char* text = a.ncclGetErrorString(r);
  const char* last = a.ncclGetLastError(comm);
  throw NcclError(
      fmt::format("{} failed: {} ({}): {}{}{}", call, result_name(r), int(r), text ? text : "",
                  last && *last ? "; NCCL says: " : "", last ? last : ""),
      int(r));
}

}  // namespace detail

std::string LibraryInfo::version_string() const { return nccl::version_string(version); }

std::string version_string(int v) {
  if (v >= 10000) return fmt::format("{}.{}.{}", v / 10000, v % 10000 / 100, v % 100);
  return fmt::format("{}.{}.{}", v / 1000, v % 1000 / 100, v % 100);
}

const LibraryInfo& library() { return detail::api().info; }

bool available() noexcept { return std::holds_alternative<detail::Api>(detail::process_library()); }

std::string unavailable_reason() {
  const auto& lib = detail::process_library();
  if (const auto* e = std::get_if<NcclError>(&lib)) return e->what();
  return "";
}

LibraryInfo check_library(const std::string& path) { return detail::open_api(path, "").info; }

}  // namespace kiln::nccl
