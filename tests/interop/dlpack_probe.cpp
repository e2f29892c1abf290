// A ctypes-loadable helper for tests/interop/dlpack_torch.py: kiln's side of a DLPack exchange
// with PyTorch. C functions only; each returns 0 on success or writes kiln's message to `err`.
#include <cstdio>
#include <cstring>
#include <vector>

#include "kiln/kiln.hpp"

namespace {
kiln::ndarray g_exported;  // kiln's own handle on the array given to PyTorch

int fail(const std::exception& e, char* err, int len) {
  std::snprintf(err, std::size_t(len), "%s", e.what());
  return 1;
}
}  // namespace

extern "C" {

/// 1 when kiln sees a GPU.
int kiln_probe_has_gpu() { return kiln::device_count() > 0 ? 1 : 0; }

/// Exports a float32 (rows, cols) array with x[i] = 0.5 * i + 1, as a transposed view when
/// `transposed`; returns the DLManagedTensor* through `out`.
int kiln_probe_export(long long rows, long long cols, int transposed, void** out, char* err,
                      int len) {
  try {
    std::vector<float> h(std::size_t(rows * cols));
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = 0.5f * float(i) + 1;
    g_exported = transposed ? kiln::asarray(h, kiln::Shape{cols, rows}).T()
                            : kiln::asarray(h, kiln::Shape{rows, cols});
    kiln::current_stream().synchronize();
    *out = kiln::to_dlpack(g_exported);
    return 0;
  } catch (const std::exception& e) {
    return fail(e, err, len);
  }
}

/// Reads the exported array back through kiln, in C order, into `host` (rows * cols floats).
int kiln_probe_read_exported(float* host, char* err, int len) {
  try {
    g_exported.copy_to_host(host);
    return 0;
  } catch (const std::exception& e) {
    return fail(e, err, len);
  }
}

/// Imports a DLManagedTensor (ownership passes to kiln), checks it is float32 or int64 of
/// `expect_size` elements, copies it to `host` as float64 in C order, then fills it with 7
/// through kiln so the caller can see the write.
int kiln_probe_import(void* managed, long long expect_size, double* host, char* err, int len) {
  try {
    kiln::ndarray a = kiln::from_dlpack(static_cast<DLManagedTensor*>(managed));
    if (a.size() != expect_size) throw kiln::ShapeError("kiln_probe_import: wrong size");
    auto values = a.astype(kiln::float64).get<double>();
    std::memcpy(host, values.data(), values.size() * sizeof(double));
    a.fill(7);
    kiln::current_stream().synchronize();
    return 0;
  } catch (const std::exception& e) {
    return fail(e, err, len);
  }
}

}  // extern "C"
