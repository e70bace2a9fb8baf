#!/usr/bin/env bash
# Profiles the same model twice with the default settings and compares the runs layer by layer,
# and reports how far each run's sum of layers is from its interleaved whole-model timing.
# Usage: bench/profiler_repeatability.sh [BUILD_DIR] [extra profile flags...]
# Default: gpt2-small at microbatch 4, seq 256 (about 2 minutes per run on 2 cores).
set -euo pipefail
build=${1:-build}
shift || true
flags=("$@")
if ((${#flags[@]} == 0)); then
  flags=(--model gpt --preset gpt2-small --microbatch 4 --seq 256)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for run in 1 2; do
  start=$(date +%s)
  "$build/cli/stagecut" profile "${flags[@]}" -o "$out/run$run.json" >/dev/null
  echo "run $run: $(( $(date +%s) - start )) s"
done
"$build/bench/profile_diff" "$out/run1.json" "$out/run2.json"
