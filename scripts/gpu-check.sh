#!/usr/bin/env bash
# The GPU check of the profiler, for a machine with an NVIDIA GPU: builds stagecut against a CUDA
# LibTorch with the CUDA timers on, runs the GPU timer tests, profiles gpt2-small with
# --timer cuda-events and with --timer cupti, and prints the two side by side per layer.
# Installs nothing. Usage:
#   LIBTORCH=/path/to/libtorch scripts/gpu-check.sh [--device cuda:K] [extra profile flags...]
# Environment: LIBTORCH (required: an unpacked CUDA LibTorch), BUILD_DIR (default build-gpu),
# OUT_DIR (default build-gpu/gpu-check: the two profiles are kept there), JOBS (default nproc).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
out=${OUT_DIR:-$build/gpu-check}
jobs=${JOBS:-$(nproc)}
device=cuda
if [[ "${1:-}" == "--device" ]]; then
  device=$2
  shift 2
fi
flags=("$@")
if ((${#flags[@]} == 0)); then
  flags=(--model gpt --preset gpt2-small --microbatch 4 --seq 256)
fi

fail() {
  echo "gpu-check: $*" >&2
  exit 2
}

command -v nvidia-smi >/dev/null ||
  fail "nvidia-smi not found: this needs a machine with an NVIDIA GPU and its driver"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader ||
  fail "nvidia-smi found no usable GPU (see its message above)"

if [[ -z "${LIBTORCH:-}" ]]; then
  fail "set LIBTORCH to an unpacked CUDA LibTorch (the cxx11 ABI build), e.g. from
  https://pytorch.org/get-started/locally/ (Package: LibTorch, Compute Platform: CUDA) unzipped to
  ~/libtorch, then: LIBTORCH=~/libtorch $0"
fi
[[ -f "$LIBTORCH/share/cmake/Torch/TorchConfig.cmake" ]] ||
  fail "LIBTORCH=$LIBTORCH has no share/cmake/Torch/TorchConfig.cmake: point it at the unzipped libtorch folder"
compgen -G "$LIBTORCH/lib/libtorch_cuda*.so" >/dev/null ||
  fail "LIBTORCH=$LIBTORCH is a CPU-only LibTorch (no lib/libtorch_cuda.so): download the CUDA one"

echo "== configure ($build)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTAGECUT_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$LIBTORCH" >/dev/null
echo "== build"
cmake --build "$build" -j "$jobs" --target stagecut stagecut_profiler_tests gpu_timer_table

echo "== GPU timer tests"
"$build/tests/stagecut_profiler_tests" "[cuda]"

mkdir -p "$out"
for timer in cuda-events cupti; do
  echo "== profile ${flags[*]} --device $device --timer $timer"
  start=$(date +%s)
  "$build/cli/stagecut" profile "${flags[@]}" --device "$device" --timer "$timer" \
    -o "$out/$timer.profile.json" >/dev/null
  echo "   $(($(date +%s) - start)) s, wrote $out/$timer.profile.json"
done

echo "== CUDA events vs CUPTI kernel time, per layer"
"$build/bench/gpu_timer_table" "$out/cuda-events.profile.json" "$out/cupti.profile.json"
