// Sample 9: host <-> device transfers and DLPack. Times a 256 MiB host->device upload
// (asarray) and download (get) and prints GB/s; then exports an array through DLPack, imports
// it back as a second kiln array, writes through the import and shows the original sees the
// write (one memory, no copy). Checks the values that went both ways; exit 1 if wrong.
#include <cstdio>
#include <vector>

#include "sample_util.hpp"

int main() try {
  if (sample::no_gpu("transfers_dlpack")) return sample::kSkipped;
  const std::int64_t n = 32 << 20;  // 256 MiB of float64
  std::vector<double> h(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) h[std::size_t(i)] = double(i % 1000) + 0.25;
  kiln::asarray(std::vector<double>(16, 1.0));  // context and pool warm-up
  kiln::ndarray d;
  const double up_ms = sample::wall_ms([&] {
    d = kiln::asarray(h);
    kiln::synchronize_device();
  });
  std::vector<double> back;
  const double down_ms = sample::wall_ms([&] { back = d.get<double>(); });
  const double gb = double(n) * 8 / 1e9;
  std::printf("host -> device: %.1f ms (%.1f GB/s, pageable memory)\n", up_ms, gb / up_ms * 1e3);
  std::printf("device -> host: %.1f ms (%.1f GB/s, pageable memory)\n", down_ms,
              gb / down_ms * 1e3);
  bool ok = back == h;

  DLManagedTensor* m = kiln::to_dlpack(d.reshape({n / 1024, 1024}));
  std::printf(
      "DLPack export: device type %d id %d, ndim %d, shape (%lld, %lld), strides (%lld, "
      "%lld) elements, dtype code %d bits %d\n",
      int(m->dl_tensor.device.device_type), m->dl_tensor.device.device_id, m->dl_tensor.ndim,
      static_cast<long long>(m->dl_tensor.shape[0]), static_cast<long long>(m->dl_tensor.shape[1]),
      static_cast<long long>(m->dl_tensor.strides[0]),
      static_cast<long long>(m->dl_tensor.strides[1]), int(m->dl_tensor.dtype.code),
      int(m->dl_tensor.dtype.bits));
  kiln::ndarray imported = kiln::from_dlpack(m);
  ok &= imported.data() == d.data();
  imported(kiln::slice(0, 1)).fill(-1.0);  // first row through the import
  auto head = d(kiln::slice(0, 1024)).get<double>();
  ok &= head == std::vector<double>(1024, -1.0);
  std::printf("DLPack import shares memory: %s\n", imported.data() == d.data() ? "yes" : "no");
  std::printf("%s\n", ok ? "transfers_dlpack: results checked" : "transfers_dlpack: WRONG results");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "transfers_dlpack: %s\n", e.what());
  return 1;
}
