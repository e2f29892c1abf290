#include "support/test_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace kiln::test {

ndarray poisoned(const Shape& shape, dtype t) {
  ndarray a(shape, t);
  std::vector<unsigned char> bytes(a.nbytes(), kPoison);
  if (!bytes.empty()) a.copy_from_host(bytes.data());
  return a;
}

std::mt19937_64& rng() {
  static std::mt19937_64 g(20261121);
  return g;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

ScopedEnv::ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
  const char* old = std::getenv(name);
  had_ = old != nullptr;
  if (had_) old_ = old;
  if (value)
    ::setenv(name, value->c_str(), 1);
  else
    ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (had_)
    ::setenv(name_.c_str(), old_.c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

}  // namespace kiln::test
