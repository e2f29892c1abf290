#include "kiln/codegen/kernel_abi.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kiln::codegen {

std::string abi_type(const AbiArg& a) {
  switch (a.kind) {
    case AbiKind::value: return fmt::format("const {}", a.type.device_type());
    case AbiKind::pointer: return fmt::format("{}{}*", a.writable ? "" : "const ", a.type.device_type());
    case AbiKind::strided: return fmt::format("const kiln_strided<{}, kiln_idx>", a.ndim);
    case AbiKind::raw_array:
      return fmt::format("const kiln_carray<{}, {}, {}, kiln_idx>", a.type.device_type(), a.ndim,
                         a.contiguous ? "true" : "false");
    case AbiKind::index: return "const kiln_idx";
    case AbiKind::dims: return fmt::format("const kiln_dims<{}, kiln_idx>", a.ndim);
  }
  return {};
}

AbiLayout abi_layout(const AbiArg& a, int index_bits) {
  const std::uint32_t idx = index_bits == 64 ? 8 : 4;
  AbiLayout l;
  switch (a.kind) {
    case AbiKind::value:
      l.value_size = std::uint32_t(a.type.itemsize());
      // Device types align to their size (complex<double>: 16), bool and 1-byte ints to 1.
      l.size = l.align = l.value_size;
      return l;
    case AbiKind::pointer: l.pointer = true; break;
    case AbiKind::strided: l.pointer = true, l.indices = std::uint32_t(a.ndim); break;
    case AbiKind::raw_array:
      l.pointer = true, l.indices = 1 + 2 * std::uint32_t(std::max(a.ndim, 1));
      break;
    case AbiKind::index: l.indices = 1; break;
    case AbiKind::dims: l.indices = std::uint32_t(a.ndim); break;
  }
  l.align = l.pointer ? 8 : idx;
  const std::uint32_t bytes = (l.pointer ? 8 : 0) + idx * l.indices;
  l.size = (bytes + l.align - 1) / l.align * l.align;
  return l;
}

}  // namespace kiln::codegen
