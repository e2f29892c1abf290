// kiln's own elementwise kernels (cast, copy, fill) compile for sm_90 without a GPU.
#include "kiln/engine/elementwise_builtins.hpp"

#include <catch2/catch.hpp>

#include "kiln/runtime/error.hpp"
#include "support/test_support.hpp"

using namespace kiln;

TEST_CASE("kiln's builtin cast, copy and fill kernels compile for sm_90", "[ops]") {
  test::TempDir dir;
  test::ScopedEnv env("KILN_CACHE_DIR", dir.path().c_str());
  const auto& cast = builtin::cast_kernel();
  CHECK_FALSE(
      cast.compile_for(cast.make_spec(std::vector<dtype>{float16, int64}), 90).cubin.empty());
  CHECK_FALSE(
      cast.compile_for(cast.make_spec(std::vector<dtype>{bool_, bfloat16}), 90).cubin.empty());
  const auto& copy = builtin::copy_kernel();
  CHECK_FALSE(copy.compile_for(copy.make_spec(std::vector<dtype>{uint8}, {.vector_width = 16}), 90)
                  .cubin.empty());
  const auto& fill = builtin::fill_kernel(int16);
  auto spec = fill.make_spec(std::vector<dtype>{int16, int16}, {.vector_width = 8});
  spec.set_param(0, int16, codegen::OperandKind::scalar);
  CHECK_FALSE(fill.compile_for(spec, 90).cubin.empty());
  CHECK(&builtin::fill_kernel(int16) == &fill);
}
