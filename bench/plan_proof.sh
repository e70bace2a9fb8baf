#!/usr/bin/env bash
# Runs the microbatch planner's choice for real: for a model, profiles several microbatch sizes,
# asks `stagecut plan` for the best size b at a fixed global batch, then validates b/2, b and 2b
# on 2 ranks and prints predicted against measured step times, and whether their order agrees.
# Usage: bench/plan_proof.sh [BUILD_DIR] [GLOBAL_BATCH] [model flags...]
# Default: gpt-demo, global batch 32 (a few minutes on 2 cores).
set -euo pipefail
build=${1:-build}
global=${2:-32}
shift 2 || shift $# || true
model=("$@")
if ((${#model[@]} == 0)); then model=(--model gpt --preset gpt-demo); fi
stagecut="$build/cli/stagecut"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$stagecut" profile "${model[@]}" --microbatch 1,2,4,8,16 -o "$out/profile.json" | tail -8
"$stagecut" plan "$out/profile.json" --stages 2 --global-batch "$global"
"$stagecut" plan "$out/profile.json" --stages 2 --global-batch "$global" --json > "$out/plan.json"

python3 - "$out" "$stagecut" "$global" <<'PY'
import json, subprocess, sys
out, stagecut, global_batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
plan = json.load(open(f"{out}/plan.json"))
rows = {row["microbatch_size"]: row for row in plan["rows"]}
best = plan["rows"][plan["best"]]["microbatch_size"]
neighbours = ([best // 2] if best % 2 == 0 else []) + [best, best * 2]
sizes = [b for b in neighbours if b in rows]
results = []
for b in sizes:
    m = global_batch // b
    part = f"{out}/part{b}.json"
    subprocess.run([stagecut, "partition", f"{out}/profile.json", "--stages", "2", "--microbatches", str(m),
                    "--microbatch-size", str(b), "-o", part], check=True, stdout=subprocess.DEVNULL)
    run = subprocess.run([stagecut, "validate", f"{out}/profile.json", "--partition", part, "--microbatch-size",
                          str(b), "--microbatches", str(m), "--steps", "5", "--json"], check=True,
                         stdout=subprocess.PIPE, text=True)
    report = json.loads(run.stdout)
    results.append((b, m, rows[b]["predicted_step_ms"], report["measured_step_ms"], report["grad_check"]))
print(f"\nglobal batch {global_batch}, 2 stages, 1f1b; planner's best b = {best}")
print(f"{'b':>4} {'M':>4} {'plan ms':>9} {'measured ms':>12}  grads")
for b, m, predicted, measured, grads in results:
    print(f"{b:>4} {m:>4} {predicted:>9.0f} {measured:>12.0f}  {grads}")
predicted_order = [r[0] for r in sorted(results, key=lambda r: r[2])]
measured_order = [r[0] for r in sorted(results, key=lambda r: r[3])]
print(f"order by predicted step: {predicted_order}; by measured step: {measured_order}; "
      f"{'agree' if predicted_order == measured_order else 'DISAGREE'}")
PY
