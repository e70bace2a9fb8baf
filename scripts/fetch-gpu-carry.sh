#!/usr/bin/env bash
# Fetches the header-only build dependencies that a GPU machine without internet or apt lacks,
# so that they can travel with the working tree (scripts/gpu-check.sh reads them from there):
# CLI11, nlohmann-json, Eigen3, Catch2 v2 and the Gloo headers that LibTorch's
# ProcessGroupGloo.hpp includes (the pip wheel ships no gloo/ folder).
# Usage: scripts/fetch-gpu-carry.sh [DEST]           (default .deps/gpu-carry)
#        scripts/fetch-gpu-carry.sh --check [DEST]   only says whether DEST is whole (exit 0 or 1)
# DEST/usr is then a prefix for CMAKE_PREFIX_PATH and DEST/usr/include holds gloo/. Needs apt's
# package lists (Debian 12), not root. Idempotent: a second run only checks and prints nothing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
check_only=0
if [[ "${1:-}" == "--check" ]]; then
  check_only=1
  shift
fi
dest=${1:-$root/.deps/gpu-carry}
packages=(libcli11-dev nlohmann-json3-dev libeigen3-dev catch2 libgloo-dev)
# What gpu-check.sh and the configure need; a carry missing any of them is fetched again.
needed=(
  usr/share/cmake/CLI11/CLI11Config.cmake
  usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake
  usr/share/eigen3/cmake/Eigen3Config.cmake
  usr/lib/cmake/Catch2/Catch2Config.cmake
  usr/include/gloo/config.h
  packages.txt
)

complete() {
  local file
  for file in "${needed[@]}"; do
    [[ -f "$1/$file" ]] || return 1
  done
}

if complete "$dest"; then
  exit 0
fi
if ((check_only)); then
  if [[ ! -d "$dest" ]]; then
    echo "fetch-gpu-carry: $dest does not exist: run scripts/fetch-gpu-carry.sh $dest on a machine with apt" >&2
    exit 1
  fi
  missing=()
  for file in "${needed[@]}"; do
    [[ -f "$dest/$file" ]] || missing+=("$file")
  done
  echo "fetch-gpu-carry: $dest lacks ${missing[*]}: run scripts/fetch-gpu-carry.sh $dest on a machine with apt" >&2
  exit 1
fi

for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null ||
    { echo "fetch-gpu-carry: $tool not found: run this on a Debian machine (Debian 12 gives the versions tested)" >&2; exit 1; }
done

mkdir -p "$(dirname "$dest")"
dest=$(cd "$(dirname "$dest")" && pwd)/$(basename "$dest")
# A staging folder of this run's own, beside DEST: the final rename stays on one file system,
# and two runs at once (two ctest builds) never unpack into the same folder.
staging=$(mktemp -d "$dest.partial.XXXXXX")
trap 'rm -rf "$staging"' EXIT
mkdir "$staging/debs" "$staging/tree"

apt_options=(-q=2)
# As root, apt downloads as the user _apt, who cannot write into a mktemp folder; it would then
# warn and download as root anyway. Saying so up front keeps the run quiet.
[[ $(id -u) -eq 0 ]] && apt_options+=(-o APT::Sandbox::User=root)
(cd "$staging/debs" && apt-get "${apt_options[@]}" download "${packages[@]}") ||
  { echo "fetch-gpu-carry: apt-get download ${packages[*]} failed (see above): run 'apt-get update' as root, or check the network" >&2; exit 1; }

for deb in "$staging"/debs/*.deb; do
  dpkg-deb -x "$deb" "$staging/tree"
  # shellcheck disable=SC2016 # dpkg-deb's own ${Field} syntax, not the shell's
  dpkg-deb --show --showformat='${Package} ${Version}\n' "$deb" >>"$staging/tree/packages.txt"
done

# Only headers and CMake configs are used (and Catch2's static library, which its config checks
# for). Docs and man pages go, pkg-config files and Eigen's unsupported/ modules, which this
# build never reads, and Gloo's library link and CMake config: the link points at libgloo0, not
# fetched, as the wheel's libtorch_cpu has Gloo inside, and the config names that library.
rm -rf "$staging/tree/usr/share/doc" "$staging/tree/usr/share/man" "$staging/tree/usr/share/pkgconfig" \
  "$staging/tree/usr/share/cmake/Gloo" "$staging/tree/usr/lib/libgloo.so" \
  "$staging/tree/usr/include/eigen3/unsupported"
# A link may not survive the trip with the tree; none should be left.
links=$(find "$staging/tree" -type l)
[[ -z "$links" ]] || { echo "fetch-gpu-carry: unexpected symbolic links in the packages: $links" >&2; exit 1; }
complete "$staging/tree" ||
  { echo "fetch-gpu-carry: the packages lack one of: ${needed[*]} (a different Debian release?)" >&2; exit 1; }

complete "$dest" || rm -rf "$dest"
if ! mv -T "$staging/tree" "$dest" 2>/dev/null; then
  # Another run finished first: keep its carry if it is whole.
  complete "$dest" || { echo "fetch-gpu-carry: could not move the carry into $dest" >&2; exit 1; }
  exit 0
fi
echo "fetch-gpu-carry: $dest: $(du -sh "$dest" | cut -f1) ($(cut -d' ' -f1,2 "$dest/packages.txt" | paste -sd, | sed 's/,/, /g'))" >&2
