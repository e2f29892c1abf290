// kiln's own creation/conversion kernels compile with NVRTC for sm_90 for every dtype they can
// be asked for, with the operand kinds real calls use (scalars as scalars), in each layout.
#include <catch2/catch.hpp>

#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/engine/elementwise_builtins.hpp"
#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using codegen::Layout;
using codegen::OperandKind;

namespace {

// Compiles `k` for sm_90 with argument dtypes `dts`, turning the listed parameters into scalars.
void compile_with_scalars(const ElementwiseKernel& k, std::vector<dtype> dts,
                          std::vector<int> scalar_params, elementwise_layout layout = {}) {
  auto spec = k.make_spec(dts, layout);
  for (int p : scalar_params) spec.set_param(p, spec.param_dtype(p), OperandKind::scalar);
  auto bin = cache::nvrtc_compile(k.compile_request(spec, 90));
  CHECK(bin.cubin.size() > 0);
}

const elementwise_layout kLayouts[] = {
    {Layout::contiguous, 1, 32, 1},
    {Layout::contiguous, 1, 64, 1},
    {Layout::strided, 2, 32, 1},
    {Layout::strided, 3, 64, 1},
};

}  // namespace

TEST_CASE("fill compiles for every dtype and layout", "[ops]") {
  test::ScopedEnv mem("KILN_CACHE_IN_MEMORY", "1");
  for (dtype t : kAllDtypes)
    for (const auto& layout : kLayouts) {
      INFO(t.name() << " layout " << int(layout.layout) << " ndim " << layout.ndim);
      compile_with_scalars(builtin::fill_kernel(t), {t, t}, {0}, layout);
    }
}

TEST_CASE("arange and linspace compile for every output dtype", "[ops]") {
  test::ScopedEnv mem("KILN_CACHE_IN_MEMORY", "1");
  for (dtype t : kAllDtypes) {
    INFO(t.name());
    compile_with_scalars(builtin::arange_int_kernel(), {int64, int64, t}, {0, 1});
    compile_with_scalars(builtin::arange_float_kernel(), {float64, float64, t}, {0, 1});
    compile_with_scalars(builtin::linspace_kernel(), {float64, float64, float64, int64, bool_, t},
                         {0, 1, 2, 3, 4});
  }
}

TEST_CASE("copy compiles for every dtype, contiguous and strided", "[ops]") {
  test::ScopedEnv mem("KILN_CACHE_IN_MEMORY", "1");
  for (dtype t : kAllDtypes)
    for (const auto& layout : kLayouts)
      compile_with_scalars(builtin::copy_kernel(), {t, t}, {}, layout);
}

TEST_CASE("creation argument errors are raised before any device work", "[ops]") {
  CHECK_THROWS_AS(arange(0, 10, 0), ValueError);
  CHECK_THROWS_AS(linspace(0, 1, -1), ValueError);
}
