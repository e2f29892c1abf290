#pragma once
// Internal: NCCL reached at run time. nccl.h (from the CUDA Toolkit) gives the types and
// prototypes; the functions are looked up with dlsym in the library library() loaded, so no
// kiln binary lists libnccl as NEEDED (ctest cpu.no_libcuda checks that).
#include <nccl.h>

#include <string>

#include "kiln/library/collectives.hpp"

namespace kiln::nccl::detail {

/// The NCCL entry points kiln calls, typed from nccl.h's prototypes.
struct Api {
#define KILN_NCCL_FN(name) decltype(&::name) name = nullptr;
  KILN_NCCL_FN(ncclGetVersion)
  KILN_NCCL_FN(ncclGetErrorString)
  KILN_NCCL_FN(ncclGetLastError)
  KILN_NCCL_FN(ncclGetUniqueId)
  KILN_NCCL_FN(ncclCommInitRankConfig)
  KILN_NCCL_FN(ncclCommFinalize)
  KILN_NCCL_FN(ncclCommDestroy)
  KILN_NCCL_FN(ncclCommAbort)
  KILN_NCCL_FN(ncclCommGetAsyncError)
  KILN_NCCL_FN(ncclAllReduce)
  KILN_NCCL_FN(ncclBroadcast)
  KILN_NCCL_FN(ncclReduce)
  KILN_NCCL_FN(ncclAllGather)
  KILN_NCCL_FN(ncclReduceScatter)
  KILN_NCCL_FN(ncclSend)
  KILN_NCCL_FN(ncclRecv)
  KILN_NCCL_FN(ncclGroupStart)
  KILN_NCCL_FN(ncclGroupEnd)
#undef KILN_NCCL_FN
  LibraryInfo info;
};

/// The process's NCCL (loaded once; NcclError when it cannot be used).
const Api& api();

/// "ncclAllReduce failed: ncclInvalidUsage (5): <NCCL's last error>" as an NcclError.
[[noreturn]] void throw_nccl(ncclResult_t r, const char* call, ncclComm_t comm);
inline void check_nccl(ncclResult_t r, const char* call, ncclComm_t comm = nullptr) {
  if (r != ncclSuccess && r != ncclInProgress) throw_nccl(r, call, comm);
}
/// NCCL's name for a result code ("ncclRemoteError").
const char* result_name(ncclResult_t r) noexcept;

}  // namespace kiln::nccl::detail
