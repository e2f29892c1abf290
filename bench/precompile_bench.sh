#!/usr/bin/env bash
# kiln-cache precompile throughput: N distinct elementwise kernels (one exact layout each) for
# one arch into a fresh folder, with --jobs 1 and --jobs J; prints JSON with the wall times
# and the speedup. No GPU needed. Target (issue 10): 64 kernels, --jobs 2 on a 2-core
# machine >= 1.8x faster than --jobs 1.
#   bench/precompile_bench.sh [build_dir] [kernels=64] [jobs=2] [arch=90]
set -euo pipefail
build=${1:-build}
n=${2:-64}
jobs=${3:-2}
arch=${4:-90}
cli="$build/tools/kiln-cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
  echo '{"kiln_manifest": 1, "kernels": ['
  for ((i = 0; i < n; i++)); do
    sep=$([ "$i" -lt $((n - 1)) ] && echo , || true)
    echo "  {\"kind\": \"elementwise\", \"name\": \"bench_$i\", \"in_params\": \"float32 x, float32 y\","
    echo "   \"out_params\": \"float32 z\", \"operation\": \"z = x * $i.5f + y\","
    echo "   \"dtypes\": [[\"float32\", \"float32\", \"float32\"]], \"layout\": {\"vector_width\": 4}}$sep"
  done
  echo ']}'
} >"$tmp/manifest.json"

run() {  # run JOBS -> wall seconds
  local dir="$tmp/cache-$1" start end
  start=$(date +%s.%N)
  "$cli" precompile "$tmp/manifest.json" --arch "$arch" --jobs "$1" --cache-dir "$dir" >"$tmp/out-$1.txt"
  end=$(date +%s.%N)
  grep -q "^done .*: $n compiled, 0 already cached, 0 failed" "$tmp/out-$1.txt" || { cat "$tmp/out-$1.txt" >&2; exit 1; }
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
}
# Warm-up: NVRTC's first program in a process pays for loading its builtin headers; do it
# once so the page cache is warm for both runs.
echo '[{"kind": "elementwise", "name": "warm", "in_params": "float32 x", "out_params": "float32 z",
  "operation": "z = x", "dtypes": [["float32", "float32"]], "layout": {}}]' >"$tmp/warm.json"
"$cli" precompile "$tmp/warm.json" --arch "$arch" --cache-dir "$tmp/warm" >/dev/null
t1=$(run 1)
tj=$(run "$jobs")
printf '{"bench": "precompile", "kernels": %d, "arch": %d, "cores": %d, "load_average": "%s", "jobs_1_s": %.2f, "jobs_%d_s": %.2f, "speedup": %.2f}\n' \
  "$n" "$arch" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$t1" "$jobs" "$tj" "$(awk -v a="$t1" -v b="$tj" 'BEGIN { print a / b }')"
