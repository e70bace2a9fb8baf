#!/usr/bin/env bash
# Installs the Debian packages stagecut builds against, only those missing. Idempotent and
# quiet; when everything is present it only runs dpkg-query (well under a second).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libtorch-dev libgloo-dev libopenblas0-pthread
  libcli11-dev catch2 nlohmann-json3-dev libeigen3-dev
)
case "${1:-}" in
  "") ;;
  # tools/stagecut_export.py and its tests (`make test`, not `make demo`): Debian's PyTorch and
  # torchvision (1.13 and 0.14), about 40 s of apt on a fresh machine.
  --export) packages=(python3-torch python3-torchvision python3-venv) ;;
  # `make fuzz` alone needs clang and its libFuzzer runtime.
  --fuzz) packages+=(clang libclang-rt-14-dev) ;;
  *) echo "install-deps: unknown option '$1'; use no option (the build's packages), --export or --fuzz" >&2; exit 2 ;;
esac

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
