#!/usr/bin/env bash
# Runs the libFuzzer targets built in BUILD_DIR, each for SECONDS, one after the other:
#   fuzz/run.sh build-fuzz 60 [profile_json partition_json pipedream_import units]
# Seeds come from data/fuzz/<target>/ (read only); what libFuzzer learns goes to
# BUILD_DIR/corpus/<target>/ and crash inputs to BUILD_DIR/artifacts/. Exits non-zero on the first
# target that finds something; move the input to data/fuzz/regressions/ and fix the reader
# (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
((${#targets[@]})) || targets=(profile_json partition_json pipedream_import units split_text input_spec profile_progress model_config validation_json)

dictionary() {
  case "$1" in
    profile_json | partition_json | profile_progress | model_config | validation_json) echo fuzz/json.dict ;;
    pipedream_import) echo fuzz/pipedream.dict ;;
    units) echo fuzz/units.dict ;;
    split_text) echo fuzz/split_text.dict ;;
    input_spec) echo fuzz/input_spec.dict ;;
  esac
}

for target in "${targets[@]}"; do
  binary="$build_dir/fuzz/fuzz_$target"
  [[ -x "$binary" ]] || { echo "fuzz: $binary is not built; run 'make fuzz'" >&2; exit 2; }
  corpus="$build_dir/corpus/$target"
  mkdir -p "$corpus" "$build_dir/artifacts"
  echo "== fuzz_$target for ${seconds}s (corpus $corpus, seeds data/fuzz/$target)"
  # -timeout: a reader that takes seconds on a few KB is a hang worth reporting.
  "$binary" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$(dictionary "$target")" -artifact_prefix="$build_dir/artifacts/$target-" \
    "$corpus" "data/fuzz/$target"
done
