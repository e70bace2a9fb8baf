#!/usr/bin/env bash
# What `make demo` runs: installs the Debian packages the build needs (only those missing),
# configures BUILD_DIR once with the given command, builds only what the demo runs (the stagecut
# executables, not the tests or benchmarks) and runs the demo; then says where the time went.
# Usage: scripts/make-demo.sh BUILD_DIR JOBS -- CONFIGURE_COMMAND...
set -euo pipefail
build_dir=${1:?usage: make-demo.sh BUILD_DIR JOBS -- CONFIGURE_COMMAND...}
jobs=${2:?usage: make-demo.sh BUILD_DIR JOBS -- CONFIGURE_COMMAND...}
shift 2
[[ "${1:-}" == "--" ]] && shift
(($# > 0)) || { echo "make-demo: no configure command after --" >&2; exit 2; }

phases=()
started=$(date +%s%N)
seconds_since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
summary() {
  local status=$?
  ((${#phases[@]} > 0)) || return 0
  local joined
  joined=$(printf ', %s' "${phases[@]}")
  echo "make demo: $(seconds_since "$started") s in all (${joined:2})$( ((status == 0)) || echo ", stopped by a failure")"
}
trap summary EXIT
phase() {
  local name=$1 start
  shift
  start=$(date +%s%N)
  "$@"
  phases+=("$name $(seconds_since "$start") s")
}

phase apt scripts/install-deps.sh
if [[ -f "$build_dir/build.ninja" ]]; then
  phases+=("configure 0 s (done before)")
else
  phase configure "$@"
fi
phase build cmake --build "$build_dir" -j "$jobs" --target stagecut
phase demo "$build_dir/cli/stagecut" demo
