#!/usr/bin/env bash
# Profiles the same model twice with the default settings and compares the runs layer by layer,
# and reports how far each run's sum of layers is from its interleaved whole-model timing.
# Usage: bench/profiler_repeatability.sh [BUILD_DIR] [extra profile flags...]
# Default: gpt2-small at microbatch 4, seq 256 (under 2 minutes per run on 2 cores), plus 20 s
# for the machine's noise floor.
set -euo pipefail
build=${1:-build}
shift || true
flags=("$@")
if ((${#flags[@]} == 0)); then
  flags=(--model gpt --preset gpt2-small --microbatch 4 --seq 256)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The machine's own drift: one unchanged GEMM timed in a process before the first run and in
# another after the second.
floor() { "$build/bench/noise_floor" 10 | tee -a "$out/floor"; }
echo "noise floor before run 1: $(floor)"
for run in 1 2; do
  start=$(date +%s)
  "$build/cli/stagecut" profile "${flags[@]}" -o "$out/run$run.json" >/dev/null
  echo "run $run: $(( $(date +%s) - start )) s"
done
echo "noise floor after run 2:  $(floor)"
sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$out/floor" | paste -sd' ' |
  awk '{ d = ($2 - $1) / $1 * 100; printf "the same GEMM in two processes: %.3f and %.3f ms (%+.1f%%)\n", $1, $2, d }'
"$build/bench/profile_diff" "$out/run1.json" "$out/run2.json"
