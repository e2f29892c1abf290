// Test runner. Without a GPU, a run asked for [gpu] tests exits with 77 (ctest: SKIPPED), and a
// run with no filter leaves [gpu] tests out and says so, so GPU tests are never reported passed
// where they could not run. [multigpu] tests (tagged [gpu][multigpu]) need two GPUs, likewise.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "kiln/runtime/device.hpp"

int main(int argc, char** argv) {
  bool filtered = false, wants_gpu = false, wants_two = false;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') filtered = true;
    if (std::strstr(argv[i], "[gpu]") && !std::strstr(argv[i], "~[gpu]")) wants_gpu = true;
    if (std::strstr(argv[i], "[multigpu]") && !std::strstr(argv[i], "~[multigpu]")) wants_two = true;
  }
  std::vector<char*> args(argv, argv + argc);
  std::string no_gpu = "~[gpu]";
  if (kiln::device_count() == 0) {
    if (wants_gpu) {
      std::printf("SKIPPED: no GPU here (%s); [gpu] tests did not run\n",
                  kiln::no_device_reason().c_str());
      return 77;
    }
    if (!filtered) {
      std::printf("no GPU here (%s): [gpu] tests left out\n", kiln::no_device_reason().c_str());
      args.push_back(no_gpu.data());
    }
  }
  if (wants_two && kiln::device_count() < 2) {
    std::printf("SKIPPED: [multigpu] tests need two GPUs; this machine has %d\n",
                kiln::device_count());
    return 77;
  }
  std::string no_multi = "~[multigpu]";
  if (!filtered && kiln::device_count() < 2) args.push_back(no_multi.data());
  int rc = Catch::Session().run(int(args.size()), args.data());
  // A filter that matched nothing (e.g. a module without GPU tests yet) is not a pass either.
  return rc;
}
