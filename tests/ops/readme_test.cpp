#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines between the markers, each stripped of leading spaces.
std::string between(const std::string& text, const std::string& begin, const std::string& end) {
  auto b = text.find(begin);
  auto e = b == std::string::npos ? b : text.find(end, b + begin.size());
  if (b == std::string::npos || e == std::string::npos) return "<markers not found>";
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
  std::string in_test = between(test, "// snippet-begin: readme-example", "// snippet-end");
  std::string in_readme = between(readme, "<!-- snippet: readme-example -->\n```cpp", "```");
  CHECK(in_readme == in_test);
}
