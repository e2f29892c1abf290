#include <catch2/catch.hpp>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines between the markers, each stripped of leading spaces; nullopt if either marker
// is missing.
std::optional<std::string> between(const std::string& text, const std::string& begin,
                                   const std::string& end) {
  auto b = text.find(begin);
  auto e = b == std::string::npos ? b : text.find(end, b + begin.size());
  if (b == std::string::npos || e == std::string::npos) return std::nullopt;
  std::istringstream in(text.substr(b + begin.size(), e - b - begin.size()));
  std::string line, out;
  while (std::getline(in, line)) {
    auto first = line.find_first_not_of(' ');
    if (first != std::string::npos) out += line.substr(first) + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("the README shows exactly the example the GPU test runs", "[ops]") {
  std::string readme = read(KILN_TEST_SOURCE_DIR "/../README.md");
  std::string test = read(KILN_TEST_SOURCE_DIR "/ops/readme_gpu_test.cpp");
  // Markers or snippet missing in either file is a failure, never two equal "not found"s.
  const auto in_test = between(test, "// snippet-begin: readme-example", "// snippet-end");
  const auto in_readme = between(readme, "<!-- snippet: readme-example -->\n```cpp", "```");
  INFO(
      "markers: // snippet-begin: readme-example ... // snippet-end in "
      "tests/ops/readme_gpu_test.cpp, "
      "<!-- snippet: readme-example --> then ```cpp ... ``` in README.md");
  REQUIRE(in_test.has_value());
  REQUIRE(in_readme.has_value());
  // The snippet is the kernel call, not an empty block.
  CHECK_THAT(*in_test, Catch::Matchers::Contains("ElementwiseKernel"));
  CHECK(*in_readme == *in_test);
}
