#!/usr/bin/env bash
# kiln's one set-up script.
#   tools/setup.sh          install what is missing (Debian packages), nothing more
#   tools/setup.sh --demo   ... then build (Release) and run the main demo (samples/tour)
#   tools/setup.sh --test   ... then build and run the test suite (ctest), then the CPU suite
#                           again built with AddressSanitizer + UndefinedBehaviorSanitizer
#                           (clang-14, build-sanitize/), then every fuzz target for
#                           KILN_FUZZ_SECONDS (default 60) each (tools/fuzz.sh)
# Idempotent: installs nothing when everything is there. Needs root or sudo only to install.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ libfmt-dev libspdlog-dev catch2 libxxhash-dev libcli11-dev nlohmann-json3-dev
          libdlpack-dev liblapack-dev clang-14 libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "kiln setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "kiln setup: the CUDA Toolkit 13.0 is required (expected at /usr/local/cuda)" >&2
  exit 1
fi
export PATH="/usr/local/cuda/bin:$PATH"

build_dir=${KILN_BUILD_DIR:-build}
build() {
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build_dir" -j"${KILN_JOBS:-2}"
}

# Without a GPU the demo does the GPU-free half of kiln: it precompiles the samples' kernels
# (samples/kernels.json) for sm_90 into the kernel cache with the kiln-cache CLI.
demo() {
  if "$build_dir/tools/kiln-cache" devices; then
    # The tour: the README kernel, then CuPy's introduction sample by sample (each checks
    # its own results and exits non-zero when they are wrong).
    "$build_dir/samples/tour"
    for s in ones_2gb chain_inplace svd_cpu_gpu devices_streams sort_normalize_50m custom_kernels \
             fused_vs_unfused transfers_dlpack; do
      echo "== samples/$s"
      "$build_dir/samples/$s"
    done
    echo "== samples/sort_crossover"
    "$build_dir/samples/sort_crossover" "$build_dir"
  else
    echo "kiln demo: no GPU, so precompiling the samples' kernels for sm_90 with kiln-cache instead:"
    "$build_dir/tools/kiln-cache" precompile samples/kernels.json --arch 90 --jobs "${KILN_JOBS:-2}"
    "$build_dir/tools/kiln-cache" stats
    echo "kiln demo: a program calling my_kernel on float32 arrays on an sm_90 GPU now loads it"
    echo "from this cache without NVRTC (try samples/deployed with KILN_DISALLOW_COMPILE=1)."
  fi
}

# The CPU suite under ASan + UBSan, and the fuzz targets (tests/fuzz), from one clang build
# folder of their own. Left out there: cpu.install_consumer (an outside project cannot link
# sanitized libraries without the sanitizer flags) and cpu.no_libcuda (the normal build checks
# every binary; this one builds no samples or benchmarks).
sanitize_and_fuzz() {
  local dir=${KILN_SANITIZE_BUILD_DIR:-build-sanitize}
  local t0=$SECONDS
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_SANITIZE=address,undefined -DKILN_BUILD_FUZZ=ON -DKILN_BUILD_SAMPLES=OFF \
    -DKILN_BUILD_BENCH=OFF >/dev/null
  cmake --build "$dir" -j"${KILN_JOBS:-2}"
  local t1=$SECONDS
  (cd "$dir" && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
     ctest --output-on-failure -j1 -L cpu -E '^cpu\.(install_consumer|no_libcuda)$')
  local t2=$SECONDS
  tools/fuzz.sh "$dir" "${KILN_FUZZ_SECONDS:-60}"
  echo "kiln setup: sanitizer build $((t1 - t0)) s, sanitized CPU suite $((t2 - t1)) s," \
       "fuzzing $((SECONDS - t2)) s"
}

case "${1:-}" in
  --demo) build && demo ;;
  --test) build && (cd "$build_dir" && ctest --output-on-failure -j1) && sanitize_and_fuzz ;;
  "") ;;
  *) echo "usage: tools/setup.sh [--demo|--test]" >&2; exit 2 ;;
esac
