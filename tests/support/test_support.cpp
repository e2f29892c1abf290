#include "support/test_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "kiln/runtime/memory.hpp"

namespace kiln::test {

ndarray poisoned(const Shape& shape, dtype t) {
  ndarray a(shape, t);
  std::vector<unsigned char> bytes(a.nbytes(), kPoison);
  if (!bytes.empty()) a.copy_from_host(bytes.data());
  return a;
}

ndarray untouched(const Shape& shape, dtype t) {
  static std::uintptr_t next = 0;
  next += std::uintptr_t(1) << 40;
  const auto bytes = std::size_t(shape_size(shape)) * t.itemsize();
  auto buffer = std::make_shared<Buffer>(reinterpret_cast<void*>(next), bytes, 0, [] {});
  return ndarray(std::move(buffer), shape, c_strides(shape, std::int64_t(t.itemsize())), 0, t);
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
