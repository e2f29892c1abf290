// The kernel ABI's host description (abi_layout) against what NVRTC lays out for the types
// kernels declare (abi_type): sizes, alignments and standard layout, for every argument
// kind, dtype and index width, as static_asserts compiled for sm_90.
#include "kiln/codegen/kernel_abi.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/codegen/device_header.hpp"
#include "kiln/runtime/error.hpp"

using namespace kiln;
using codegen::AbiArg;
using codegen::AbiKind;

namespace {

std::vector<AbiArg> every_arg() {
  std::vector<AbiArg> out;
  for (int i = 0; i < kNumDtypes; ++i) {
    const dtype t{static_cast<dtype_id>(i)};
    out.push_back({.kind = AbiKind::value, .type = t});
    out.push_back({.kind = AbiKind::pointer, .type = t});
    out.push_back({.kind = AbiKind::pointer, .type = t, .writable = true});
    for (int nd : {0, 1, 2, 5})
      for (bool c : {true, false})
        out.push_back({.kind = AbiKind::raw_array, .type = t, .ndim = nd, .contiguous = c});
  }
  for (int nd : {1, 2, 3, 7, 32}) {
    out.push_back({.kind = AbiKind::strided, .ndim = nd});
    out.push_back({.kind = AbiKind::dims, .ndim = nd});
    out.push_back({.kind = AbiKind::loop_dims, .ndim = nd});
  }
  out.push_back({.kind = AbiKind::index});
  return out;
}

// The declared type without its top-level const (offsetof wants a plain class type).
std::string plain(std::string t) { return t.starts_with("const ") ? t.substr(6) : t; }

std::string static_asserts(int index_bits) {
  std::string src = codegen::device_header({.fp16 = true, .bf16 = true, .complex = true});
  src += fmt::format("typedef {} kiln_idx;\n", index_bits == 64 ? "long long" : "int");
  int n = 0;
  for (const AbiArg& a : every_arg()) {
    const auto l = codegen::abi_layout(a, index_bits);
    const std::string t = fmt::format("kiln_t{}", n++);
    src += fmt::format("typedef {} {};\n", plain(codegen::abi_type(a)), t);
    src += fmt::format(
        "static_assert(sizeof({0}) == {1} && alignof({0}) == {2}, \"{3}: size {1}, align {2}\");\n",
        t, l.size, l.align, codegen::abi_type(a));
    // Standard layout fixes each field at the next offset its alignment allows, in declaration
    // order (NVRTC has no constant offsetof): with the sizes above, the pointer-then-indices
    // order the host packs.
    src += fmt::format(
        "static_assert(__is_standard_layout({0}) && __is_trivially_copyable({0}), \"{0}\");\n", t);
    const int idx = index_bits / 8;
    CHECK(l.size >= (l.pointer ? 8u : 0u) + std::uint32_t(idx) * l.indices + l.value_size);
  }
  return src;
}

}  // namespace

TEST_CASE("every ABI argument kind has the size, alignment and layout the host packs",
          "[codegen]") {
  for (int bits : {32, 64}) {
    INFO("index bits " << bits);
    const std::string src = static_asserts(bits);
    try {
      auto bin = cache::nvrtc_compile({.source = src, .kernel_name = "abi_check", .arch = 90});
      CHECK_FALSE(bin.cubin.empty());
    } catch (const CompileError& e) {
      FAIL(e.what());
    }
  }
}

TEST_CASE("ABI layouts; a pointer then index-width integers, padded to the alignment",
          "[codegen]") {
  using codegen::abi_layout;
  CHECK(abi_layout({.kind = AbiKind::strided, .ndim = 3}, 32).size == 24);  // 8 + 3*4 -> 24
  CHECK(abi_layout({.kind = AbiKind::strided, .ndim = 3}, 64).size == 32);
  CHECK(abi_layout({.kind = AbiKind::raw_array, .ndim = 0}, 32).indices == 3);  // size, (1,), (0,)
  CHECK(abi_layout({.kind = AbiKind::value, .type = complex128}, 32).align == 16);
  CHECK(abi_layout({.kind = AbiKind::dims, .ndim = 3}, 32).size == 12);
  CHECK(abi_layout({.kind = AbiKind::index}, 64).size == 8);
  CHECK(abi_layout({.kind = AbiKind::loop_dims, .ndim = 3}, 32).size == 64);  // 5 arrays of 3, 1
  CHECK(abi_layout({.kind = AbiKind::loop_dims, .ndim = 3}, 64).indices == 16);
}
