// A stand-in for libnccl.so.2 that exports ncclGetVersion only, reporting
// KILN_FAKE_NCCL_VERSION: loading it must fail with kiln's "too old" error (an old version) or
// "not a usable NCCL" error (a new version without the other entry points).
extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  *version = KILN_FAKE_NCCL_VERSION;
  return 0;
}
