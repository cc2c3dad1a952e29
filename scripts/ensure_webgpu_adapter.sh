#!/usr/bin/env sh
# Print the WebGPU adapters wgpu finds and make sure a native one (Vulkan, Metal or D3D12) is
# among them. A machine with only Mesa's OpenGL llvmpipe adapter lacks the 'shader-f16' feature,
# so every float16 WebGPU test would skip there; when no native adapter is found, and apt-get is
# available and we are root, install Mesa's Vulkan software adapter (lavapipe) and look again.
# Fails only when no adapter at all is left; an OpenGL-only machine passes with a warning.
# Usage: scripts/ensure_webgpu_adapter.sh [python]   (default: .venv/bin/python)
set -eu
PY="${1:-.venv/bin/python}"

# Exit status: 0 a native adapter was found, 2 only OpenGL adapters, 1 none.
probe() {
    "$PY" - <<'PYEOF'
import sys

import wgpu

found = wgpu.gpu.enumerate_adapters_sync()
for a in found:
    info = a.info
    f16 = "shader-f16" if "shader-f16" in a.features else "no shader-f16"
    print(f"webgpu adapter: {info['device']} ({info['backend_type']}, {info['adapter_type']}, "
          f"{f16})")
native = [a for a in found if a.info["backend_type"] != "OpenGL"]
sys.exit(0 if native else 2 if found else 1)
PYEOF
}

status=0
probe || status=$?
if [ "$status" = "0" ]; then
    exit 0
fi
echo "no native (Vulkan, Metal or D3D12) WebGPU adapter found"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "installing the Vulkan software adapter (mesa-vulkan-drivers, libvulkan1)"
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null; then
        status=0
        probe || status=$?
        if [ "$status" = "0" ]; then
            exit 0
        fi
    else
        echo "apt-get could not install mesa-vulkan-drivers libvulkan1" >&2
    fi
fi
if [ "$status" = "2" ]; then
    echo "warning: only OpenGL WebGPU adapters; float16 WebGPU tests will skip (as root on" \
         "Debian: apt-get install mesa-vulkan-drivers libvulkan1)" >&2
    exit 0
fi
echo "no WebGPU adapter: install a Vulkan, Metal, D3D12 or OpenGL driver (as root on Debian:" \
     "apt-get install mesa-vulkan-drivers libvulkan1)" >&2
exit 1
