// A stand-in for libnccl.so.2 that exports ncclGetVersion only, reporting
// KILN_FAKE_NCCL_VERSION (or the environment variable of that name, when set): loading it must
// fail with kiln's "too old" error (an old version) or "not a usable NCCL" error (a new version
// without the other entry points).
// The signature is nccl.h's own: kiln calls it through ncclResult_t (*)(int*), and a call
// through a pointer of another function type is undefined (UBSan's -fsanitize=function).
#include <nccl.h>

#include <cstdlib>

extern "C" __attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int* version) {
  const char* forced = std::getenv("KILN_FAKE_NCCL_VERSION");
  *version = forced ? std::atoi(forced) : KILN_FAKE_NCCL_VERSION;
  return ncclSuccess;
}
