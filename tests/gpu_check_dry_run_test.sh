#!/usr/bin/env bash
# scripts/gpu-check.sh --dry-run against a build, as the GPU machine will run it but on the CPU.
# LibTorch is found through a stand-in python that names the folder of the LibTorch this build
# was configured with, so the PYTHON path of the discovery runs, not LIBTORCH's. The carry is
# fetched when missing (exit 77, a skip, when apt cannot fetch it).
# Usage: tests/gpu_check_dry_run_test.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: gpu_check_dry_run_test.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)

torch_dir=$(sed -n 's/^Torch_DIR:PATH=//p' "$build/CMakeCache.txt")
# The prefix CMake found Torch under: a LibTorch or a wheel's torch/ three levels above its
# config (share/cmake/Torch), Debian's /usr four (lib/<triplet>/cmake/Torch).
case $torch_dir in
  */share/cmake/Torch) torch=${torch_dir%/share/cmake/Torch} ;;
  */lib/cmake/Torch) torch=${torch_dir%/lib/cmake/Torch} ;;
  */lib/*/cmake/Torch) torch=${torch_dir%/lib/*/cmake/Torch} ;;
  *) echo "gpu_check_dry_run: $build/CMakeCache.txt has no Torch_DIR a LibTorch layout explains ('$torch_dir'); configure with STAGECUT_TORCH=ON" >&2; exit 1 ;;
esac

carry=$root/.deps/gpu-carry
if ! "$root/scripts/fetch-gpu-carry.sh" "$carry"; then
  echo "gpu_check_dry_run: skipped: could not fetch the carry into $carry (see above)" >&2
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Answers only what gpu-check.sh asks a python: the folder of its torch.
cat >"$work/python3" <<EOF
#!/bin/sh
case "\$2" in
  *"import torch"*"os.path.dirname(torch.__file__)"*) echo "$torch" ;;
  *) echo "fake python: unexpected arguments: \$*" >&2; exit 1 ;;
esac
EOF
chmod +x "$work/python3"

rc=0
env -u LIBTORCH PYTHON="$work/python3" CARRY="$carry" OUT_DIR="$work/out" \
  "$root/scripts/gpu-check.sh" --dry-run --build-dir "$build" >"$work/log" 2>&1 || rc=$?

problems=()
((rc == 0)) || problems+=("gpu-check.sh --dry-run exited $rc")
summary=$(sed -n '/^== summary/,$p' "$work/log")
[[ -n "$summary" ]] || problems+=("no summary")
if grep -q -E '^   FAIL ' <<<"$summary"; then
  problems+=("a step failed")
fi
grep -q -F "from PYTHON=$work/python3" <<<"$summary" || problems+=("LibTorch was not found through PYTHON")
for step in libtorch carry nvidia-smi configure build debugger "cxx runtime link" "cuda tests" "profile cuda-events" "profile cupti" \
  "cupti vs events" "profile llama bf16" "profile llama 70b tp8" "megatron tp layout" "llama memory vs torch" "sum of layers vs whole" partition validate "validate llama bf16" "validate zb-v" "calibration table" "wall time"; do
  grep -q -E "^   (PASS|WARN|SKIP)  $step  " <<<"$summary" || problems+=("no PASS, WARN or SKIP line for '$step'")
done
# The table runs in the dry run whatever the cores (2 ranks, a tiny model): its verdicts count.
grep -q -E "^   (PASS|WARN)  calibration table  .*runs trusted" <<<"$summary" || problems+=("the calibration table printed no verdicts")
for step in configure "cxx runtime link" "cuda tests" "profile cuda-events" "profile llama bf16" "profile llama 70b tp8" "megatron tp layout" "sum of layers vs whole" partition; do
  grep -q -E "^   PASS  $step  " <<<"$summary" || problems+=("'$step' did not pass")
done

# validate may WARN (a busy machine's step time is untrusted), but its gradients must hold.
grep -q -E "^   (PASS|WARN)  validate  .*gradients pass" <<<"$summary" || problems+=("validate's gradients did not pass")
grep -q -E "^   (PASS|WARN)  validate llama bf16  .*gradients pass .*--optimizer adam-mixed" <<<"$summary" ||
  problems+=("the bfloat16 llama's validate did not pass its gradients under adam-mixed")
grep -q -E "^   (PASS|WARN)  validate zb-v  .*gradients pass" <<<"$summary" ||
  problems+=("the small llama's ZB-V validate did not pass its gradients")

if ((${#problems[@]} > 0)); then
  cat "$work/log"
  printf 'gpu_check_dry_run: %s\n' "${problems[@]}" >&2
  exit 1
fi
echo "gpu_check_dry_run: passed against $build (LibTorch $torch)"
