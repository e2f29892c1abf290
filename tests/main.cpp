// Test runner. GPU tests are never reported passed where they could not run:
// - a run that asks for [gpu] (or [multigpu]) tests on a machine without a GPU (or with fewer
//   than two) exits with 77, which ctest reports as SKIPPED;
// - any other run leaves the tests this machine cannot run out of every filter term, and says so.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "kiln/runtime/device.hpp"

namespace {

bool asks_for(const std::string& spec, const char* tag) {
  for (auto at = spec.find(tag); at != std::string::npos; at = spec.find(tag, at + 1))
    if (at == 0 || spec[at - 1] != '~') return true;
  return false;
}

// Catch 2.13 ORs comma-separated terms and ANDs the patterns within a term (and across
// separate spec arguments): put the exclusions in front of every non-empty term. In front,
// because after a name Catch reads "name~[gpu]" as the name "name~". A backslash escapes a
// comma, as in Catch.
std::string exclude_in_each_term(const std::string& spec, const std::string& exclusions) {
  std::string out, term;
  auto flush = [&] {
    const bool blank = term.find_first_not_of(' ') == std::string::npos;
    out += blank ? term : exclusions + term;
    term.clear();
  };
  for (std::size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == '\\' && i + 1 < spec.size()) {
      term += spec[i];
      term += spec[++i];
    } else if (spec[i] == ',') {
      flush();
      out += ',';
    } else {
      term += spec[i];
    }
  }
  flush();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Catch::Session session;
  // Catch parses its own arguments (reporters, -o FILE, ...); only its test spec is touched.
  if (const int bad = session.applyCommandLine(argc, argv); bad != 0) return bad;
  auto& specs = session.configData().testsOrTags;

  const int gpus = kiln::device_count();
  std::string exclusions;
  if (gpus < 1) exclusions += "~[gpu]";
  if (gpus < 2) exclusions += "~[multigpu]";

  for (const auto& spec : specs) {
    if ((gpus < 1 && asks_for(spec, "[gpu]")) || (gpus < 2 && asks_for(spec, "[multigpu]"))) {
      std::printf("SKIPPED: these tests need %s; this machine has %d%s%s\n",
                  asks_for(spec, "[multigpu]") ? "two GPUs" : "a GPU", gpus, gpus ? "" : ": ",
                  kiln::no_device_reason().c_str());
      return 77;
    }
  }
  if (!exclusions.empty()) {
    if (specs.empty())
      specs.push_back(exclusions);
    else
      for (auto& spec : specs) spec = exclude_in_each_term(spec, exclusions);
    // stderr: a reporter writing to stdout (-r junit) must get it to itself.
    std::fprintf(stderr, "%d GPU(s) here: tests tagged %s are left out\n", gpus,
                gpus < 1 ? "[gpu]" : "[multigpu]");
  }
  return session.run();
}
