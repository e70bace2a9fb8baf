#!/usr/bin/env bash
# The Python that tests tools/stagecut_export.py (tests/exporter_test.sh). Idempotent; without
# network it says so, and the tests skip what they cannot run with a WARN.
# Usage: scripts/install-export-venv.sh DEST                 Debian's torch 1.13 and torchvision
#          0.14 (a venv over Debian's python3 that sees them) and transformers 4.40 from PyPI,
#          the last line that supports torch 1.13.
#        scripts/install-export-venv.sh DEST TORCH_PIP_DIR   the pip wheel's torch 2.x that
#          scripts/install-torch-pip.sh unpacked into TORCH_PIP_DIR (a .pth file points at it),
#          with its Python dependencies, the torchvision built for it and current transformers.
set -euo pipefail
dest=${1:?usage: install-export-venv.sh DEST [TORCH_PIP_DIR]}
torch_pip=${2:-}
if [[ -x "$dest/bin/python" ]] && "$dest/bin/python" -c 'import transformers, torchvision, torch' 2>/dev/null; then
  exit 0
fi
pip_install() { "$dest/bin/pip" install --quiet --disable-pip-version-check "$@"; }
rm -rf "$dest"
if [[ -z "$torch_pip" ]]; then
  if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "install-export-venv: Debian's python3 has no torch (apt-get install python3-torch); the exporter's tests will skip" >&2
    exit 0
  fi
  echo "install-export-venv: $dest over Debian's torch, with transformers 4.40 from PyPI" >&2
  /usr/bin/python3 -m venv --system-site-packages "$dest"
  pip_install "transformers==4.40.2" ||
    echo "install-export-venv: could not install transformers; the exporter's Hugging Face tests will skip" >&2
  exit 0
fi
[[ -f "$torch_pip/torch/__init__.py" && -f "$torch_pip/torchgen/__init__.py" ]] ||
  { echo "install-export-venv: $torch_pip holds no torch and torchgen packages; run scripts/install-torch-pip.sh first" >&2; exit 1; }
version=$(sed -n "s/^__version__ = '\([0-9.]*\).*/\1/p" "$torch_pip/torch/version.py")
# torchvision's minor version is torch's minus 15 (torch 2.11 pairs with torchvision 0.26).
minor=${version#2.}
minor=${minor%%.*}
vision="0.$((minor + 15)).*"
echo "install-export-venv: $dest over the pip wheel's torch $version, with torchvision $vision and transformers from PyPI" >&2
/usr/bin/python3 -m venv "$dest"
site=$("$dest/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
realpath "$torch_pip" >"$site/stagecut-torch-pip.pth"
# torch's own requirements (its wheel's Requires-Dist), without the NVIDIA wheels: the CPU is enough.
if ! pip_install "typing-extensions>=4.10" "sympy>=1.13.3" networkx jinja2 fsspec filelock numpy pillow ||
   ! pip_install --no-deps "torchvision==$vision" ||
   ! pip_install transformers; then
  echo "install-export-venv: could not install torch's dependencies, torchvision or transformers; the exporter's tests will skip what needs them" >&2
fi
