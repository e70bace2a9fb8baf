#!/usr/bin/env bash
# Holds the memory timeline's predicted peak to the peak validate measures, rank by rank: three
# models (the issue's small GPT and the demo's in float32 under --optimizer adam and none, a small
# LLaMA in bfloat16 under adam-mixed: bf16 weights, float32 gradients, masters and moments),
# 2 and 3 ranks, gpipe, 1f1b and zb-h1, plain and --recompute full (one validate runs both), and
# interleaved 1F1B (2 chunks per rank), ZB-V and DualPipeV, plain (validate recomputes N-stage splits only),
# each on its own chunked split. Prints one row per rank and the largest error. Memory does not
# depend on the machine's load; the run takes ~20 minutes on 2 cores.
# Usage: [MODELS="small demo llama"] [SCHEDULES="gpipe 1f1b zb-h1 interleaved-1f1b zb-v dualpipe-v"]
#        bench/memory_prediction.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
stagecut="$build/cli/stagecut"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

declare -A models=(
  [small]="--model gpt --preset gpt2-small --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 8000 --microbatch 2"
  [demo]="--model gpt --preset gpt-demo --microbatch 4"
  [llama]="--model llama --preset llama-tiny --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 688 --seq 128 --vocab 8000 --microbatch 2 --dtype bfloat16"
)
declare -A optimizers=([small]="adam none" [demo]="adam none" [llama]="adam-mixed")
read -r -a chosen <<<"${MODELS:-small demo llama}"
for model in "${chosen[@]}"; do
  # Memory needs one sample per layer; few timed rounds keep the profile short.
  # shellcheck disable=SC2086
  "$stagecut" profile ${models[$model]} --min-repeats 3 --max-repeats 3 -o "$out/$model.profile.json" >/dev/null
done

read -r -a schedules <<<"${SCHEDULES:-gpipe 1f1b zb-h1 interleaved-1f1b zb-v dualpipe-v}"
for model in "${chosen[@]}"; do
  for stages in 2 3; do
    for schedule in "${schedules[@]}"; do
      # Chunked splits: 6 microbatches, a multiple of 2 and 3 ranks as interleaving needs and
      # DualPipeV's 2N on 3 ranks.
      case "$schedule" in
        interleaved-1f1b) split_flags=(--chunks 2 --microbatches 6); run_flags=(--microbatches 6) ;;
        zb-v | dualpipe-v) split_flags=(--microbatches 6); run_flags=(--microbatches 6) ;;
        *) split_flags=(--microbatches 8); run_flags=(--microbatches 8 --recompute full) ;;
      esac
      for optimizer in ${optimizers[$model]}; do
        run="$model.$stages.$schedule.$optimizer"
        "$stagecut" partition "$out/$model.profile.json" --stages "$stages" --schedule "$schedule" \
          "${split_flags[@]}" --optimizer "$optimizer" -o "$out/$run.partition.json" >/dev/null
        "$stagecut" validate "$out/$model.profile.json" --partition "$out/$run.partition.json" \
          --schedule "$schedule" "${run_flags[@]}" --steps 2 --optimizer "$optimizer" \
          --json >"$out/$run.validation.json"
      done
    done
  done
done

python3 - "$out" <<'EOF'
import glob, json, os, sys
rows, worst = [], (0.0, "")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.validation.json"))):
    model, stages, schedule, optimizer = os.path.basename(path).split(".")[:4]
    document = json.load(open(path))
    runs = [("none", document["ranks"])]
    if document.get("recompute"):
        runs.append(("full", document["recompute"]["ranks"]))
    for recompute, ranks in runs:
        for rank in ranks:
            measured, predicted = rank["peak_memory_bytes"], rank["predicted_peak_memory_bytes"]
            error = predicted / measured - 1.0
            label = f"{model} {stages} ranks {schedule} --recompute {recompute} --optimizer {optimizer} rank {rank['rank']}"
            rows.append((label, measured, predicted, error))
            if abs(error) >= abs(worst[0]):
                worst = (error, label)
mib = 1024.0 * 1024.0
print(f"{'run':<84} {'measured':>10} {'predicted':>10} {'error':>8}")
for label, measured, predicted, error in rows:
    print(f"{label:<84} {measured / mib:>7.1f} MiB {predicted / mib:>6.1f} MiB {error * 100:>+7.1f}%")
errors = sorted(abs(row[3]) for row in rows)
print(f"\n{len(rows)} ranks: median |error| {errors[len(errors) // 2] * 100:.1f}%, "
      f"largest {worst[0] * 100:+.1f}% ({worst[1]}); "
      f"{sum(1 for e in errors if e <= 0.10)} of {len(rows)} within 10%")
EOF
