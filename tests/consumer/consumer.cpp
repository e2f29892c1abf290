#include <cstdio>
#include <kiln/kiln.hpp>

int main() {
  // CPU-side work runs anywhere; GPU work only where there is one.
  if (kiln::result_type(kiln::int8, kiln::uint8) != kiln::int16) return 1;
  std::printf("consumer: kiln found, %d GPU(s)\n", kiln::device_count());
  return 0;
}
