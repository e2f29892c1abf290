// Host packing of kernel arguments (ops/src/call/kernel_args) against the ABI description:
// every argument starts at its abi_layout alignment, holds the pointer then the index-width
// integers in order, and takes abi_layout's size. (kernel_abi_test checks the same numbers
// against NVRTC's layout of the declared types.)
#include "call/kernel_args.hpp"

#include <catch2/catch.hpp>
#include <cstring>

using namespace kiln;
using codegen::AbiKind;

namespace {

template <class I>
std::vector<std::int64_t> read_indices(const void* p, std::size_t offset, int n) {
  std::vector<std::int64_t> out;
  for (int i = 0; i < n; ++i) {
    I v;
    std::memcpy(&v, static_cast<const std::byte*>(p) + offset + sizeof(I) * std::size_t(i),
                sizeof v);
    out.push_back(v);
  }
  return out;
}

const void* read_pointer(const void* p) {
  const void* v;
  std::memcpy(&v, p, 8);
  return v;
}

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

TEST_CASE("packed kernel arguments follow the ABI layout for 32- and 64-bit indices", "[ops]") {
  for (int bits : {32, 64}) {
    INFO("index bits " << bits);
    auto args = std::make_unique<detail::KernelArgs>(bits);
    int x = 0;
    const std::int64_t strides[] = {-4, 12, 96}, shape[] = {2, 3};
    const std::int64_t raw_strides[] = {12, 4};
    const double value = 2.5;
    args->put_value(int8, "\x7f");
    args->put_strided(&x, strides, 3);
    args->put_value(float64, &value);
    args->put_raw_array(&x, 6, shape, raw_strides, 2);
    args->put_index(123456);
    args->put_dims(shape, 2);
    REQUIRE(args->count() == 6);
    void** argv = args->argv();

    CHECK(*static_cast<const std::int8_t*>(argv[0]) == 127);
    const auto st = codegen::abi_layout({.kind = AbiKind::strided, .ndim = 3}, bits);
    CHECK(addr(argv[1]) % st.align == 0);
    CHECK(read_pointer(argv[1]) == &x);
    const std::vector<std::int64_t> want_strides{-4, 12, 96};
    CHECK((bits == 64 ? read_indices<std::int64_t>(argv[1], 8, 3)
                      : read_indices<std::int32_t>(argv[1], 8, 3)) == want_strides);
    CHECK(addr(argv[2]) - addr(argv[1]) >= st.size);
    CHECK(addr(argv[2]) % 8 == 0);
    double back;
    std::memcpy(&back, argv[2], 8);
    CHECK(back == 2.5);
    const std::vector<std::int64_t> want_raw{6, 2, 3, 12, 4};
    CHECK((bits == 64 ? read_indices<std::int64_t>(argv[3], 8, 5)
                      : read_indices<std::int32_t>(argv[3], 8, 5)) == want_raw);
    CHECK((bits == 64
               ? read_indices<std::int64_t>(argv[4], 0, 1)
               : read_indices<std::int32_t>(argv[4], 0, 1)) == std::vector<std::int64_t>{123456});
    CHECK((bits == 64
               ? read_indices<std::int64_t>(argv[5], 0, 2)
               : read_indices<std::int32_t>(argv[5], 0, 2)) == std::vector<std::int64_t>{2, 3});
    CHECK(addr(argv[5]) % std::uintptr_t(bits / 8) == 0);
  }
}

TEST_CASE("a 0-d raw array is packed as shape (1,) and strides (0,)", "[ops]") {
  detail::KernelArgs args(32);
  int x = 0;
  args.put_raw_array(&x, 1, nullptr, nullptr, 0);
  CHECK(read_indices<std::int32_t>(args.argv()[0], 8, 3) == std::vector<std::int64_t>{1, 1, 0});
}
