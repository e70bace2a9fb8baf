#!/usr/bin/env bash
# Which of a profile's two timings of each layer predicts the real pipeline better: the layer
# rounds (each layer alone, right after another layer's backward: forward_ms, backward_ms, B, W)
# or the whole-model pass (each layer right after its neighbour, as a stage runs it:
# whole_model.in_chain_forward_ms / in_chain_backward_ms). The issue's smaller GPT, profiled
# ROUNDS times; after each profile its compute split runs for real under each schedule, and the
# step is held to the prediction from either timing (B and W scaled with the in-chain backward).
# Prints one row per run; ~1 minute per round on 2 cores.
# Usage: bench/in_chain_prediction.sh [BUILD_DIR]      ROUNDS=3 SCHEDULES="1f1b zb-h1"
set -euo pipefail
build=${1:-build}
stagecut="$(cd "$build" && pwd)/cli/stagecut"
rounds=${ROUNDS:-3}
schedules=${SCHEDULES:-"1f1b zb-h1"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
model=(--model gpt --preset gpt2-small --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 8000 --microbatch 2)

# The profile with each layer's in-chain medians in place of its layer-round ones.
in_chain_profile() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
profile = json.load(open(sys.argv[1]))
whole = profile["whole_model"]
for layer, forward, backward in zip(profile["layers"], whole["in_chain_forward_ms"], whole["in_chain_backward_ms"]):
    alone = layer["backward_ms"]["median"]
    ratio = backward / alone if alone > 0 else 1.0
    def put(stats, median):
        stats.update(median=median, min=min(stats["min"], median), max=max(stats["max"], median))
    put(layer["forward_ms"], forward)
    put(layer["backward_ms"], backward)
    for key in ("backward_input_ms", "backward_weight_ms"):
        if key in layer:
            put(layer[key], layer[key]["median"] * ratio)
json.dump(profile, open(sys.argv[2], "w"), indent=2)
EOF
}
predicted() {  # profile split schedule
  "$stagecut" simulate "$1" --split "$2" --microbatches 8 --schedule "$3" |
    sed -n 's/^[A-Z0-9-]*: step \([0-9.]*\) ms.*/\1/p' | head -1
}

echo "load before: $(load)"
printf '%-6s %-6s %-5s %11s %11s %8s %11s %8s  %s\n' round sched split measured "layer-round" error "in-chain" error load
for round in $(seq "$rounds"); do
  "$stagecut" profile "${model[@]}" -o "$out/profile.json" >/dev/null
  in_chain_profile "$out/profile.json" "$out/in-chain.json"
  split=$("$stagecut" partition "$out/profile.json" --stages 2 --json |
    python3 -c 'import json,sys; print(",".join(str(s["last"]-s["first"]+1) for s in json.load(sys.stdin)["stages"]))')
  "$stagecut" partition "$out/profile.json" --split "$split" -o "$out/partition.json" >/dev/null
  for schedule in $schedules; do
    if ! "$stagecut" validate "$out/profile.json" --partition "$out/partition.json" --schedule "$schedule" \
      --microbatches 8 --steps 5 --strict --json >"$out/run.json" 2>"$out/run.err"; then
      echo "round $round $schedule: not trusted or failed: $(tail -1 "$out/run.err")"
      continue
    fi
    measured=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["measured_step_ms"])' "$out/run.json")
    alone=$(predicted "$out/profile.json" "$split" "$schedule")
    chained=$(predicted "$out/in-chain.json" "$split" "$schedule")
    python3 - "$round" "$schedule" "$split" "$measured" "$alone" "$chained" "$(load)" <<'EOF'
import sys
r, s, split, m, a, c, load = sys.argv[1:]
m, a, c = float(m), float(a), float(c)
print(f"{r:6s} {s:6s} {split:5s} {m:8.1f} ms {a:8.1f} ms {100*(m/a-1):+7.1f}% {c:8.1f} ms {100*(m/c-1):+7.1f}%  {load}")
EOF
  done
done
echo "load after: $(load)"
echo "error: measured step over the prediction (simulate, no link cost; validate's own prediction adds the probed link)"
