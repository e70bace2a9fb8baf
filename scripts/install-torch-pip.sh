#!/usr/bin/env bash
# Fetches the LibTorch that PyTorch's pip wheel carries (the CUDA build PyPI serves), for
# `make test TORCH=pip`: the wheel's torch/ folder (headers, libraries, CMake config; torchgen/ beside it) and the
# three NVIDIA libraries it links that the CUDA toolkit in /usr/local/cuda lacks (cuSPARSELt,
# NVSHMEM, cuFile). Nothing is installed into Python. Idempotent: a second run only checks.
# Usage: scripts/install-torch-pip.sh DEST [VERSION]   (VERSION default 2.11.0)
# Prints nothing on success; DEST/torch is then the prefix for -DCMAKE_PREFIX_PATH. The NVIDIA
# libraries go where the wheel's own run path looks for them, DEST/nvidia/..., as pip lays them
# out beside torch/ in site-packages: no run path or LD_LIBRARY_PATH is needed.
set -euo pipefail
dest=${1:?usage: install-torch-pip.sh DEST [VERSION]}
version=${2:-2.11.0}
if [[ -f "$dest/torch/share/cmake/Torch/TorchConfig.cmake" && -f "$dest/nvidia/cu13/lib/libcufile.so.0" &&
      -f "$dest/torchgen/__init__.py" ]]; then
  exit 0
fi
[[ -f /usr/local/cuda/lib64/libcudart.so.13 ]] ||
  { echo "install-torch-pip: the wheel's LibTorch links CUDA 13's libraries; install the CUDA 13 toolkit in /usr/local/cuda" >&2; exit 1; }
python3 -m pip --version >/dev/null 2>&1 ||
  { echo "install-torch-pip: needs pip (apt-get install python3-pip)" >&2; exit 1; }
mkdir -p "$dest"
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
echo "install-torch-pip: downloading torch $version and three NVIDIA libraries from PyPI (~560 MB)" >&2
# The wheel's C++ part is the same for every Python; pick one so the local Python does not matter.
platforms=()
for platform in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
  platforms+=(--platform "$platform")
done
fetch() { python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 "${platforms[@]}" -d "$download" "$@"; }
fetch "torch==$version"
# The NVIDIA libraries at the versions this torch asks for (its wheel's Requires-Dist), so that
# PyPI's empty placeholder releases are never chosen.
mapfile -t requirements < <(python3 - "$download" <<'PY'
import glob, re, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/torch-*.whl")[0]
with zipfile.ZipFile(wheel) as archive:
    metadata = next(archive.read(n).decode() for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
pins = dict(re.findall(r"^Requires-Dist: (nvidia-(?:cusparselt|nvshmem)-cu\d+)(==[\w.]+)", metadata, re.M))
for name in ("cusparselt", "nvshmem"):
    found = [k + v for k, v in pins.items() if name in k]
    print(found[0] if found else "nvidia-" + name + "-cu13>=0.1")
print("nvidia-cufile>=1")
PY
)
fetch "${requirements[@]}"
python3 - "$download" "$dest" <<'PY'
import glob, os, shutil, sys, zipfile
download, dest = sys.argv[1], sys.argv[2]
wanted = ("libcusparseLt.so.0", "libnvshmem_host.so.3", "libcufile.so.0")
found = []
for wheel in glob.glob(os.path.join(download, "*.whl")):
    with zipfile.ZipFile(wheel) as archive:
        if os.path.basename(wheel).startswith("torch-"):
            # torch/ is LibTorch and the Python package; torchgen/ is what `import torch` also
            # needs, for tools/stagecut_export.py under torch 2.x (scripts/install-export-venv.sh).
            members = [m for m in archive.namelist() if m.startswith(("torch/", "torchgen/"))]
            staging = os.path.join(dest, "torch.partial")
            shutil.rmtree(staging, ignore_errors=True)
            archive.extractall(staging, members)
            for member in members:  # zip files do not keep the executable bit
                mode = archive.getinfo(member).external_attr >> 16
                if mode:
                    os.chmod(os.path.join(staging, member), mode)
            for package in ("torch", "torchgen"):
                shutil.rmtree(os.path.join(dest, package), ignore_errors=True)
                os.rename(os.path.join(staging, package), os.path.join(dest, package))
            shutil.rmtree(staging)
        else:
            for member in archive.namelist():
                if member.startswith("nvidia/") and os.path.basename(member) in wanted:
                    target = os.path.join(dest, member)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with archive.open(member) as source, open(target + ".partial", "wb") as out:
                        shutil.copyfileobj(source, out)
                    os.rename(target + ".partial", target)
                    found.append(os.path.basename(member))
missing = [name for name in wanted if name not in found]
if missing:
    sys.exit("install-torch-pip: the NVIDIA wheels lacked " + ", ".join(missing))
PY
