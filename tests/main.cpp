// Test runner. GPU tests are never reported passed where they could not run:
// - a run that asks for [gpu] (or [multigpu]) tests on a machine without a GPU (or with fewer
//   than two) exits with 77, which ctest reports as SKIPPED;
// - any other run leaves the tests this machine cannot run out of every filter term, and says so.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/runtime/device.hpp"

namespace {

bool asks_for(const char* arg, const char* tag) {
  const char* hit = std::strstr(arg, tag);
  return hit && (hit == arg || hit[-1] != '~');
}

// Catch ORs comma-separated terms and ANDs within a term: add the exclusions to each term.
std::string exclude_in_each_term(const std::string& spec, const std::string& exclusions) {
  std::string out, term;
  for (char c : spec + ",") {
    if (c != ',') {
      term += c;
      continue;
    }
    out += (out.empty() ? "" : ",") + term + exclusions;
    term.clear();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int gpus = kiln::device_count();
  std::string exclusions;
  if (gpus < 1) exclusions += "~[gpu]";
  if (gpus < 2) exclusions += "~[multigpu]";

  bool filtered = false;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    filtered = true;
    if ((gpus < 1 && asks_for(argv[i], "[gpu]")) || (gpus < 2 && asks_for(argv[i], "[multigpu]"))) {
      std::printf("SKIPPED: these tests need %s; this machine has %d%s%s\n",
                  asks_for(argv[i], "[multigpu]") ? "two GPUs" : "a GPU", gpus, gpus ? "" : ": ",
                  kiln::no_device_reason().c_str());
      return 77;
    }
  }

  std::vector<std::string> storage;
  storage.reserve(std::size_t(argc) + 1);
  std::vector<char*> args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    bool is_filter = argv[i][0] != '-' && !exclusions.empty();
    args.push_back(is_filter ? storage.emplace_back(exclude_in_each_term(argv[i], exclusions)).data()
                             : argv[i]);
  }
  if (!filtered && !exclusions.empty()) args.push_back(storage.emplace_back(exclusions).data());
  if (!exclusions.empty())
    std::printf("%d GPU(s) here: tests tagged %s are left out\n", gpus,
                gpus < 1 ? "[gpu]" : "[multigpu]");
  return Catch::Session().run(int(args.size()), args.data());
}
