// Sample: a time-stepping loop of ten small kiln kernels per step (a ring of damped springs:
// forces, a stencil, velocities, positions, a clamp, two energies), run eagerly and replayed
// from a CUDA graph captured once with kiln::capture. Both runs start from the same state and
// run the same kernels, so they must agree bit for bit; prints the time per step and per
// kernel of each, and what the capture cost. Exit 1 if the runs differ.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "sample_util.hpp"

namespace {

constexpr int kN = 4096;
constexpr int kSteps = 2000;
constexpr int kKernelsPerStep = 10;
constexpr float kDt = 0.01f, kStiffness = 4.0f, kCoupling = 50.0f, kDamping = 0.05f;

struct State {
  kiln::ndarray x, v, f, lap, ekin, epot, energy;
};

// The spring between neighbours on a ring: lap[i] = x[i-1] - 2 x[i] + x[i+1].
const kiln::RawKernel& laplacian() {
  static const kiln::RawKernel k(R"(
extern "C" __global__ void ring_laplacian(const float* x, float* lap, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) lap[i] = x[(i + n - 1) % n] - 2.0f * x[i] + x[(i + 1) % n];
})",
                                 "ring_laplacian");
  return k;
}

State make_state(const std::vector<float>& x0, const std::vector<float>& v0) {
  using kiln::float32;
  return {kiln::asarray(x0),          kiln::asarray(v0),        kiln::empty({kN}, float32),
          kiln::empty({kN}, float32), kiln::empty({}, float32), kiln::empty({}, float32),
          kiln::empty({}, float32)};
}

// One time step: ten kernels, no allocation (every result goes into the state's arrays).
void step(State& s) {
  kiln::eval_into(s.x * -kStiffness, s.f);                                  // 1
  laplacian()(dim3((kN + 255) / 256), dim3(256), s.x, s.lap, kN);           // 2
  s.f += s.lap * kCoupling;                                                 // 3
  s.f -= s.v * kDamping;                                                    // 4
  s.v += s.f * kDt;                                                         // 5
  s.x += s.v * kDt;                                                         // 6
  kiln::eval_into(kiln::clip(s.x, -10.0f, 10.0f), s.x);                     // 7
  kiln::sum(s.v * s.v, {}, false, {.out = s.ekin});                         // 8
  kiln::sum(s.x * s.x, {}, false, {.out = s.epot});                         // 9
  kiln::eval_into(s.ekin * 0.5f + s.epot * (0.5f * kStiffness), s.energy);  // 10
}

bool same_bits(const kiln::ndarray& a, const kiln::ndarray& b) {
  const auto ha = a.get<float>(), hb = b.get<float>();
  return std::memcmp(ha.data(), hb.data(), ha.size() * sizeof(float)) == 0;
}

}  // namespace

int main() try {
  if (sample::no_gpu("graph_timestep")) return sample::kSkipped;
  std::vector<float> x0(kN), v0(kN);
  for (int i = 0; i < kN; ++i) {
    x0[std::size_t(i)] = std::sin(0.01f * float(i)) + 0.3f * std::cos(0.37f * float(i));
    v0[std::size_t(i)] = 0.1f * std::sin(0.05f * float(i) + 1.0f);
  }
  State eager = make_state(x0, v0), replayed = make_state(x0, v0);
  kiln::Stream stream(/*non_blocking=*/true);
  kiln::synchronize_device();  // the uploads ran on the null stream

  // Warm-up: both states take the same three eager steps (and every kernel compiles here).
  {
    kiln::StreamGuard on(stream);
    for (int t = 0; t < 3; ++t) {
      step(eager);
      step(replayed);
    }
    stream.synchronize();
  }

  const double eager_ms = sample::wall_ms([&] {
    kiln::StreamGuard on(stream);
    for (int t = 0; t < kSteps; ++t) step(eager);
    stream.synchronize();
  });

  kiln::graph g;
  const double capture_ms =
      sample::wall_ms([&] { g = kiln::capture(stream, [&] { step(replayed); }); });
  const double replay_ms = sample::wall_ms([&] {
    for (int t = 0; t < kSteps; ++t) g.replay(stream);
    stream.synchronize();
  });

  const bool ok = same_bits(eager.x, replayed.x) && same_bits(eager.v, replayed.v) &&
                  same_bits(eager.energy, replayed.energy);
  const double eager_us = eager_ms * 1e3 / kSteps, replay_us = replay_ms * 1e3 / kSteps;
  std::printf("graph_timestep: %d steps of %d kernels on %d float32 springs\n", kSteps,
              kKernelsPerStep, kN);
  std::printf("  eager:    %7.2f us per step, %5.2f us per kernel\n", eager_us,
              eager_us / kKernelsPerStep);
  std::printf("  replayed: %7.2f us per step, %5.2f us per kernel (%.1fx faster)\n", replay_us,
              replay_us / kKernelsPerStep, eager_us / replay_us);
  std::printf(
      "  capture + instantiate: %.2f ms for %zu nodes (%zu updatable kiln kernels, %zu "
      "programmatic edges)\n",
      capture_ms, g.node_count(), g.kernel_count(), g.programmatic_edge_count());
  std::printf("  energy after %d steps: %.6f (eager) %.6f (replayed)\n", kSteps + 3,
              double(eager.energy.get<float>()[0]), double(replayed.energy.get<float>()[0]));
  std::printf("%s\n", ok ? "graph_timestep: eager and replayed runs agree bit for bit"
                         : "graph_timestep: WRONG: eager and replayed runs differ");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "graph_timestep: %s\n", e.what());
  return 1;
}
