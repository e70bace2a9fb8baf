#!/usr/bin/env bash
# The Python that tests tools/stagecut_export.py (tests/exporter_test.sh): a venv over Debian's
# python3 that sees Debian's torch and torchvision and adds transformers from PyPI. The pin is
# the newest line known to work with Debian's torch 1.13 (later ones need torch 2). Idempotent;
# without network it says so and the tests skip the Hugging Face cases with a WARN.
# Usage: scripts/install-export-venv.sh DEST
set -euo pipefail
dest=${1:?usage: install-export-venv.sh DEST}
transformers_pin="transformers==4.40.2"
if [[ -x "$dest/bin/python" ]] && "$dest/bin/python" -c 'import transformers, torch' 2>/dev/null; then
  exit 0
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "install-export-venv: Debian's python3 has no torch (apt-get install python3-torch); the exporter's tests will skip" >&2
  exit 0
fi
echo "install-export-venv: $dest with $transformers_pin from PyPI" >&2
rm -rf "$dest"
/usr/bin/python3 -m venv --system-site-packages "$dest"
if ! "$dest/bin/pip" install --quiet --disable-pip-version-check "$transformers_pin"; then
  echo "install-export-venv: could not install $transformers_pin; the exporter's Hugging Face tests will skip" >&2
fi
