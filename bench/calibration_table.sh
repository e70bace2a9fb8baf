#!/usr/bin/env bash
# Holds validate's measured step to the prediction before and after `stagecut calibrate`: the
# issue's smaller GPT, profiled once; per schedule, three splits run for real; the calibration is
# fitted on two of them and the third (the compute split, the one a user runs) is held out.
# Prints one row per run with validate's trust verdict, and the machine's load around it.
# ~3 minutes on 2 cores.
# Usage: bench/calibration_table.sh [BUILD_DIR]
#   STAGES="2 3" SCHEDULES="1f1b zb-h1" bench/calibration_table.sh build
#   MODEL="--model gpt --preset gpt-tiny ..." STEPS=3 MICROBATCHES=4: another model or a shorter run
#   (scripts/gpu-check.sh's dry run).
# Three stages need three cores: on two, validate marks the runs not trusted and calibrate
# refuses them.
set -euo pipefail
build=${1:-build}
stagecut="$(cd "$build" && pwd)/cli/stagecut"
stage_counts=${STAGES:-2}
schedules=${SCHEDULES:-"1f1b zb-h1"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }

read -r -a model <<<"${MODEL:-"--model gpt --preset gpt2-small --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 8000 --microbatch 2"}"
steps=${STEPS:-5}
microbatches=${MICROBATCHES:-8}
echo "load before: $(load)"
"$stagecut" profile "${model[@]}" -o "$out/profile.json" >/dev/null
# The held-out split is the compute split; the two fitted ones move its first boundary one layer
# earlier and its last one layer later (or the other way where a stage would be empty).
neighbours() {
  python3 -c '
import json, sys
split = [s["last"] - s["first"] + 1 for s in json.load(sys.stdin)["stages"]]
found = []
for boundary, delta in ((0, -1), (len(split) - 2, 1), (0, 1), (len(split) - 2, -1)):
    moved = list(split)
    moved[boundary] += delta
    moved[boundary + 1] -= delta
    if min(moved) >= 1 and moved not in found:
        found.append(moved)
print(",".join(map(str, split)), *(",".join(map(str, m)) for m in found[:2]))'
}
for stages in $stage_counts; do
  read -r held_out first second < <("$stagecut" partition "$out/profile.json" --stages "$stages" --json | neighbours)
  fitted="$first $second"
  for schedule in $schedules; do
    runs=()
    for split in $fitted "$held_out"; do
      run="$out/$stages.$schedule.${split//,/-}"
      "$stagecut" partition "$out/profile.json" --split "$split" -o "$run.partition.json" >/dev/null
      "$stagecut" validate "$out/profile.json" --partition "$run.partition.json" --schedule "$schedule" \
        --microbatches "$microbatches" --steps "$steps" --json >"$run.validation.json" 2>/dev/null || true
      runs+=("$(basename "$run").validation.json")
    done
    echo
    echo "$stages stages, $schedule: fitted on $fitted, held out $held_out (load $(load))"
    # Each run's own verdict on its step time, as validate gave it.
    (cd "$out" && python3 - "${runs[@]}" <<'PY'
import json, sys
for name in sys.argv[1:]:
    try:
        v = json.load(open(name))
    except (OSError, ValueError):
        print("  %-34s no validation (validate failed)" % name)
        continue
    env = v.get("environment", {})
    verdict = "trusted" if env.get("trusted", not env.get("warnings")) else "untrusted: " + env["warnings"][0].split(":")[0]
    print("  %-34s measured %.1f ms, predicted %.1f (%+.1f%%), %s" % (
        name, v["measured_step_ms"], v["predicted_step_ms"], 100 * v["error"], verdict))
PY
    )
    # A run validate did not trust is refused, with the reason: the table is left out, not faked.
    # From the runs' folder, so that calibrate's table names them short and aligns its columns.
    (cd "$out" && "$stagecut" calibrate profile.json --validation "${runs[0]}" "${runs[1]}" --check "${runs[2]}" \
      -o "$stages.$schedule.calibrated.json" 2>&1) | sed -n '/^  run /,/^$/p; /^stagecut:/p' || true
  done
done
echo
echo "load after: $(load)"
