"""Processes by PID, through /proc, and the ports the local cluster's processes listen on.

The local cluster (deploy/cluster.py) and the console it starts beside it (deploy/console/
launch.py) both signal processes only by PIDs they recorded, and check /proc/<pid>/cmdline
before each signal (PIDs are reused). These helpers sit below both: `cluster down` stops the
console (`stop_console`) and the console's launcher imports the cluster, so neither imports
the other for them.

- `process_state(pid)`: "alive", "paused" or "dead", from /proc/<pid>/stat.
- `cmdline(pid)`: the process's arguments (read again while the kernel shows none).
- `free_port(host)`, `port_in_use(host, port)`: listening ports below the ephemeral range.
- `wait_until(check, timeout_s)`: poll a condition with a deadline.
- `is_console(pid, dir)`, `stop_console(pid, dir)`: the console of a cluster directory, and
  SIGTERM then SIGKILL for it; `STARTED_CONSOLES` keeps the consoles this process started so
  that they are reaped.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"


def process_state(pid: int) -> str:
    """ "alive", "paused" (stopped by a signal: state T/t) or "dead" (gone, or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "dead"
    state = stat.rpartition(")")[2].split()[0]
    if state in ("Z", "X", "x"):
        return "dead"
    return "paused" if state in ("T", "t") else "alive"


def cmdline(pid: int) -> list[str]:
    """The process's arguments. Right after exec (and while exiting) the kernel may show an empty
    command line for a moment, so an empty one is read again a few times."""
    for _ in range(100):
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return []
        if raw or process_state(pid) == "dead":
            return raw.decode(errors="replace").split("\0")
        time.sleep(0.001)
    return []


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LISTEN_PORTS_FROM = 10_000  # listening ports are picked from here to the ephemeral range


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port nobody uses right now, below the kernel's ephemeral range. A killed broker is
    restarted on its old port; a port from that range (what binding port 0 gives) may meanwhile
    have become the local end of some client's outgoing connection, and the restart fails
    with "address already in use". Ports below the range are never handed out that way."""
    try:
        low = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    pick = random.SystemRandom()  # not the seeded module state: concurrent runs pick apart
    for _ in range(200 if low > LISTEN_PORTS_FROM + 1000 else 0):
        port = pick.randrange(LISTEN_PORTS_FROM, low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """True when something listens on the port. SO_REUSEADDR, as the broker's server sets it,
    so connections of a killed broker still in TIME_WAIT do not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def wait_until(check: Callable[[], bool], timeout_s: float, step_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step_s)


# ----- the console `cluster up` starts (deploy/console/launch.py) ------------------------------

# consoles this process started, by PID: kept so that they are reaped (and Popen does not warn
# that it was dropped while its child runs); a few per process at most
STARTED_CONSOLES: dict[int, subprocess.Popen[bytes]] = {}


def is_console(pid: int, cluster_dir: Path) -> bool:
    """True while `pid` is a console of `cluster_dir` (not a reused PID)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return False
    return "console" in args and str(cluster_dir) in args


def stop_console(pid: int, cluster_dir: Path, timeout_s: float = 5.0) -> bool:
    """SIGTERM the console (SIGKILL after `timeout_s`); False when it was not running."""
    if pid <= 0 or not is_console(pid, cluster_dir):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while process_state(pid) != "dead" and time.monotonic() < deadline:
        time.sleep(0.05)
    if process_state(pid) != "dead":
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    child = STARTED_CONSOLES.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=timeout_s)
    return True
