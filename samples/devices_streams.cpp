// Sample 4: devices and streams. Prints every GPU's properties, the current device, work on
// another device under DeviceGuard (when there are two), two streams running fills with an
// event timing each, and a copy between GPUs when there are two. Checks every result it
// prints; exit 1 if one is wrong.
#include <cstdio>

#include "sample_util.hpp"

int main() try {
  if (sample::no_gpu("devices_streams")) return sample::kSkipped;
  bool ok = true;
  const int count = kiln::device_count();
  for (int dev = 0; dev < count; ++dev) {
    const auto& p = kiln::device_properties(dev);
    std::printf("GPU %d: %s, sm_%d, %d SMs, %.1f GiB\n", dev, p.name.c_str(), p.arch(),
                p.multiprocessor_count, double(p.total_memory) / (1 << 30));
  }
  std::printf("current device: %d\n", kiln::current_device());
  if (count > 1) {
    kiln::DeviceGuard on(1);
    auto y = kiln::ones({4});
    std::printf("inside DeviceGuard(1): current device %d, array on device %d\n",
                kiln::current_device(), y.device());
    ok &= y.device() == 1 && kiln::current_device() == 1;
  }
  ok &= kiln::current_device() == 0;

  kiln::Stream s1(true), s2(true);
  kiln::ndarray a = kiln::empty({1 << 24}, kiln::float32),
                b = kiln::empty({1 << 24}, kiln::float32);
  kiln::current_stream().synchronize();  // the arrays were allocated on the null stream
  kiln::Event start1, stop1, start2, stop2;
  {
    kiln::StreamGuard use(s1);
    start1.record(s1);
    a.fill(1.5f);
    stop1.record(s1);
  }
  {
    kiln::StreamGuard use(s2);
    start2.record(s2);
    b.fill(-2.0f);
    stop2.record(s2);
  }
  stop1.synchronize();
  stop2.synchronize();
  std::printf("stream 1: fill 64 MiB in %.3f ms; stream 2: fill 64 MiB in %.3f ms\n",
              kiln::Event::elapsed_ms(start1, stop1), kiln::Event::elapsed_ms(start2, stop2));
  ok &= a(kiln::slice(0, std::nullopt, 4096)).get<float>() == std::vector<float>(4096, 1.5f);
  ok &= b(kiln::slice(0, std::nullopt, 4096)).get<float>() == std::vector<float>(4096, -2.0f);

  if (count > 1) {
    auto h = std::vector<double>{1, 2, 3, 4, 5};
    auto on0 = kiln::asarray(h);
    auto on1 = on0.to_device(1);
    std::printf("copied 5 doubles from GPU 0 to GPU %d\n", on1.device());
    ok &= on1.device() == 1 && on1.get<double>() == h;
  } else {
    std::printf("one GPU: no copy between GPUs\n");
  }
  std::printf("%s\n", ok ? "devices_streams: results checked" : "devices_streams: WRONG results");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "devices_streams: %s\n", e.what());
  return 1;
}
