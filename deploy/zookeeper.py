"""Start and stop a standalone ZooKeeper server with `java`, by PID (never systemd).

How it works: `start_zookeeper(data_dir, port)` writes our own `zoo.cfg` into `data_dir` (data in
`data_dir/data`, client port bound to 127.0.0.1, admin server off, `ruok`/`srvr` four-letter words
allowed, a short tick so small session timeouts are allowed), launches
`java ... org.apache.zookeeper.server.quorum.QuorumPeerMain data_dir/zoo.cfg` in its own session
(`start_new_session=True`, so a Ctrl-C in the caller's terminal does not reach it) with stdout
and stderr going to `data_dir/zookeeper.log`, then polls `ruok` until the server answers `imok`
(bounded by `timeout_s`) and opens and closes one session to warm the server up. It records
`{"pid", "port", "connect"}` in `data_dir/zookeeper.json` so another process (the CLI's
`cluster status` / `cluster down`) can reattach with `read_state`.

The classpath is Debian's `zookeeper` package: `/usr/share/java/zookeeper.jar` (its manifest
pulls in its dependencies) plus `slf4j-simple` so the server's warnings reach the log file. The
JVM flags keep start-up short: a small serial-GC heap, class-data sharing, and the C1 compiler
only (measured on the 2-core dev box: ~0.35 s from exec to `imok`, against ~0.46 s without;
~0.8-1.5 s until the warm-up session is through, after which clients connect in ~15 ms).

`stop_zookeeper(pid)` sends SIGTERM to the server's process group, waits up to a bound, then
SIGKILLs it. Nothing here is a command-line entry point; the local cluster calls these
(deploy/cluster_zookeeper.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
JAVA = "java"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
JVM_FLAGS = ("-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto", "-XX:TieredStopAtLevel=1")
STATE_FILE = "zookeeper.json"
LOG_FILE = "zookeeper.log"
# tickTime bounds the session timeouts a client may ask for: [2, 20] ticks by default; we set
# the range explicitly so local clusters can use 1-4 s sessions.
TICK_MS = 250
MIN_SESSION_TIMEOUT_MS = 1000
MAX_SESSION_TIMEOUT_MS = 60_000


# Servers started by this process, by pid: kept so that the Popen objects are not garbage
# collected while the server runs (a ResourceWarning) and so that stop_zookeeper can reap them.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class ZooKeeperError(Exception):
    """ZooKeeper could not be started (missing java/jar, port taken, no answer in time)."""


@dataclass(frozen=True, slots=True)
class ZkProcess:
    pid: int
    port: int
    data_dir: Path

    @property
    def connect(self) -> str:
        """The connect string clients use (no chroot)."""
        return f"127.0.0.1:{self.port}"


def render_config(data_dir: Path, port: int) -> str:
    """The zoo.cfg text for a standalone server on 127.0.0.1:port keeping data in data_dir/data."""
    return "\n".join(
        [
            f"tickTime={TICK_MS}",
            f"dataDir={data_dir / 'data'}",
            f"clientPort={port}",
            "clientPortAddress=127.0.0.1",
            f"minSessionTimeout={MIN_SESSION_TIMEOUT_MS}",
            f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
            "",
        ]
    )


def java_command(config_path: Path) -> list[str]:
    classpath = f"{ZOOKEEPER_JAR}:{SLF4J_SIMPLE_JAR}"
    return [
        JAVA,
        *JVM_FLAGS,
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-cp",
        classpath,
        MAIN_CLASS,
        str(config_path),
    ]


def start_zookeeper(data_dir: Path, port: int, timeout_s: float = 20.0) -> ZkProcess:
    """Start a server on 127.0.0.1:port with its files under data_dir; return once it answers.

    Raises ZooKeeperError (after killing the process) if it does not answer within timeout_s.
    """
    if not ZOOKEEPER_JAR.exists():
        raise ZooKeeperError(f"{ZOOKEEPER_JAR} is missing: run `make zookeeper`")
    if _port_taken(port):
        raise ZooKeeperError(f"port {port} on 127.0.0.1 is already in use")
    data_dir = data_dir.resolve()
    (data_dir / "data").mkdir(parents=True, exist_ok=True)
    config_path = data_dir / "zoo.cfg"
    config_path.write_text(render_config(data_dir, port))
    with open(data_dir / LOG_FILE, "ab") as log:
        proc = _spawn(config_path, log, data_dir)
    _CHILDREN[proc.pid] = proc
    zk = ZkProcess(proc.pid, port, data_dir)
    deadline = time.monotonic() + timeout_s
    while not is_serving(port):
        if proc.poll() is not None:
            _CHILDREN.pop(proc.pid, None)
            raise ZooKeeperError(
                f"ZooKeeper exited with {proc.returncode}; see {data_dir / LOG_FILE}"
            )
        if time.monotonic() > deadline:
            stop_zookeeper(proc.pid)
            raise ZooKeeperError(
                f"ZooKeeper did not answer on port {port} within {timeout_s} s; "
                f"see {data_dir / LOG_FILE}"
            )
        time.sleep(0.02)
    _warm_up(port, deadline - time.monotonic())
    write_state(zk)
    return zk


def _spawn(config_path: Path, log: IO[bytes], data_dir: Path) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            java_command(config_path),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=data_dir,
        )
    except FileNotFoundError:
        raise ZooKeeperError(f"{JAVA!r} not found: ZooKeeper needs a Java runtime") from None


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the server does: connections of an earlier server in TIME_WAIT do not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _warm_up(port: int, timeout_s: float) -> None:
    """Open and close one session by hand (ZooKeeper's jute wire format), best effort.

    A fresh server answers `ruok` before it accepts sessions (it closes their connections at
    first), and its first session is slow (~0.4 s of class loading, far more on a busy 2-core
    box: enough to time out a client with a 2 s session). Paying for it here, retrying until a
    session opens, keeps the first real client quick.
    """
    # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd (len + bytes),
    # readOnly; then a closeSession request header (xid 1, type -11). Each framed by length.
    connect = struct.pack(">iqiqi16s?", 0, 0, 2000, 0, 16, bytes(16), False)
    close = struct.pack(">ii", 1, -11)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
                sock.sendall(struct.pack(">i", len(connect)) + connect)
                _read_frame(sock)
                sock.sendall(struct.pack(">i", len(close)) + close)
                _read_frame(sock)
                return
        except (OSError, struct.error, ValueError):
            time.sleep(0.02)


def _read_frame(sock: socket.socket) -> bytes:
    header = _read_exactly(sock, 4)
    (length,) = struct.unpack(">i", header)
    if not 0 <= length <= 1 << 20:
        raise ValueError(f"unexpected frame length {length}")
    return _read_exactly(sock, length)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ValueError("connection closed")
        data += chunk
    return data


def is_serving(port: int, timeout_s: float = 0.5) -> bool:
    """True when the server on 127.0.0.1:port answers `ruok` with `imok`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
            sock.sendall(b"ruok")
            return sock.recv(16) == b"imok"
    except OSError:
        return False


def is_alive(pid: int) -> bool:
    """True when a process with this pid exists (and is not a zombie we can reap)."""
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _CHILDREN[pid]
        return False
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_zookeeper(pid: int, timeout_s: float = 5.0) -> None:
    """SIGTERM the server (its whole process group), SIGKILL it after timeout_s. Idempotent."""
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while is_alive(pid):
        if time.monotonic() > deadline:
            _signal_group(pid, signal.SIGKILL)
            deadline = time.monotonic() + timeout_s
        time.sleep(0.02)


def kill_zookeeper(pid: int, timeout_s: float = 5.0) -> None:
    """SIGKILL the server at once (a crash, for fault tests) and wait until it is gone."""
    _signal_group(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # The server leads its own session (start_new_session), so its pgid is its pid; fall back to
    # the single process if it is not a group leader (a pid from an old state file).
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def write_state(zk: ZkProcess) -> None:
    state = {"pid": zk.pid, "port": zk.port, "connect": zk.connect}
    tmp = zk.data_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(zk.data_dir / STATE_FILE)


def read_state(data_dir: Path) -> ZkProcess | None:
    """Reattach: the server recorded in data_dir, or None if there is none or it is not running."""
    try:
        state = json.loads((data_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    zk = ZkProcess(int(state["pid"]), int(state["port"]), data_dir.resolve())
    return zk if is_alive(zk.pid) else None
