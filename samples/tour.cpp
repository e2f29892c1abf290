// The kiln tour: what kiln sees on this machine, then the seed use cases.
#include <cstdio>

#include <kiln/kiln.hpp>

int main() {
  int n = kiln::device_count();
  if (n == 0) {
    std::printf("kiln: no GPU here (%s).\n", kiln::no_device_reason().c_str());
    return 0;
  }
  std::printf("kiln: %d GPU(s)\n", n);
  for (int d = 0; d < n; ++d) {
    const auto& p = kiln::device_properties(d);
    std::printf("  [%d] %s, sm_%d, %d multiprocessors, %.1f GiB\n", d, p.name.c_str(), p.arch(),
                p.multiprocessor_count, double(p.total_memory) / (1 << 30));
  }
  return 0;
}
