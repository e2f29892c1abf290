// Links against kiln::runtime and nothing else: runtime/ must stand on its own (no symbol
// that only codegen/, cache/ or ops/ define). Built by the normal build; ctest runs it.
#include <cstdio>

#include "kiln/runtime/device.hpp"
#include "kiln/runtime/hash128.hpp"
#include "kiln/runtime/ndarray.hpp"

int main() {
  const kiln::Shape s{2, 3};
  const kiln::ndarray meta(nullptr, s, kiln::c_strides(s, 4), 0, kiln::float32);
  const auto t = meta.T();
  const kiln::Hash128 h = kiln::hash128("kiln", 4);
  std::printf("runtime alone: view %s, hash %s, %d GPU(s)\n", t.shape().str().c_str(),
              h.hex().c_str(), kiln::device_count());
  return t.shape() == kiln::Shape{3, 2} ? 0 : 1;
}
