#!/usr/bin/env bash
# Golden check of the prediction path: runs every case of cases.txt on each sample profile and
# compares the JSON byte for byte with tests/golden/<profile>/<case>.json.
#   check.sh STAGECUT DATA_DIR            compare (exit 1 on the first difference, with a diff)
#   check.sh STAGECUT DATA_DIR --update   write the expected files anew
set -euo pipefail
stagecut=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
data=$(cd "$2" && pwd)
mode=${3:-check}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
checked=0
for profile_name in ${GOLDEN_PROFILES:-example-gpt demo-gpt}; do
  # Relative names, so that the paths the documents echo are the same in every run.
  cd "$work"
  profile="$profile_name.profile.json"
  cp "$data/samples/$profile" "$profile"
  expected_dir="$here/$profile_name"
  mkdir -p "$expected_dir"
  split="$profile_name.split.json"
  "$stagecut" partition "$profile" --stages 4 --microbatches 8 -o "$split" > /dev/null
  while read -r name args; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    args=${args//PROFILE/$profile}
    args=${args//SPLIT/$split}
    # shellcheck disable=SC2086
    "$stagecut" $args --json > "$work/out.json"
    if [[ "$mode" == "--update" ]]; then
      cp "$work/out.json" "$expected_dir/$name.json"
    elif ! cmp -s "$work/out.json" "$expected_dir/$name.json"; then
      echo "golden: $profile_name/$name differs (stagecut $args --json):"
      diff <(python3 -m json.tool "$expected_dir/$name.json") <(python3 -m json.tool "$work/out.json") | head -20 || true
      failed=$((failed + 1))
    fi
    checked=$((checked + 1))
  done < "$here/cases.txt"
done
echo "golden: $((checked - failed)) of $checked cases identical"
[[ $failed -eq 0 ]]
