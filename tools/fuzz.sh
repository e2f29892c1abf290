#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a bounded time each, starting from the seed
# corpus committed in tests/fuzz/corpus (copied: what the run adds stays in the build folder).
#   tools/fuzz.sh BUILD_DIR [SECONDS_PER_TARGET]       (default 60; KILN_FUZZ_SECONDS too)
# A crash, a sanitizer report, an input slower than 10 s (a hang) or one using more than 2 GiB
# fails the run: the input is kept as BUILD_DIR/fuzz/TARGET/crash-* (or timeout-*, oom-*) and the
# command that reproduces it is printed. Prints executions and time per target.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/fuzz.sh BUILD_DIR [SECONDS_PER_TARGET]}
seconds=${2:-${KILN_FUZZ_SECONDS:-60}}
targets=(fuzz_signature fuzz_nvrtc_options fuzz_manifest fuzz_entry_decoder fuzz_type_rules)
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The manifest target builds kernel definitions, which may try a cache folder: keep it in memory.
export KILN_CACHE_IN_MEMORY=1
build=$(cd "$build" && pwd)
status=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/$t"
  work="$build/fuzz/$t"
  mkdir -p "$work/corpus"
  cp -n tests/fuzz/corpus/"$t"/* "$work/corpus/" 2>/dev/null || true
  start=$(date +%s)
  if (cd "$work" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/" corpus >"$work/log" 2>&1); then
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/log" | grep -o '[0-9]*$')
    echo "fuzz: $t: ${execs:-?} executions in $(( $(date +%s) - start )) s, corpus $(ls "$work/corpus" | wc -l) inputs, no findings"
  else
    status=1
    echo "fuzz: $t FAILED; last lines of $work/log:" >&2
    tail -n 40 "$work/log" >&2
    for a in "$work"/crash-* "$work"/timeout-* "$work"/oom-* "$work"/leak-*; do
      [ -e "$a" ] && echo "fuzz: reproduce with: $bin $a" >&2
    done
  fi
done
exit $status
