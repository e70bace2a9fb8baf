#!/usr/bin/env bash
# An executable linked as stagecut's are (cmake/StagecutCxxRuntime.cmake) against the LibTorch of
# BUILD_DIR removes a folder tree with std::filesystem::remove_all: once with the toolchain's
# shared libstdc++, once with only its static archive (as the GPU machine's /opt/gcc links).
# Against the pip wheel's LibTorch, whose libtorch.so exports a remove_all that jumps to address
# 0, the second crashed before the C++ runtime was linked whole ahead of LibTorch.
# Usage: tests/cxx_runtime_link_test.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: cxx_runtime_link_test.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$build/CMakeCache.txt
torch_dir=$(sed -n 's/^Torch_DIR:PATH=//p' "$cache")
[[ -n "$torch_dir" ]] || { echo "cxx_runtime_link: $cache has no Torch_DIR (a LibTorch-free build)" >&2; exit 77; }
libraries=()
for name in torch torch_cpu c10; do
  library=$(find "$torch_dir/../../.." "$torch_dir/../.." -maxdepth 2 -name "lib$name.so*" -print -quit 2>/dev/null || true)
  [[ -n "$library" ]] || { echo "cxx_runtime_link: no lib$name.so beside $torch_dir" >&2; exit 1; }
  libraries+=("$(realpath "$library")")
done
exported=$(nm -D --defined-only "${libraries[0]}" 2>/dev/null | grep -c '_ZNSt10filesystem' || true)
linker_flags=$(sed -n 's/^CMAKE_EXE_LINKER_FLAGS:[A-Z]*=//p' "$cache")
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")
compiler=${compiler:-c++}
static_archive=$("$compiler" -print-file-name=libstdc++.a)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/static-only"
ln -s "$static_archive" "$work/static-only/libstdc++.a"

failures=0
for mode in shared static-only; do
  flags=$linker_flags
  [[ $mode == static-only ]] && flags="-L$work/static-only -static-libstdc++ $flags"
  if ! cmake -S "$root/tests/cxx_runtime_link" -B "$work/$mode" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_CXX_COMPILER=$compiler" \
      "-DSTAGECUT_SOURCE_DIR=$root" "-DTORCH_LIBRARY_FILES=$(IFS=';'; echo "${libraries[*]}")" \
      "-DCMAKE_EXE_LINKER_FLAGS=$flags" >"$work/$mode.log" 2>&1 ||
     ! cmake --build "$work/$mode" >>"$work/$mode.log" 2>&1; then
    cat "$work/$mode.log"
    echo "cxx_runtime_link: $mode: the executable did not build" >&2
    failures=$((failures + 1))
    continue
  fi
  rc=0
  output=$("$work/$mode/remove_tree" "$work/tree-$mode" 2>&1) || rc=$?
  needed=$(readelf -d "$work/$mode/remove_tree" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ')
  if ((rc == 0)); then
    echo "cxx_runtime_link: $mode libstdc++: $output (NEEDED: $needed)"
  else
    echo "cxx_runtime_link: $mode libstdc++: exit $rc ${output:+($output) }(NEEDED: $needed)" >&2
    failures=$((failures + 1))
  fi
done
echo "cxx_runtime_link: ${libraries[0]} exports $exported std::filesystem symbols"
((failures == 0))
