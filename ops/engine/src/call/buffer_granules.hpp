#pragma once
// Whether the aligned 16-byte granules holding an array's elements all lie inside its buffer.
// Kernels that read aligned 16-byte windows (reductions over runs, shifted rows) load bytes
// of a window past the array's ends; kiln's own buffers are whole granules
// (runtime/src/memory.cpp), memory from elsewhere (DLPack) may not be.
#include <cstdint>

#include "kiln/runtime/memory.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln::detail {

inline bool granules_inside_buffer(const ndarray& a) {
  const Buffer* buf = a.buffer().get();
  if (!buf || !buf->data() || a.size() == 0) return false;
  const auto [lo, hi] = a.byte_extent();
  const auto begin = reinterpret_cast<std::uintptr_t>(buf->data());
  const auto at = reinterpret_cast<std::uintptr_t>(a.data());
  const std::uintptr_t first = (at + std::uintptr_t(lo)) & ~std::uintptr_t(15);
  const std::uintptr_t end = (at + std::uintptr_t(hi) + 15) & ~std::uintptr_t(15);
  return first >= begin && end <= begin + buf->size();
}

}  // namespace kiln::detail
