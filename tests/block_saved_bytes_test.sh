#!/usr/bin/env bash
# A block's activation bytes as stagecut's profile measures them (what is alive after its forward,
# less its output) against an independent count: the tensors autograd saves in Hugging Face's
# block of the same shape (tests/block_saved_bytes.py), for the gpt and llama families in
# float32 and bfloat16, eager attention; and a doctored profile the count must refuse.
# Usage: tests/block_saved_bytes_test.sh STAGECUT SOURCE_DIR
# Skips (exit 77) without a Python that has torch and transformers.
set -euo pipefail
stagecut=$(realpath "${1:?usage: block_saved_bytes_test.sh STAGECUT SOURCE_DIR}")
source_dir=$(realpath "${2:?usage: block_saved_bytes_test.sh STAGECUT SOURCE_DIR}")
# shellcheck source=tests/export_python.sh
source "$source_dir/tests/export_python.sh" "$source_dir"
if [[ -z "$python" ]] || ! "$python" -c 'import transformers' 2>/dev/null; then
  echo "WARN: no Python with torch and transformers (make test's .deps/export-venv has them): nothing compared"
  exit 77
fi
oracle=$source_dir/tests/block_saved_bytes.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
compared=0
quick=(--microbatch 2 --warmup 0 --min-repeats 1 --max-repeats 1)
declare -A models=(
  [gpt]="--model gpt --preset gpt-tiny --layers 2 --seq 32 --vocab 512"
  [llama]="--model llama --preset llama-tiny"
  [llama-mqa]="--model llama --preset llama-tiny --seq 64 --kv-heads 1"
)
for model in gpt llama llama-mqa; do
  for dtype in float32 bfloat16; do
    profile=$work/$model.$dtype.json
    # shellcheck disable=SC2086
    "$stagecut" profile ${models[$model]} --dtype "$dtype" "${quick[@]}" -o "$profile" >/dev/null
    status=0
    "$python" "$oracle" "$profile" || status=$?
    case $status in
      0) compared=$((compared + 1)) ;;
      77) ;;  # SDPA (LibTorch 2.x): the GPU check compares it
      *) echo "FAIL: $model $dtype"; failures=$((failures + 1)) ;;
    esac
  done
done
# The count can tell: a profile claiming half as much again for its block is refused.
"$python" - "$work/gpt.bfloat16.json" "$work/doctored.json" <<'PY'
import json, sys
document = json.load(open(sys.argv[1]))
next(layer for layer in document["layers"] if layer["name"] == "block.0")["activation_bytes"] *= 1.5
json.dump(document, open(sys.argv[2], "w"))
PY
status=0
"$python" "$oracle" "$work/doctored.json" >/dev/null || status=$?
if [[ $status -ne 1 ]]; then echo "FAIL: a doctored block.0 was not refused (exit $status)"; failures=$((failures + 1)); fi
echo "$compared of 6 blocks compared, $failures failure(s)"
if [[ $compared -lt 2 ]]; then echo "FAIL: the gpt blocks must always be compared"; failures=$((failures + 1)); fi
exit $((failures > 0))
