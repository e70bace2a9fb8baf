#!/usr/bin/env bash
# Start-up of the LibTorch-free commands: median wall time and peak resident memory of
# `stagecut inspect` on the sample profile over 21 runs, beside the LibTorch part running the
# same command. Prints the load it ran under.
# Usage: bench/startup.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
profile=data/samples/example-gpt.profile.json
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for binary in stagecut stagecut-torch; do
  [[ -x "$build/cli/$binary" ]] || continue
  for run in $(seq 21); do
    start=$(date +%s%N)
    "$build/cli/$binary" inspect "$profile" >/dev/null
    end=$(date +%s%N)
    kb=$(/usr/bin/time -f "%M" "$build/cli/$binary" inspect "$profile" 2>&1 >/dev/null | tail -1)
    echo "$(( (end - start) / 1000 )) $kb"
  done | sort -n | awk -v name="$binary" '
    { micros[NR] = $1; kb[NR] = $2 }
    END { printf "%-15s inspect: median %.1f ms, peak RSS %.0f MB (21 runs)\n", name, micros[11] / 1000, kb[11] / 1024 }'
done
