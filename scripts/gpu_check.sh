#!/usr/bin/env bash
# The GPU check's one device command (what it runs: scripts/gpu_check.py). On the device
# machine, from the repository root, with .gpu/ carried (made here by scripts/gpu_prepare.sh):
#   bash scripts/gpu_check.sh                  # results in $OUT
# Here, without a GPU:  make gpu-check DRY=1   (PY=.venv/bin/python bash scripts/gpu_check.sh --dry-run)
# Before the check it installs what the device image lacks, only where it is missing: the
# carried wgpu wheels and MPICH (into /tmp, on PYTHONPATH) and the Vulkan loader (carried .deb
# files), and points Vulkan at the NVIDIA driver's ICD.
set -u
cd "$(dirname "$0")/.."
PY="${PY:-python3}"
CARRIED=.gpu
DRY=0
for arg in "$@"; do [ "$arg" = "--dry-run" ] && DRY=1; done

# install_if_missing IMPORT DIR: install DIR's carried wheels when IMPORT fails.
install_if_missing() {
    if "$PY" -c "$1" >/dev/null 2>&1; then
        return
    fi
    if ls "$CARRIED/$2"/*.whl >/dev/null 2>&1; then
        echo "gpu-check: installing the carried $(cd "$CARRIED/$2" && echo *.whl)"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/gpu-check-site "$CARRIED/$2"/*.whl
        export PYTHONPATH="/tmp/gpu-check-site${PYTHONPATH:+:$PYTHONPATH}"
    else
        echo "gpu-check: '$1' fails and no wheels were carried in $CARRIED/$2 (gpu_prepare.sh)"
    fi
}
install_if_missing "import wgpu" wheels
install_if_missing "from mpi4py import MPI" mpi
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1'; then
    if [ "$DRY" = "0" ] && ls "$CARRIED"/debs/*.deb >/dev/null 2>&1; then
        echo "gpu-check: unpacking the carried Vulkan loader"
        for f in "$CARRIED"/debs/*.deb; do dpkg -x "$f" /; done
        ldconfig
    else
        echo "gpu-check: no Vulkan loader here (WebGPU parts will say so)"
    fi
fi
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$ICD" ]; then
    export VK_DRIVER_FILES="$ICD"
fi
exec "$PY" scripts/gpu_check.py --python "$PY" "$@"
