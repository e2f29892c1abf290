#include "kiln/codegen/kernel_abi.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::codegen {

std::string abi_type(const AbiArg& a) {
  switch (a.kind) {
    case AbiKind::value:
      return fmt::format("const {}", a.type.device_type());
    case AbiKind::pointer:
      return fmt::format("{}{}*", a.writable ? "" : "const ", a.type.device_type());
    case AbiKind::strided:
      return fmt::format("const kiln_strided<{}, kiln_idx>", a.ndim);
    case AbiKind::raw_array:
      return fmt::format("const kiln_carray<{}, {}, {}, kiln_idx>", a.type.device_type(), a.ndim,
                         a.contiguous ? "true" : "false");
    case AbiKind::index:
      return "const kiln_idx";
    case AbiKind::dims:
      return fmt::format("const kiln_dims<{}, kiln_idx>", a.ndim);
    case AbiKind::loop_dims:
      return fmt::format("const kiln_loop_dims<{}, kiln_idx>", a.ndim);
  }
  return {};
}

}  // namespace kiln::codegen
