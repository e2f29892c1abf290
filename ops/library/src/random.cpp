// kiln::random::Generator on cuRAND's host API. Each call: checks, then set seed + offset +
// stream on this device's cuRAND generator, generate raw numbers, shape them with a JIT
// elementwise kernel, and advance the offset by an upper bound of what cuRAND consumed.
#include "kiln/library/random.hpp"

#include <curand.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/library/copying.hpp"
#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/stream.hpp"

namespace kiln::random {
namespace {

const char* curand_status_name(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_VERSION_MISMATCH:
      return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED:
      return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED:
      return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR:
      return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE:
      return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE:
      return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
      return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE:
      return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE:
      return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED:
      return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH:
      return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR:
      return "CURAND_STATUS_INTERNAL_ERROR";
    default:
      return "unknown cuRAND status";
  }
}

void check(curandStatus_t s, const char* call) {
  if (s == CURAND_STATUS_SUCCESS) return;
  throw CudaError(fmt::format("{} failed: {} ({})", call, curand_status_name(s), int(s)), int(s));
}
#define KILN_CURAND(call) check((call), #call)

// cuRAND's host API cannot be captured as kiln uses it: every call sets the generator's seed
// and offset, and the generate call that follows rebuilds the generator's device state and
// waits for the device (a cudaDeviceSynchronize inside curandGenerateNormalDouble was seen
// failing a capture on an H100, CUDA 13.0, driver 580).
void refuse_in_capture(const char* op) {
  if (!kiln::detail::thread_capture()) return;
  kiln::detail::throw_capture_refusal(
      fmt::format("random.Generator.{}", op),
      "cuRAND resets its generator for each call's seed and offset and waits for the device "
      "doing it; draw the numbers before the capture into an array the captured work reads");
}

void check_float(const char* op, dtype t) {
  if (t != float32 && t != float64)
    throw TypeError(
        fmt::format("random.Generator.{}: dtype must be float32 or float64, not {}", op, t.name()));
}

std::int64_t checked_size(const char* op, const Shape& shape) {
  for (auto d : shape)
    if (d < 0)
      throw ValueError(
          fmt::format("random.Generator.{}: negative dimension in shape {}", op, shape.str()));
  return shape_size(shape);
}

// A C-contiguous array of `shape` whose buffer holds at least `alloc_elems` elements (cuRAND's
// normal generators want an even count).
ndarray padded_array(const Shape& shape, dtype t, std::int64_t alloc_elems) {
  if (alloc_elems <= shape_size(shape)) return ndarray(shape, t);
  ndarray flat({alloc_elems}, t);
  return ndarray(flat.buffer(), shape, c_strides(shape, std::int64_t(t.itemsize())), 0, t);
}

}  // namespace

struct Generator::State {
  std::uint64_t seed = 0, offset = 0;
  std::map<int, curandGenerator_t> per_device;
  ~State() {
    for (auto& [device, g] : per_device) {
      try {
        DeviceGuard on(device);
        curandDestroyGenerator(g);
      } catch (...) {  // process teardown: nothing useful to do
      }
    }
  }
  // The generator of the current device, set to (seed, offset) on the current stream.
  curandGenerator_t prepare() {
    const int device = current_device();  // NoDeviceError without a GPU
    auto it = per_device.find(device);
    if (it == per_device.end()) {
      curandGenerator_t g = nullptr;
      KILN_CURAND(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10));
      KILN_CURAND(curandSetGeneratorOrdering(g, CURAND_ORDERING_PSEUDO_LEGACY));
      it = per_device.emplace(device, g).first;
    }
    curandGenerator_t g = it->second;
    KILN_CURAND(curandSetStream(g, current_stream_handle()));
    KILN_CURAND(curandSetPseudoRandomGeneratorSeed(g, seed));
    KILN_CURAND(curandSetGeneratorOffset(g, offset));
    return g;
  }
  // Past every 32-bit word `count` 32- or 64-bit results could use (4 words per Philox counter).
  void advance(std::int64_t count) { offset += (std::uint64_t(count) * 4 + 3) / 4 * 4; }
};

Generator::Generator(std::uint64_t seed) : state_(std::make_shared<State>()) {
  state_->seed = seed;
}
std::uint64_t Generator::seed() const noexcept { return state_->seed; }
std::uint64_t Generator::offset() const noexcept { return state_->offset; }

Generator default_rng(std::uint64_t seed) { return Generator(seed); }

ndarray Generator::random(const Shape& shape, dtype t) { return uniform(0.0, 1.0, shape, t); }

ndarray Generator::uniform(double low, double high, const Shape& shape, dtype t) {
  refuse_in_capture("uniform");
  check_float("uniform", t);
  if (!std::isfinite(low) || !std::isfinite(high))
    throw ValueError(
        fmt::format("random.Generator.uniform: bounds must be finite, got [{}, {})", low, high));
  const std::int64_t n = checked_size("uniform", shape);
  ndarray out(shape, t);
  if (n == 0) return out;
  curandGenerator_t g = state_->prepare();
  if (t == float32)
    KILN_CURAND(curandGenerateUniform(g, static_cast<float*>(out.data()), std::size_t(n)));
  else
    KILN_CURAND(curandGenerateUniformDouble(g, static_cast<double*>(out.data()), std::size_t(n)));
  state_->advance(n);
  // cuRAND draws from (0, 1]; 1 - u is in [0, 1) as NumPy's random() is. Rounding may still give
  // `high` for float32 when high - low is large, as in NumPy.
  static const ElementwiseKernel& to_range =
      *new ElementwiseKernel("T u, float64 low, float64 width", "T z",
                             "z = T(low + width * (1.0 - (double)u))", "kiln_random_uniform");
  to_range(out, low, high - low, out);
  return out;
}

ndarray Generator::standard_normal(const Shape& shape, dtype t) {
  return normal(0.0, 1.0, shape, t);
}

ndarray Generator::normal(double loc, double scale, const Shape& shape, dtype t) {
  refuse_in_capture("normal");
  check_float("normal", t);
  if (!(scale >= 0) || !std::isfinite(scale) || !std::isfinite(loc))
    throw ValueError(fmt::format(
        "random.Generator.normal: scale must be finite and >= 0 and loc finite, got loc={} "
        "scale={}",
        loc, scale));
  const std::int64_t n = checked_size("normal", shape);
  const std::int64_t even = (n + 1) / 2 * 2;
  ndarray out = padded_array(shape, t, even);
  if (n == 0) return out;
  curandGenerator_t g = state_->prepare();
  if (t == float32)
    KILN_CURAND(curandGenerateNormal(g, static_cast<float*>(out.data()), std::size_t(even),
                                     float(loc), float(scale)));
  else
    KILN_CURAND(curandGenerateNormalDouble(g, static_cast<double*>(out.data()), std::size_t(even),
                                           loc, scale));
  state_->advance(even);
  return out;
}

ndarray Generator::integers(std::int64_t low, std::int64_t high, const Shape& shape, dtype t) {
  refuse_in_capture("integers");
  if (!t.is_integer())
    throw TypeError(fmt::format(
        "random.Generator.integers: dtype must be an integer type (int8-int64, uint8-uint64), "
        "not {}",
        t.name()));
  if (high <= low)
    throw ValueError(fmt::format("random.Generator.integers: high <= low ({} <= {})", high, low));
  bool fits = visit_dtype(t, [&]<class T>(T) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using L = std::numeric_limits<T>;
      if constexpr (std::is_signed_v<T>)
        return low >= std::int64_t(L::min()) && high - 1 <= std::int64_t(L::max());
      else
        return low >= 0 && std::uint64_t(high - 1) <= std::uint64_t(L::max());
    } else {
      return false;
    }
  });
  if (!fits)
    throw ValueError(
        fmt::format("random.Generator.integers: [{}, {}) does not fit {}", low, high, t.name()));
  const std::int64_t n = checked_size("integers", shape);
  ndarray out(shape, t);
  if (n == 0) return out;
  // Two 32-bit words per result, read as one uint64 and scaled by a 64x64 multiply-high.
  ndarray bits({n}, uint64);
  curandGenerator_t g = state_->prepare();
  KILN_CURAND(curandGenerate(g, static_cast<unsigned*>(bits.data()), std::size_t(2 * n)));
  state_->advance(2 * n);
  static const ElementwiseKernel& to_range =
      *new ElementwiseKernel("uint64 x, uint64 low, uint64 width", "T z",
                             "z = (T)(low + __umul64hi(x, width))", "kiln_random_integers");
  to_range(bits.reshape(shape), std::uint64_t(low), std::uint64_t(high) - std::uint64_t(low), out);
  return out;
}

}  // namespace kiln::random
