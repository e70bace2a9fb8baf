#!/usr/bin/env bash
# The GPU check, in one unattended run on a machine with an NVIDIA GPU, no internet and no apt:
# builds stagecut against the machine's CUDA LibTorch with the CUDA timers on, runs the [cuda]
# tests, profiles gpt2-small with --timer cuda-events and --timer cupti, compares the two per
# layer, checks the sum of the layers against the whole model, and runs a 2-stage split for real
# on the GPU with validate, in float32 and (a small LLaMA) in bfloat16. Every check runs that can
# (one run should tell as much as possible); the summary lists PASS, FAIL, WARN or SKIP per step
# and the exit code is 1 when any failed, 2 when the inputs are wrong. Installs nothing; the build's header-only dependencies come from
# CARRY (scripts/fetch-gpu-carry.sh makes it). --dry-run walks the same steps on a machine
# without a GPU, against an existing build. Run with --help for the options.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
t0=$SECONDS

usage() {
  cat <<'EOF'
Usage: scripts/gpu-check.sh [--device cuda|cuda:K] [profile flags...]
       scripts/gpu-check.sh --dry-run --build-dir DIR

  --device D       the GPU to profile and validate on (default cuda)
  --dry-run        no GPU: find LibTorch and the carry, configure into a temporary folder
                   only, then run the remaining steps on the CPU with DIR's binaries and a
                   small model; the steps that need a GPU are SKIP
  --build-dir DIR  the build folder (default $BUILD_DIR, else build-gpu; required with --dry-run)
  profile flags    replace the model flags: --model gpt --preset gpt2-small --microbatch 4 --seq 256

Environment:
  LIBTORCH  a LibTorch folder (holding share/cmake/Torch); else found through PYTHON
  PYTHON    a python whose torch is used (default /opt/torch/.venv/bin/python3 if it exists,
            else python3)
  CARRY     the carried dependencies (default .deps/gpu-carry; scripts/fetch-gpu-carry.sh)
  OUT_DIR   where profiles, JSON and logs go (default BUILD_DIR/gpu-check)
  JOBS      build parallelism (default nproc)
  BUDGET_S  seconds the whole run may take (default 360); a step gets what is left of it
  STEP_TOLERANCE  the validate step's largest relative miss of the predicted step that still
            passes (default 0.15); a larger one, or a run validate marks untrusted, is WARN
EOF
}

die() {
  echo "gpu-check: $*" >&2
  exit 2
}

dry_run=0
build_arg=""
device=cuda
while (($# > 0)); do
  case $1 in
    --dry-run) dry_run=1; shift ;;
    --build-dir) (($# >= 2)) || die "--build-dir needs a folder"; build_arg=$2; shift 2 ;;
    --build-dir=*) build_arg=${1#*=}; shift ;;
    --device) (($# >= 2)) || die "--device needs cuda or cuda:K"; device=$2; shift 2 ;;
    --device=*) device=${1#*=}; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
profile_flags=("$@")
[[ "$device" =~ ^cuda(:[0-9]+)?$ ]] || die "--device $device: use cuda or cuda:K (the CPU is what --dry-run uses)"

if ((dry_run)); then
  [[ -n "$build_arg" ]] || die "--dry-run needs --build-dir DIR: an existing build whose binaries it runs"
  [[ -f "$build_arg/CMakeCache.txt" && -x "$build_arg/cli/stagecut" ]] ||
    die "--build-dir $build_arg: no built stagecut there (cli/stagecut); build it first or name another build"
  build=$(cd "$build_arg" && pwd)
  out=${OUT_DIR:-$build/gpu-check-dry-run}
  # Small enough for seconds on a CPU, with the same layer kinds as gpt2-small.
  ((${#profile_flags[@]} > 0)) || profile_flags=(--model gpt --preset gpt-tiny --layers 2 --hidden 64 --heads 2
    --seq 32 --vocab 500 --microbatch 2 --min-repeats 3 --max-repeats 5)
else
  build=${build_arg:-${BUILD_DIR:-$root/build-gpu}}
  mkdir -p "$build"
  build=$(cd "$build" && pwd)
  out=${OUT_DIR:-$build/gpu-check}
  ((${#profile_flags[@]} > 0)) || profile_flags=(--model gpt --preset gpt2-small --microbatch 4 --seq 256)
fi
budget=${BUDGET_S:-360}
[[ "$budget" =~ ^[0-9]+$ ]] || die "BUDGET_S=$budget: give whole seconds"
step_tolerance=${STEP_TOLERANCE:-0.15}
[[ "$step_tolerance" =~ ^(0|1)?\.[0-9]+$|^1$ ]] || die "STEP_TOLERANCE=$step_tolerance: give a fraction between 0 and 1, e.g. 0.15"
jobs=${JOBS:-$(nproc)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The console goes to the log too: on a borrowed machine the folder may be all that comes back.
exec > >(tee "$out/gpu-check.log") 2>&1

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# JSON is read with a real interpreter: PYTHON may be a stand-in that only names torch's folder.
json_python=""
for candidate in /opt/torch/.venv/bin/python3 python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import json' 2>/dev/null; then
    json_python=$candidate
    break
  fi
done

# --- steps: "== name" when it starts, its status and seconds when it ends, a line in the summary

summary=()
failures=0
step_name=""
step_start=0
begin() {
  step_name=$1
  step_start=$SECONDS
  echo "== $step_name"
}
finish() {
  local status=$1 note=${2:-} seconds=$((SECONDS - step_start))
  echo "   $status ($seconds s)${note:+: $note}"
  summary+=("$(printf '%-4s  %-24s %4d s  %s' "$status" "$step_name" "$seconds" "$note")")
  if [[ "$status" == FAIL ]]; then
    failures=$((failures + 1))
  fi
}
# A step's time limit: its own, or what is left of the run's budget.
limit() {
  local left=$((t0 + budget - SECONDS))
  echo $((left < $1 ? left : $1))
}
# Runs a command under a time limit with its output in a log; returns the command's exit code.
run_logged() {
  local seconds=$1 log=$2
  shift 2
  timeout -k 5 "$seconds" "$@" >"$log" 2>&1
}
# Why a command failed, in words, from its exit code.
failure() {
  case $1 in
    124 | 137) echo "timed out after $2 s (log: $3)" ;;
    *) echo "exit $1 (log: $3)" ;;
  esac
}
indent() { sed 's/^/   | /'; }
# False, after a SKIP, when the run's budget has no time left for another step.
time_left() {
  if (($(limit 10) < 10)); then
    finish SKIP "no time left of the ${budget} s budget"
    return 1
  fi
}
# False, after a FAIL or SKIP, when a binary the step runs is missing.
have() {
  [[ -x "$1" ]] && return 0
  if ((build_ok)); then finish FAIL "$1 is missing"; else finish SKIP "$1 is missing (the build failed)"; fi
  return 1
}

# --- LibTorch: LIBTORCH, else the folder of PYTHON's torch

begin libtorch
if [[ -n "${LIBTORCH:-}" ]]; then
  torch=$LIBTORCH
  torch_from="LIBTORCH"
else
  python=${PYTHON:-}
  if [[ -z "$python" ]]; then
    python=python3
    [[ -x /opt/torch/.venv/bin/python3 ]] && python=/opt/torch/.venv/bin/python3
  fi
  command -v "$python" >/dev/null || die "PYTHON=$python not found: set PYTHON to a python with a CUDA torch, or LIBTORCH to a LibTorch folder"
  torch=$("$python" -c 'import torch, os; print(os.path.dirname(torch.__file__))' 2>"$out/python-torch.log") ||
    die "PYTHON=$python cannot import torch ($(tail -n 1 "$out/python-torch.log")): set PYTHON to a python with a CUDA torch, or LIBTORCH to a LibTorch folder"
  torch_from="PYTHON=$python"
fi
[[ -d "$torch" ]] || die "$torch_from gives $torch, which is no folder: point it at a LibTorch (the folder holding share/cmake/Torch)"
torch=$(cd "$torch" && pwd)
# A LibTorch or a wheel's torch/ holds share/cmake/Torch; Debian's, under the prefix /usr,
# lib/<triplet>/cmake/Torch. CMake finds either from the prefix.
torch_config=$(compgen -G "$torch/share/cmake/Torch/TorchConfig.cmake" || compgen -G "$torch/lib/cmake/Torch/TorchConfig.cmake" ||
  compgen -G "$torch/lib/*/cmake/Torch/TorchConfig.cmake" || true)
torch_config=${torch_config%%$'\n'*}
[[ -n "$torch_config" ]] ||
  die "$torch_from gives $torch, which has no share/cmake/Torch/TorchConfig.cmake: point it at a LibTorch (the folder holding share/cmake/Torch)"
torch_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$(dirname "$torch_config")/TorchConfigVersion.cmake" 2>/dev/null || true)
torch_note="$torch (LibTorch ${torch_version:-of unknown version}, from $torch_from)"
if compgen -G "$torch/lib/libtorch_cuda.so" >/dev/null || compgen -G "$torch/lib/*/libtorch_cuda.so" >/dev/null; then
  finish PASS "$torch_note"
elif ((dry_run)); then
  finish WARN "$torch_note is CPU-only (no lib/libtorch_cuda.so); the GPU run needs a CUDA one"
else
  die "$torch_from gives $torch, a CPU-only LibTorch (no lib/libtorch_cuda.so): point it at a CUDA build of torch"
fi
# The pip wheel's LibTorch links NVIDIA libraries that pip puts beside torch/ (nvidia/*/lib);
# its own run path finds them at run time, but the linker needs to be told (the Makefile's
# TORCH=pip does the same), and the toolkit's for the ones the wheel leaves to it.
rpath_link=""
for dir in "$(dirname "$torch")"/nvidia/*/lib /usr/local/cuda/lib64; do
  [[ -d "$dir" ]] && rpath_link+=${rpath_link:+:}$dir
done

# --- the carried dependencies

begin carry
carry=${CARRY:-$root/.deps/gpu-carry}
if [[ -d "$carry" ]]; then
  carry=$(cd "$carry" && pwd)
fi
[[ -d "$carry" ]] ||
  die "CARRY=$carry does not exist: make it with scripts/fetch-gpu-carry.sh on a machine with apt, and carry it with the tree"
"$root/scripts/fetch-gpu-carry.sh" --check "$carry" 2>"$scratch/carry.err" ||
  die "CARRY=$carry is incomplete ($(sed 's/^fetch-gpu-carry: //; s/: run .*//' "$scratch/carry.err")): make it again with scripts/fetch-gpu-carry.sh $carry on a machine with apt, and carry it with the tree"
finish PASS "$carry ($(du -sh "$carry" | cut -f1): $(cut -d' ' -f1 "$carry/packages.txt" | paste -sd' '))"

# --- the GPUs

begin nvidia-smi
if command -v nvidia-smi >/dev/null; then
  rc=0
  run_logged 30 "$out/nvidia-smi.log" nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used \
    --format=csv,noheader || rc=$?
  indent <"$out/nvidia-smi.log"
  if ((rc == 0)); then
    finish PASS "$(wc -l <"$out/nvidia-smi.log") GPU(s)"
  elif ((dry_run)); then
    finish SKIP "nvidia-smi found no usable GPU (dry run)"
  else
    finish FAIL "nvidia-smi found no usable GPU: $(failure "$rc" 30 "$out/nvidia-smi.log")"
  fi
elif ((dry_run)); then
  finish SKIP "no nvidia-smi (dry run)"
else
  finish FAIL "nvidia-smi not found: this machine has no NVIDIA driver"
fi

# --- configure: the real build's command; a dry run configures a temporary folder only

begin configure
configure_dir=$build
((dry_run)) && configure_dir=$scratch/configure
# The carry comes first in CMAKE_PREFIX_PATH: CMake then takes CLI11, nlohmann_json, Eigen3 and
# Catch2 from it even where a LibTorch prefix (Debian's /usr) or the system has them too, so the
# configure here proves what the GPU machine, which has them nowhere else, will find. Their
# configs locate their headers relative to themselves, so the carry works wherever it lies.
# Gloo has no config that LibTorch asks for, only headers: they go on every compile line.
cmake_args=(-S "$root" -B "$configure_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTAGECUT_CUDA=ON -DSTAGECUT_BENCH=ON
  "-DCMAKE_PREFIX_PATH=$carry/usr;$torch" "-DCMAKE_CXX_FLAGS=-isystem $carry/usr/include")
[[ -n "$rpath_link" ]] && cmake_args+=("-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$rpath_link")
configured=0
seconds=$(limit 150)
{
  printf 'cmake'
  printf ' %q' "${cmake_args[@]}"
  echo
} >"$out/configure.command"
rc=0
run_logged "$seconds" "$out/configure.log" cmake "${cmake_args[@]}" || rc=$?
if ((rc != 0)); then
  grep -E -A3 'CMake Error|FATAL' "$out/configure.log" | head -n 20 | indent || true
  finish FAIL "cmake: $(failure "$rc" "$seconds" "$out/configure.log")"
else
  configured=1
  grep -E 'stagecut: (LibTorch|CUDA)' "$out/configure.log" | sed 's/^-- //' | indent || true
  problems=()
  for package in Torch CLI11 nlohmann_json Eigen3 Catch2; do
    found=$(sed -n "s/^${package}_DIR:PATH=//p" "$configure_dir/CMakeCache.txt")
    printf '   %-14s %s\n' "$package" "$found"
    if [[ "$package" != Torch && "$found" != "$carry"/* ]]; then
      problems+=("$package from ${found:-nowhere}, not from the carry")
    fi
  done
  # Gloo's headers, as the compiler resolves them for the file that includes them, with the
  # build's own flags: all of them must come from the carry.
  gloo_note=""
  if [[ -z "$json_python" ]]; then
    gloo_note="gloo headers not checked (no python3 to read compile_commands.json)"
  elif ! "$json_python" - "$configure_dir" "$scratch/gloo.deps" >"$scratch/gloo.command" <<'PY'; then
import json, os, shlex, sys
build, deps = sys.argv[1], sys.argv[2]
entries = json.load(open(os.path.join(build, "compile_commands.json")))
entry = next(e for e in entries if e["file"].endswith("runtime/gloo_transport.cpp"))
args = shlex.split(entry["command"])
at = args.index("-o")
del args[at:at + 2]
print("cd " + shlex.quote(entry["directory"]) + " && " + shlex.join(args + ["-M", "-MF", deps]))
PY
    problems+=("no compile command for runtime/gloo_transport.cpp in compile_commands.json")
  elif ! bash "$scratch/gloo.command" >"$out/gloo-headers.log" 2>&1; then
    grep -m 3 'error' "$out/gloo-headers.log" | indent || true
    problems+=("runtime/gloo_transport.cpp does not preprocess (log: $out/gloo-headers.log)")
  else
    tr -s ' ' '\n' <"$scratch/gloo.deps" | grep '/gloo/' | sort -u >"$out/gloo-headers.txt" || true
    outside=$(awk -v carry="$carry/" 'index($0, carry) != 1' "$out/gloo-headers.txt" | wc -l)
    printf '   %-14s %s headers, %s of them outside the carry\n' Gloo "$(wc -l <"$out/gloo-headers.txt")" "$outside"
    ((outside == 0)) || problems+=("$outside gloo headers from outside the carry ($out/gloo-headers.txt)")
  fi
  if ((${#problems[@]} == 0)); then
    where=$configure_dir
    ((dry_run)) && where="configure only, in a temporary folder"
    finish PASS "$where${gloo_note:+; $gloo_note}"
  elif ((dry_run)); then
    finish FAIL "$(IFS=';'; echo "${problems[*]}")"
  else
    # Here the machine may have them itself; the build says whether that is enough.
    finish WARN "$(IFS=';'; echo "${problems[*]}")"
  fi
fi

# --- build

begin build
build_ok=0
if ((dry_run)); then
  build_ok=1
  finish SKIP "dry run: runs the binaries of $build"
elif ((!configured)); then
  finish SKIP "not configured"
elif time_left; then
  seconds=$(limit 330)
  rc=0
  # -k 0: one target that fails to build does not keep the others from being checked.
  run_logged "$seconds" "$out/build.log" cmake --build "$build" -j "$jobs" \
    --target stagecut stagecut-torch stagecut_profiler_tests stagecut_runtime_tests gpu_timer_table -- -k 0 || rc=$?
  if ((rc == 0)); then
    build_ok=1
    compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
    first_needed=$(readelf -d "$build/tests/stagecut_runtime_tests" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | head -n 1)
    echo "   compiler $compiler ($("$compiler" -dumpfullversion 2>/dev/null || echo '?')); the runtime tests' first NEEDED: ${first_needed:-?}"
    finish PASS "stagecut, stagecut-torch, the profiler and runtime tests, gpu_timer_table with -j $jobs"
  else
    grep -E -m 15 'error:|FAILED:|undefined reference|No such file' "$out/build.log" | indent || true
    finish FAIL "$(failure "$rc" "$seconds" "$out/build.log")"
  fi
fi

stagecut=$build/cli/stagecut
tests=$build/tests/stagecut_profiler_tests
runtime_tests=$build/tests/stagecut_runtime_tests
timer_table=$build/bench/gpu_timer_table

# --- the [cuda] tests (with the hidden [.gpu] ones, which a tag filter includes)

# A test binary that a signal ended runs again under the debugger, for the backtrace.
debugger=""
for candidate in cuda-gdb /usr/local/cuda/bin/cuda-gdb gdb; do
  if command -v "$candidate" >/dev/null; then
    debugger=$(command -v "$candidate")
    break
  fi
done
backtrace() { # LOG COMMAND...: the crashing command under the debugger, its backtrace in LOG
  local log=$1
  shift
  if [[ -z "$debugger" ]]; then
    echo "no cuda-gdb or gdb here: no backtrace" | indent
    return
  fi
  run_logged "$(limit 120)" "$log" "$debugger" -batch -nx -ex 'set print thread-events off' -ex run -ex 'bt 40' \
    -ex 'x/4a $sp' -ex 'info sharedlibrary' --args "$@" || true
  echo "backtrace ($(basename "$debugger"), $log):" | indent
  # At address 0 there is no frame to unwind: the words on the stack name the caller.
  grep -E '^#[0-9]+ |^0x[0-9a-f]+:' "$log" | head -n 25 | cut -c1-200 | indent || true
}

begin debugger
if [[ -z "$debugger" ]]; then
  finish WARN "no cuda-gdb or gdb: a crashing test will have no backtrace"
else
  # The debugger must see a crash and unwind it, or a crash on the lent machine tells nothing.
  rc=0
  run_logged 60 "$out/debugger.log" "$debugger" -batch -nx -ex run -ex bt --args /bin/sh -c 'kill -SEGV $$' || rc=$?
  if grep -q 'SIGSEGV' "$out/debugger.log" && grep -q -E '^#0 ' "$out/debugger.log"; then
    finish PASS "$debugger unwinds a crashing process"
  else
    finish WARN "$debugger did not show a backtrace of a crashing process (log: $out/debugger.log)"
  fi
fi

begin "cxx runtime link"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  finish SKIP "not configured"
else
  # The wheel's libtorch.so exports a broken std::filesystem; an executable linked as stagecut's
  # must never call it, with this machine's own toolchain (tests/cxx_runtime_link_test.sh).
  rc=0
  run_logged "$(limit 120)" "$out/cxx-runtime-link.log" "$root/tests/cxx_runtime_link_test.sh" "$build" || rc=$?
  indent <"$out/cxx-runtime-link.log"
  if ((rc == 0)); then
    finish PASS "$(tail -n 1 "$out/cxx-runtime-link.log" | sed 's/^cxx_runtime_link: //')"
  else
    finish FAIL "$(failure "$rc" 120 "$out/cxx-runtime-link.log")"
  fi
fi

begin "cuda tests"
if have "$tests" && time_left; then
  seconds=$(limit 120)
  rc=0
  run_logged "$seconds" "$out/cuda-tests.log" "$tests" "[cuda]" || rc=$?
  ((rc > 128 && rc != 137)) && backtrace "$out/cuda-tests-backtrace.log" "$tests" "[cuda]"
  # The runtime's: validate on the GPU, in one process (ranks on threads).
  if ((rc == 0)) && [[ -x "$runtime_tests" ]]; then
    run_logged "$seconds" "$out/cuda-runtime-tests.log" "$runtime_tests" "[cuda]" || rc=$?
    grep -E '^(All tests passed|test cases:)' "$out/cuda-runtime-tests.log" | indent || true
    if ((rc > 128 && rc != 137)) || grep -q 'fatal error condition' "$out/cuda-runtime-tests.log"; then
      backtrace "$out/cuda-runtime-tests-backtrace.log" "$runtime_tests" "[cuda]"
    fi
  elif ((rc == 0)); then
    echo "$runtime_tests is missing" | indent
    rc=1
  fi
  # Catch2 puts a WARN's text on the line after its location.
  grep -E -A1 'warning:$' "$out/cuda-tests.log" | grep -v -E 'warning:$|^--$' | head -n 6 | indent || true
  grep -E '^(All tests passed|test cases:)' "$out/cuda-tests.log" | indent || true
  if ((rc == 0)); then finish PASS; else finish FAIL "$(failure "$rc" "$seconds" "$out/cuda-tests.log")"; fi
fi

# --- the two profiles: CUDA events, then CUPTI kernel sums of the same model

events_profile=""
cupti_profile=""
profile() { # NAME TIMER DEVICE OUTPUT NOTE [MODEL FLAGS...]: the model flags default to profile_flags
  local name=$1 timer=$2 on=$3 output=$4 note=$5 seconds rc=0
  shift 5
  local flags=("${profile_flags[@]}")
  (($# > 0)) && flags=("$@")
  local log="$out/profile-$name.log"
  seconds=$(limit 150)
  echo "   stagecut profile ${flags[*]} --device $on --timer $timer"
  run_logged "$seconds" "$log" "$stagecut" profile "${flags[@]}" --device "$on" --timer "$timer" -o "$output" || rc=$?
  grep -E '^profile of|^  (sum of layers|whole model|reference kernel|clock warm-up|[0-9]+ [A-Za-z]+ layers: timed)|^WARNING|^  +[0-9]+  (block\.0|head|loss) ' \
    "$log" | indent || true
  if ((rc == 0)); then
    finish PASS "$output${note:+ ($note)}"
  else
    tail -n 3 "$log" | indent
    finish FAIL "$(failure "$rc" "$seconds" "$log")"
    return 1
  fi
}

begin "profile cuda-events"
if have "$stagecut" && time_left; then
  if ((dry_run)); then
    profile cpu auto cpu "$out/cpu.profile.json" "dry run: --device cpu, steady_clock" && events_profile=$out/cpu.profile.json
  else
    profile cuda-events cuda-events "$device" "$out/cuda-events.profile.json" "" && events_profile=$out/cuda-events.profile.json
  fi
fi

begin "profile cupti"
if ((dry_run)); then
  finish SKIP "no GPU (dry run)"
elif have "$stagecut" && time_left; then
  profile cupti cupti "$device" "$out/cupti.profile.json" "" && cupti_profile=$out/cupti.profile.json
fi

begin "cupti vs events"
if ((dry_run)); then
  finish SKIP "no GPU (dry run): gpu_timer_table takes a cuda-events and a cupti profile"
elif [[ -z "$events_profile" || -z "$cupti_profile" ]]; then
  finish SKIP "needs both profiles"
elif have "$timer_table" && time_left; then
  rc=0
  run_logged 30 "$out/gpu-timer-table.txt" "$timer_table" "$events_profile" "$cupti_profile" || rc=$?
  indent <"$out/gpu-timer-table.txt"
  if ((rc == 0)); then finish PASS "$out/gpu-timer-table.txt"; else finish FAIL "$(failure "$rc" 30 "$out/gpu-timer-table.txt")"; fi
fi

# --- a model people train: a LLaMA in bfloat16, profiled whole

begin "profile llama bf16"
if ((dry_run)); then
  llama_flags=(--model llama --preset llama-tiny --dtype bfloat16 --microbatch 2 --min-repeats 3 --max-repeats 5)
  llama_device=cpu
else
  llama_flags=(--model llama --preset llama3-8b --dtype bfloat16 --microbatch 1 --seq 4096 --min-repeats 3 --max-repeats 5)
  llama_device=$device
fi
if have "$stagecut" && time_left; then
  profile llama auto "$llama_device" "$out/llama.profile.json" "" "${llama_flags[@]}" || true
fi

# --- a model no single GPU holds: llama3-70b at tensor parallel 8, one layer at a time

begin "profile llama 70b tp8"
if ((dry_run)); then
  big_flags=(--model llama --preset llama-tiny --dtype bfloat16 --tensor-parallel 2 --microbatch 2 --min-repeats 2 --max-repeats 3)
  big_device=cpu
else
  big_flags=(--model llama --preset llama3-70b --dtype bfloat16 --tensor-parallel 8 --microbatch 1 --seq 4096
    --min-repeats 3 --max-repeats 5)
  big_device=$device
fi
if have "$stagecut" && time_left; then
  profile llama-tp auto "$big_device" "$out/llama-tp.profile.json" "" "${big_flags[@]}" || true
fi

# The split Megatron runs, with the shard's degree and memory, from that profile.
begin "megatron tp layout"
if [[ ! -s "$out/llama-tp.profile.json" ]]; then
  finish SKIP "needs the tensor-parallel profile"
else
  rc=0
  run_logged 30 "$out/llama-tp.partition.txt" "$stagecut" partition "$out/llama-tp.profile.json" --stages 2 \
    --format megatron --optimizer adam-mixed --tp-bandwidth 300GB/s --tp-latency 5us || rc=$?
  grep -E -- '^tensor parallel|^  +[0-9]+  +embed|--tensor-model-parallel-size' "$out/llama-tp.partition.txt" | head -n 4 | indent || true
  layout=$(grep -m 1 -o -- '--pipeline-model-parallel-layout .*' "$out/llama-tp.partition.txt" || true)
  if ((rc != 0)); then
    finish FAIL "$(failure "$rc" 30 "$out/llama-tp.partition.txt")"
  elif [[ "$layout" != *--tensor-model-parallel-size* ]]; then
    finish FAIL "no --tensor-model-parallel-size in the Megatron split ($out/llama-tp.partition.txt)"
  else
    finish PASS "$layout"
  fi
fi

begin "llama memory vs torch"
if [[ ! -s "$out/llama.profile.json" ]]; then
  finish SKIP "needs the llama profile"
elif [[ -z "$json_python" ]]; then
  finish SKIP "no python"
else
  # The block's kept bytes against HF's LlamaDecoderLayer counted by torch.cuda.memory_allocated.
  rc=0
  run_logged 120 "$out/llama-memory.txt" "$json_python" "$root/bench/llama_block_memory.py" "$out/llama.profile.json" \
    --tolerance 0.02 || rc=$?
  indent <"$out/llama-memory.txt"
  case $rc in
    0) finish PASS "$(grep -o 'MB: [-+0-9.]*%' "$out/llama-memory.txt" | head -n 1 | sed 's/MB: /stagecut vs HF: /')" ;;
    77) finish SKIP "$(sed -n 's/^llama_block_memory: skipped: //p' "$out/llama-memory.txt" | head -n 1)" ;;
    *) finish FAIL "$(failure "$rc" 120 "$out/llama-memory.txt")" ;;
  esac
fi

# --- the layers timed one by one against the whole model timed in the same rounds

begin "sum of layers vs whole"
if [[ -z "$events_profile" ]]; then
  finish SKIP "needs the events profile"
else
  rc=0
  run_logged 30 "$out/inspect.txt" "$stagecut" inspect "$events_profile" || rc=$?
  grep -E '^  (total|whole) ' "$out/inspect.txt" | indent || true
  difference=$(sed -n "s/.*the layers' sum differs by \([-+0-9.]*%\).*/\1/p" "$out/inspect.txt")
  if ((rc != 0)); then
    finish FAIL "stagecut inspect: $(failure "$rc" 30 "$out/inspect.txt")"
  elif [[ -z "$difference" ]]; then
    finish FAIL "the profile has no whole_model block ($out/inspect.txt)"
  else
    finish PASS "the layers' sum is $difference off the whole model (whole_model.sum_of_layers_vs_whole)"
  fi
fi

# --- a 2-stage split of the events profile, run for real on 2 ranks

partition=""
begin partition
if [[ -z "$events_profile" ]]; then
  finish SKIP "needs the events profile"
elif time_left; then
  rc=0
  run_logged 30 "$out/partition.txt" "$stagecut" partition "$events_profile" --stages 2 -o "$out/partition.json" || rc=$?
  grep -E '^  bottleneck' "$out/partition.txt" | indent || true
  split=$(sed -n '/^list:$/{n;s/^ *//p}' "$out/partition.txt")
  if ((rc == 0)); then
    partition=$out/partition.json
    finish PASS "split ${split:-?} ($partition)"
  else
    finish FAIL "$(failure "$rc" 30 "$out/partition.txt")"
  fi
fi

validate_device=$device
((dry_run)) && validate_device=cpu
# Runs validate on PROFILE split by PARTITION (SCHEDULE, 1f1b unless given; 8 microbatches, 3
# steps) and judges it:
# FAIL when it fails, WARN when its step cannot be held to the prediction (a shared GPU, a moved
# machine, a miss beyond STEP_TOLERANCE), else PASS. Its JSON is OUT/NAME.json, its log OUT/NAME.log.
validate_split() { # NAME PROFILE PARTITION [SCHEDULE]
  local name=$1 profile=$2 split_file=$3 schedule=${4:-1f1b} seconds rc=0 figures="" verdict note
  seconds=$(limit 180)
  local command=("$stagecut" validate "$profile" --partition "$split_file" --device "$validate_device" --schedule "$schedule"
    --microbatches 8 --steps 3 --json)
  echo "   ${command[*]:1}"
  timeout -k 5 "$seconds" "${command[@]}" >"$out/$name.json" 2>"$out/$name.log" || rc=$?
  grep -E '^WARNING' "$out/$name.log" | head -n 6 | indent || true
  if [[ -n "$json_python" && -s "$out/$name.json" ]]; then
    figures=$("$json_python" - "$out/$name.json" "$step_tolerance" <<'PY' 2>>"$out/$name.log" || true
import json, sys
v = json.load(open(sys.argv[1]))
step_tolerance = float(sys.argv[2])
ranks = v.get("environment", {}).get("ranks", [])
over = ", ".join(sorted({r.get("transport", "gloo") for r in ranks})) or "unknown"
memory = "; ".join("rank %d %.1f MB measured, %.1f predicted" % (
    r["rank"], r["peak_memory_bytes"] / 1e6, r["predicted_peak_memory_bytes"] / 1e6)
    for r in v.get("ranks", []) if r.get("peak_memory_bytes") and r.get("predicted_peak_memory_bytes"))
print("step measured %.2f ms, predicted %.2f ms (%+.1f%%); gradients %s (max rel diff %.2g, tolerance %.2g, --optimizer %s); over %s%s" % (
    v["measured_step_ms"], v["predicted_step_ms"], 100 * v["error"], v["grad_check"], v["grad_max_rel_diff"],
    v["grad_tolerance"], v.get("optimizer", "?"), over, "; memory: " + memory if memory else ""))
# Why the step cannot be held to the prediction, if it cannot: the run's own verdict on its
# figures (shared GPU, oversubscribed cores, a moved machine), else a miss beyond the tolerance.
warnings = v.get("environment", {}).get("warnings", [])
if warnings:
    print("untrusted: " + warnings[0].split(":")[0] + " (validate marks the step time untrusted)")
elif abs(v["error"]) > step_tolerance:
    print("missed: the step is %+.1f%% off its prediction, beyond the check's %.0f%%" % (100 * v["error"], 100 * step_tolerance))
PY
    )
  fi
  verdict=$(sed -n 's/^\(untrusted\|missed\): //p' <<<"$figures")
  note=$(head -n 1 <<<"$figures")
  note="${note:-see $out/$name.json}"
  if ((rc != 0)); then
    finish FAIL "$(failure "$rc" "$seconds" "$out/$name.log")"
  elif [[ -n "$verdict" ]]; then
    # The memory figures hold on a shared GPU; the step time cannot, so it is not a PASS.
    finish WARN "$note; step not held to the prediction: $verdict"
  else
    finish PASS "$note"
  fi
}

begin validate
if [[ -z "$partition" ]]; then
  finish SKIP "needs the partition"
elif time_left; then
  validate_split validation "$events_profile" "$partition"
fi

# --- bfloat16 run for real: a small LLaMA split in two, float32 gradients and adam-mixed

begin "validate llama bf16"
small_llama=(--model llama --preset llama-tiny --layers 4 --hidden 256 --heads 4 --kv-heads 2 --ffn 688 --seq 128
  --vocab 8000 --microbatch 2 --dtype bfloat16 --min-repeats 3 --max-repeats 5)
if have "$stagecut" && time_left; then
  rc=0
  run_logged 60 "$out/small-llama.profile.log" "$stagecut" profile "${small_llama[@]}" --device "$validate_device" \
    -o "$out/small-llama.profile.json" || rc=$?
  ((rc == 0)) && { run_logged 30 "$out/small-llama.partition.txt" "$stagecut" partition "$out/small-llama.profile.json" \
    --stages 2 --microbatches 8 --optimizer adam-mixed -o "$out/small-llama.partition.json" || rc=$?; }
  if ((rc != 0)); then
    finish FAIL "the small llama's profile or partition failed (exit $rc): see $out/small-llama.profile.log"
  else
    validate_split small-llama.validation "$out/small-llama.profile.json" "$out/small-llama.partition.json"
  fi
fi

# --- chunks run for real: the small LLaMA's ZB-V split (2 chunks per rank in a V, the turn
# handed over in memory), gradients and memory per rank against the prediction

begin "validate zb-v"
if [[ ! -s "$out/small-llama.profile.json" ]]; then
  finish SKIP "needs the small llama's profile"
elif time_left; then
  rc=0
  run_logged 30 "$out/small-llama.zb-v.partition.txt" "$stagecut" partition "$out/small-llama.profile.json" \
    --stages 2 --schedule zb-v --microbatches 8 --optimizer adam-mixed -o "$out/small-llama.zb-v.partition.json" || rc=$?
  if ((rc != 0)); then
    finish FAIL "the small llama's ZB-V partition failed (exit $rc): see $out/small-llama.zb-v.partition.txt"
  else
    validate_split small-llama.zb-v.validation "$out/small-llama.profile.json" "$out/small-llama.zb-v.partition.json" zb-v
  fi
fi

# --- calibration where there are cores: 3 and 4 CPU ranks (bench/calibration_table.sh)

begin "calibration table"
cores=$(nproc)
# What is left of the run's budget, less 15 s for what follows.
seconds=$(($(limit 100000) - 15))
if ((!dry_run && cores < 8)); then
  finish SKIP "$cores cores: the 3- and 4-stage table needs 8 or more"
elif ! command -v python3 >/dev/null; then
  finish SKIP "no python3 (the table reads validate's JSON with it)"
elif ((seconds < 60)); then
  finish SKIP "$seconds s left of the ${budget} s budget; the table needs a minute or more"
elif have "$stagecut"; then
  if ((dry_run)); then
    table=(STAGES=2 SCHEDULES=1f1b STEPS=2 MICROBATCHES=4 "MODEL=${profile_flags[*]}")
  else
    table=("STAGES=3 4" "SCHEDULES=1f1b zb-h1" STEPS=3)
  fi
  echo "   ${table[*]} bench/calibration_table.sh (${cores} cores, ${seconds} s at most)"
  rc=0
  run_logged "$seconds" "$out/calibration-table.txt" env "${table[@]}" "$root/bench/calibration_table.sh" "$build" || rc=$?
  indent <"$out/calibration-table.txt"
  trusted=$(grep -c ', trusted$' "$out/calibration-table.txt" || true)
  runs=$(grep -cE ', (trusted|untrusted: .*)$' "$out/calibration-table.txt" || true)
  if ((rc != 0)); then
    finish FAIL "$(failure "$rc" "$seconds" "$out/calibration-table.txt")"
  elif ((runs == 0)); then
    finish FAIL "no run printed a verdict ($out/calibration-table.txt)"
  elif ((trusted < runs)); then
    finish WARN "$trusted of $runs runs trusted: calibrate refuses the others ($out/calibration-table.txt)"
  else
    finish PASS "$runs of $runs runs trusted ($out/calibration-table.txt)"
  fi
fi

# --- the whole run

step_name="wall time"
step_start=$t0
wall=$((SECONDS - t0))
echo "== wall time: $wall s"
if ((dry_run || wall <= 360)); then
  finish PASS "of a ${budget} s budget"
else
  finish FAIL "over the 6 minutes the check keeps to on a lent GPU machine"
fi

echo "== summary ($out)"
printf '   %s\n' "${summary[@]}"
if ((failures > 0)); then
  echo "gpu-check: $failures step(s) failed; logs in $out"
  exit 1
fi
echo "gpu-check: every step passed or was skipped; outputs in $out"
