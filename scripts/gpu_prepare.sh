#!/usr/bin/env bash
# Fetch here what the GPU check needs on the device machine and its image lacks, into .gpu/
# (ignored by git; name it in the device command's `carry`): the wgpu wheel this project tests
# with and its dependencies for the device's Python 3.12 on x86-64 (wheels/), MPICH's wheel for
# mpi4py, used only where the image has no MPI library (mpi/), and the Vulkan loader (debs/). Needs the package registries, which the device machine cannot reach.
# Usage: scripts/gpu_prepare.sh [python]   (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-.venv/bin/python}"
OUT=.gpu
mkdir -p "$OUT/wheels" "$OUT/mpi" "$OUT/debs"
version() { "$PY" -c "import importlib.metadata as m; print(m.version('$1'))"; }
specs=()
for name in wgpu cffi pycparser rendercanvas; do specs+=("$name==$(version "$name")"); done
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$OUT/wheels" "${specs[@]}"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 -d "$OUT/mpi" "mpich==$(version mpich)"
if ! ls "$OUT"/debs/libvulkan1_*.deb >/dev/null 2>&1; then
    lists=/tmp/gpu-prepare-apt
    mkdir -p "$lists/partial"
    opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
    apt-get "${opts[@]}" update -qq
    (cd "$OUT/debs" && apt-get "${opts[@]}" download libvulkan1)
fi
ls -l "$OUT"/wheels "$OUT"/mpi "$OUT"/debs
