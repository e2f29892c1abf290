// Test runner. Tests that need something a machine may lack are tagged with it, and are never
// reported passed where they could not run (a TEST_CASE never returns early instead):
//   [gpu] a GPU, [multigpu] two GPUs, [nogpu] no GPU (what kiln does on a GPU-less machine),
//   [root] root (chown to another user).
// - a run that asks for such a tag on a machine that lacks what it needs exits with 77, which
//   ctest reports as SKIPPED;
// - any other run leaves the tests this machine cannot run out of every filter term, and says so.
#define CATCH_CONFIG_RUNNER
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

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
  const std::string gpu_count =
      std::to_string(gpus) + (gpus ? "" : ": " + kiln::no_device_reason());
  struct Need {
    const char* tag;
    bool met;
    std::string what;  // "these tests need <what>"
  };
  const std::vector<Need> needs{
      {"[gpu]", gpus >= 1, "a GPU; this machine has " + gpu_count},
      {"[multigpu]", gpus >= 2, "two GPUs; this machine has " + gpu_count},
      {"[nogpu]", gpus == 0, "a machine without a GPU; this one has " + gpu_count},
      {"[root]", ::geteuid() == 0, "root (uid 0); this is uid " + std::to_string(::geteuid())},
  };

  std::string exclusions, left_out;
  for (const auto& need : needs) {
    if (need.met) continue;
    for (const auto& spec : specs) {
      if (asks_for(spec, need.tag)) {
        std::printf("SKIPPED: these tests need %s\n", need.what.c_str());
        return 77;
      }
    }
    exclusions += std::string("~") + need.tag;
    left_out += std::string(left_out.empty() ? "" : ", ") + need.tag + " (need " + need.what + ")";
  }
  if (!exclusions.empty()) {
    if (specs.empty())
      specs.push_back(exclusions);
    else
      for (auto& spec : specs) spec = exclude_in_each_term(spec, exclusions);
    // stderr: a reporter writing to stdout (-r junit) must get it to itself.
    std::fprintf(stderr, "left out here: tests tagged %s\n", left_out.c_str());
  }
  return session.run();
}
