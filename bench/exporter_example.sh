#!/usr/bin/env bash
# The README's worked example: real models through tools/stagecut_export.py. Exports and
# profiles vgg16 and resnet50 (microbatch 8, 224x224) and GPT-2 (12 blocks, microbatch 4, seq
# 256), timing each; compares equal layers, equal parameters and equal compute on 4 stages; then
# runs vgg16's params and compute splits for real on 2 ranks and prints the measured speed-up
# against the predicted one. ~25 minutes on 2 cores; the machine's load is printed around it.
# Usage: bench/exporter_example.sh [BUILD_DIR] [PYTHON]
#   MODELS="vgg16" STEPS=3 MICROBATCHES=4 bench/exporter_example.sh build /usr/bin/python3
#   OUT=/tmp/ex REUSE=1 bench/exporter_example.sh   # keep the profiles in /tmp/ex, rerun the rest
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
python=${2:-}
if [[ -z "$python" ]]; then
  python=/usr/bin/python3
  [[ -x "$root/.deps/export-venv/bin/python" ]] && python=$root/.deps/export-venv/bin/python
fi
stagecut=$(realpath "$build/cli/stagecut")
exporter=$root/tools/stagecut_export.py
models=${MODELS:-"vgg16 resnet50 gpt2"}
steps=${STEPS:-3}
microbatches=${MICROBATCHES:-4}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
load() { cut -d' ' -f1-3 /proc/loadavg; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }

source_of() {
  case $1 in
    gpt2) echo "hf:gpt2" ;;
    *) echo "torchvision:$1" ;;
  esac
}
input_of() {
  case $1 in
    gpt2) echo "4x256:int64:0..50257" ;;
    *) echo "8x3x224x224:float32" ;;
  esac
}

echo "load before: $(load); $("$stagecut" --version | head -1); python $python"
rows=()
for model in $models; do
  export_s=- profile_s=-
  if [[ -z "${REUSE:-}" || ! -f "$out/$model.json" ]]; then
    start=$(now)
    "$python" "$exporter" "$(source_of "$model")" -o "$out/$model.pt" --input "$(input_of "$model")" >/dev/null
    export_s=$(since "$start")
    start=$(now)
    "$stagecut" profile --torchscript "$out/$model.pt" --input "$(input_of "$model")" -o "$out/$model.json" >/dev/null
    profile_s=$(since "$start")
  fi
  "$stagecut" compare "$out/$model.json" --stages 4 --json >"$out/$model.compare4.json"
  rows+=("$("$python" - "$out/$model.compare4.json" "$out/$model.json" "$model" "$export_s" "$profile_s" <<'PY'
import json, sys
splits = {s["method"]: s for s in json.load(open(sys.argv[1]))["splits"]}
layers = len(json.load(open(sys.argv[2]))["layers"])
split = lambda m: ",".join(str(s["last"] - s["first"] + 1) for s in splits[m]["stages"])
step = lambda m: splits[m]["predicted_step_ms"]
print(f"{sys.argv[3]:<9} {layers:>6} {sys.argv[4]:>8} {sys.argv[5]:>9}  "
      f"{step('uniform'):>9.0f} ({split('uniform')})  {step('params'):>9.0f} ({split('params')})  "
      f"{step('compute'):>9.0f} ({split('compute')})  {step('params') / step('compute'):.2f}x")
PY
)")
done
echo
echo "4 stages, 1f1b, 16 microbatches: predicted step in ms (split) of each method (load $(load))"
echo "model     layers export s profile s  equal layers           equal params           equal compute    params/compute"
printf '%s\n' "${rows[@]}"

if [[ " $models " == *" vgg16 "* ]]; then
  echo
  echo "vgg16 on 2 ranks, 1f1b, $microbatches microbatches of 8, $steps steps: params split against compute split"
  "$stagecut" compare "$out/vgg16.json" --stages 2 --microbatches "$microbatches" --json >"$out/vgg16.compare2.json"
  declare -A measured predicted
  for method in params compute; do
    split=$("$python" -c 'import json, sys
s = {x["method"]: x for x in json.load(open(sys.argv[1]))["splits"]}[sys.argv[2]]
print(",".join(str(t["last"] - t["first"] + 1) for t in s["stages"]))' "$out/vgg16.compare2.json" "$method")
    "$stagecut" partition "$out/vgg16.json" --split "$split" -o "$out/vgg16.$method.partition.json" >/dev/null
    echo "  $method split $split (load $(load))"
    "$stagecut" validate "$out/vgg16.json" --partition "$out/vgg16.$method.partition.json" \
      --microbatches "$microbatches" --steps "$steps" --json >"$out/vgg16.$method.validation.json" 2>"$out/vgg16.$method.err" ||
      { echo "  validate failed: $(tail -1 "$out/vgg16.$method.err")"; exit 1; }
    read -r measured[$method] predicted[$method] < <("$python" -c 'import json, sys
v = json.load(open(sys.argv[1]))
print(round(v["measured_step_ms"]), round(v["predicted_step_ms"]))' "$out/vgg16.$method.validation.json")
    "$python" - "$out/vgg16.$method.validation.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
steps = " ".join(str(round(s)) for s in v["measured_steps_ms"])
measured, predicted = v["measured_step_ms"], v["predicted_step_ms"]
print(f"    measured {measured:.0f} ms (steps {steps}), predicted {predicted:.0f} ms ({100 * (measured / predicted - 1):+.1f}%); "
      f"bubble {100 * v['measured_bubble']:.1f}% measured, {100 * v['predicted_bubble']:.1f}% predicted; "
      f"gradient check: {v['grad_check']} ({v['grad_max_rel_diff']:.1e})")
for warning in v["environment"]["warnings"]:
    print("    not trusted:", warning)
PY
  done
  awk -v mp="${measured[params]}" -v mc="${measured[compute]}" -v pp="${predicted[params]}" -v pc="${predicted[compute]}" \
    'BEGIN { printf "  speed-up of the compute split over the params split: %.2fx measured, %.2fx predicted\n", mp / mc, pp / pc }'
fi
echo
echo "load after: $(load); files in $out"
