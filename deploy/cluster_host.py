"""What a root-only local cluster makes on the host: a tmpfs per log dir, and a network lab.

`mount_tmpfs(broker_id, log_dir, size_mb, progress)` mounts a tmpfs of `size_mb` MiB at a
broker's log dir before its broker first starts (a disk that can fill up); a dir that is
already a mount point is left as it is (a restart), and size 0 mounts nothing.
`unmount_tmpfs(log_dirs, size_mb)` undoes them at `down` (failures ignored: down goes on).

`setup_netlab(dir, broker_ids, zk_connect, record, progress)` plans the lab of deploy/netns.py
(a namespace per broker, a bridge, ZooKeeper's loopback port forwarded to it), hands its spec
to `record` (the caller saves it in the state file before anything is made, so `down` can
undo a half-made lab), then makes it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from deploy.cluster_state import ClusterError
from deploy.netns import NetLab, loopback_ports

Progress = Callable[[str], None]


def mount_tmpfs(broker_id: int, log_dir: Path, size_mb: int, progress: Progress) -> None:
    """Make the log dir and, with a size, mount a tmpfs there (unless one is mounted)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    if not size_mb or os.path.ismount(log_dir):
        return
    size = f"size={size_mb}m"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", size, "tmpfs", str(log_dir)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise ClusterError(f"cannot mount a tmpfs at {log_dir}: {done.stderr.strip()}")
    progress(f"broker {broker_id}: log dir on a {size_mb} MiB tmpfs")


def unmount_tmpfs(log_dirs: Iterable[str], size_mb: int) -> None:
    for log_dir in log_dirs:
        if size_mb and os.path.ismount(log_dir):
            subprocess.run(["umount", log_dir], capture_output=True, check=False)


def setup_netlab(
    dir: Path,
    broker_ids: Iterable[int],
    zk_connect: str,
    record: Callable[[dict[str, Any]], None],
    progress: Progress,
) -> NetLab:
    """Plan the lab (recorded before anything is made, so `down` can undo a half-made
    one), then make it: namespaces, veths, bridge, ZooKeeper's port forwarded."""
    lab = NetLab.plan(str(dir), broker_ids, loopback_ports(zk_connect))
    record(lab.spec.to_json())
    progress(f"network lab {lab.spec.bridge} on {lab.spec.subnet}.0/24")
    lab.setup()
    return lab
