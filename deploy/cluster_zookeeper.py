"""The local cluster's ZooKeeper: started here (deploy/zookeeper.py) or given, and stopped by PID.

`start_or_use(dir, host, given, progress)`: with a connect string given, checks that one of
its servers answers (a TCP connect, bounded) and records it with no PID (not ours to stop);
else starts a ZooKeeper under dir/zookeeper on a free port of `host` and records its PID.
`stop(pid, progress)` stops one we started (SIGTERM, then SIGKILL; deploy/zookeeper.py).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from pathlib import Path

from deploy.cluster_state import ClusterError, ZooKeeperInfo
from deploy.processes import free_port

Progress = Callable[[str], None]


def check_reachable(connect: str, timeout_s: float = 3.0) -> None:
    """Fail early, with one clear line, when no server of a ZooKeeper connect string answers."""
    hosts = connect.split("/", 1)[0]
    for item in hosts.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ClusterError(f"ZooKeeper address {item!r} is not HOST:PORT")
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout_s):
            return
    raise ClusterError(f"no ZooKeeper server answers at {hosts}")


def start_or_use(dir: Path, host: str, given: str | None, progress: Progress) -> ZooKeeperInfo:
    """The ZooKeeper given (checked), else one started under dir/zookeeper."""
    if given is not None:
        check_reachable(given)
        progress(f"using ZooKeeper at {given}")
        return ZooKeeperInfo(given, None, None)
    from deploy.zookeeper import ZooKeeperError, start_zookeeper

    port = free_port(host)
    progress(f"starting ZooKeeper on {host}:{port}")
    try:
        zk = start_zookeeper(dir / "zookeeper", port)
    except ZooKeeperError as exc:
        raise ClusterError(str(exc)) from None
    progress(f"ZooKeeper is up (pid {zk.pid})")
    return ZooKeeperInfo(zk.connect, zk.port, zk.pid)


def stop(pid: int, progress: Progress) -> None:
    from deploy.zookeeper import stop_zookeeper

    progress(f"stopping ZooKeeper (pid {pid})")
    stop_zookeeper(pid)
