// kiln's own device complex type: no <cuda/std/complex> in generated kernels, and every
// operator and function compiles for complex<float> and complex<double> with NVRTC.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "kiln/cache/nvrtc_compiler.hpp"
#include "kiln/codegen/device_header.hpp"
#include "kiln/kiln.hpp"

using namespace kiln;

namespace {

// One device function per precision that uses the whole documented API, with real operands
// of other arithmetic types (int, double) on either side as user kernels write them.
constexpr const char* kEveryUse = R"(
template <class V> __device__ void kiln_test_all(complex<V>* o, const complex<V>* a, V* r, int n) {
  typedef complex<V> C;
  static_assert(sizeof(C) == 2 * sizeof(V) && alignof(C) == 2 * sizeof(V), "std::complex layout");
  C x = a[0], y = a[1], z;
  z = x + y; z += x - y; z = z * x; z -= y / x; z *= 2; z /= 3.0; z += 1; z -= V(0.5);
  z = z + 2 + (1 - z) * 3 - 0.5 * z + z / 2 + 2 / z - (-z) + (+z);
  bool b = (z == x) || (z != y) || (z == V(1)) || (1 == z) || (z != 0);
  z.real(z.real() + V(b)); z.imag(real(z) + imag(z));
  z = conj(z) + polar(abs(z), arg(z)) + norm(z) + proj(z);
  z = z + exp(x) + log(x) + log10(x) + sqrt(x) + pow(x, y) + pow(x, V(2)) + pow(V(2), x) + pow(x, 3);
  z = z + sin(x) + cos(x) + tan(x) + sinh(x) + cosh(x) + tanh(x);
  z = z + asin(x) + acos(x) + atan(x) + asinh(x) + acosh(x) + atanh(x);
  z = b ? z : C(1, 2);
  o[0] = z;
  o[1] = kiln_cast<C>(kiln_cast<complex<float>>(z)) + kiln_cast<C>(kiln_cast<complex<double>>(z));
  o[2] = kiln_cast<C>(n) + kiln_cast<C>(r[0]) + kiln_cast<C>(true) + kiln_cast<C>(2u);
  r[1] = kiln_cast<V>(z) + V(kiln_cast<bool>(z)) + V(kiln_cast<int>(z)) + V(kiln_cast<unsigned char>(z));
}
extern "C" __global__ void every_complex_use(complex<float>* of, const complex<float>* af, float* rf,
                                             complex<double>* od, const complex<double>* ad, double* rd, int n) {
  kiln_test_all(of, af, rf, n);
  kiln_test_all(od, ad, rd, n);
}
)";

}  // namespace

TEST_CASE("complex kernels use kiln's own complex type, not <cuda/std/complex>", "[codegen]") {
  const std::string header = codegen::device_header({.complex = true});
  CHECK_THAT(header, !Catch::Contains("cuda/std"));
  CHECK_THAT(header, !Catch::Contains("#include"));
  CHECK_THAT(header, Catch::Contains("struct alignas(2 * sizeof(kiln_V)) complex"));

  ElementwiseKernel k("complex64 x, complex64 y", "complex64 z", "z = x * y + conj(x)",
                      "cmul_conj");
  const auto spec = k.make_spec(std::vector<dtype>{complex64, complex64}, {});
  CHECK_THAT(k.source(spec), !Catch::Contains("cuda/std/complex"));
  CHECK_FALSE(k.compile_for(spec, 90).cubin.empty());
}

TEST_CASE("every complex operator and function compiles for complex<float> and complex<double>",
          "[codegen]") {
  const std::string src = codegen::device_header({.complex = true}) + kEveryUse;
  try {
    auto bin =
        cache::nvrtc_compile({.source = src, .kernel_name = "every_complex_use", .arch = 90});
    CHECK_FALSE(bin.cubin.empty());
  } catch (const CompileError& e) {
    FAIL(e.what());
  }
}
