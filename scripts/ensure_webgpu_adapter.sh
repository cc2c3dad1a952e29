#!/usr/bin/env sh
# Print the WebGPU adapters wgpu finds. When there are none, and apt-get is available and we
# are root, install Mesa's Vulkan software adapter (lavapipe) and look again; fail otherwise.
# Usage: scripts/ensure_webgpu_adapter.sh [python]   (default: .venv/bin/python)
set -eu
PY="${1:-.venv/bin/python}"

probe() {
    "$PY" - <<'PYEOF'
import sys

import wgpu

found = wgpu.gpu.enumerate_adapters_sync()
for a in found:
    info = a.info
    print(f"webgpu adapter: {info['device']} ({info['backend_type']}, {info['adapter_type']})")
sys.exit(0 if found else 1)
PYEOF
}

if probe; then
    exit 0
fi
echo "no WebGPU adapter found"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "installing the Vulkan software adapter (mesa-vulkan-drivers, libvulkan1)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
    if probe; then
        exit 0
    fi
fi
echo "no WebGPU adapter: install a Vulkan, Metal, D3D12 or OpenGL driver (as root on Debian:" \
     "apt-get install mesa-vulkan-drivers libvulkan1)" >&2
exit 1
