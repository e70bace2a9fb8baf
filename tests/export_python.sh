# Sourced by the tests that check stagecut against PyTorch itself: sets `python` to the Python
# with torch they run, $STAGECUT_EXPORT_PYTHON (make test sets it: .deps/export-venv, Debian's
# torch 1.13; with TORCH=pip .deps/export-venv-torch2, the wheel's torch 2.x), else
# SOURCE_DIR/.deps/export-venv/bin/python, else Debian's /usr/bin/python3; empty when none has
# torch. Usage: source tests/export_python.sh SOURCE_DIR
python=${STAGECUT_EXPORT_PYTHON:-}
if [[ -z "$python" ]]; then
  for candidate in "$1/.deps/export-venv/bin/python" /usr/bin/python3 python3; do
    if "$candidate" -c 'import torch' 2>/dev/null; then python=$candidate; break; fi
  done
fi
if [[ -n "$python" ]] && ! "$python" -c 'import torch' 2>/dev/null; then python=""; fi
