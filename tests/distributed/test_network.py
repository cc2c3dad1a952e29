"""Two ranks in two network namespaces joined by a veth pair: the collectives' bytes really
cross a network interface (TCP), as between two machines.

Needs root and iproute2's ``ip`` (CI runs as root); skipped otherwise. ``mpiexec`` runs in
the first namespace and starts each host's proxy through a launcher script that enters the
host's namespace (``ip netns exec``) instead of ssh. Both namespaces share one kernel, so UCX
would choose shared memory between them: ``UCX_TLS=tcp,self`` makes it take the network, as
it must between machines.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpi_ranks import run_ranks

HOSTS = ("10.199.0.1", "10.199.0.2")
PAYLOAD = 4 << 20  # bytes of each rank's tensor


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)


def tx_bytes(namespace: str, device: str) -> int:
    out = subprocess.run(["ip", "-n", namespace, "-s", "-j", "link", "show", device],
                         check=True, capture_output=True, text=True, timeout=10).stdout
    return int(json.loads(out)[0]["stats64"]["tx"]["bytes"])


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    """Two fresh namespaces ``(a, b)`` whose veth ends ``va``/``vb`` hold ``HOSTS``."""
    if shutil.which("ip") is None:
        pytest.skip("iproute2's ip is not installed")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tag = uuid.uuid4().hex[:8]
    a, b = f"burnpy-a-{tag}", f"burnpy-b-{tag}"
    try:
        ip("netns", "add", a)
        ip("netns", "add", b)
    except subprocess.CalledProcessError as exc:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        pytest.skip(f"cannot create network namespaces here: {exc.stderr.strip()}")
    try:
        ip("link", "add", f"va{tag}", "type", "veth", "peer", "name", f"vb{tag}")
        for ns, end, host in ((a, f"va{tag}", HOSTS[0]), (b, f"vb{tag}", HOSTS[1])):
            ip("link", "set", end, "netns", ns)
            ip("-n", ns, "addr", "add", f"{host}/24", "dev", end)
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "link", "set", end, "up")
        yield a, b
    finally:  # deleting a namespace deletes the veth end inside it, and so the pair
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def test_two_ranks_communicate_across_a_veth_pair(namespaces: tuple[str, str],
                                                 tmp_path: Path) -> None:
    a, b = namespaces
    launcher = tmp_path / "enter-namespace.sh"
    # hydra's ssh launcher runs: <launcher> -x HOST "proxy command"
    launcher.write_text(
        "#!/bin/sh\nhost=$2; shift 2\n"
        f'case $host in {HOSTS[0]}) ns={a};; {HOSTS[1]}) ns={b};; '
        '*) echo "unknown host $host" >&2; exit 1;; esac\n'
        'exec ip netns exec "$ns" sh -c "$*"\n', encoding="utf-8")
    launcher.chmod(0o755)
    tag = a.rsplit("-", 1)[1]
    before = tx_bytes(a, f"va{tag}"), tx_bytes(b, f"vb{tag}")
    run = run_ranks("network.py", prefix=("ip", "netns", "exec", a), timeout=60,
                    launcher_args=("-localhost", HOSTS[0], "-launcher", "ssh",
                                   "-launcher-exec", str(launcher),
                                   "-hosts", ",".join(HOSTS), "-ppn", "1"),
                    env={"UCX_TLS": "tcp,self"})
    assert run.returncode == 0, run.stderr
    for got in run.results:
        assert got == {"all_reduce": (3.0, 3.0), "broadcast": (2.0, 2.0), "size": 2}
    sent = tx_bytes(a, f"va{tag}") - before[0], tx_bytes(b, f"vb{tag}") - before[1]
    assert sent[0] >= PAYLOAD and sent[1] >= 2 * PAYLOAD, sent  # rank 1 also broadcast

