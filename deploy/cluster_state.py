"""The local cluster's state file (cluster.json), its lock, and the records in it.

`ClusterState` is what `LocalCluster.up()` recorded: the host, the ZooKeeper (`ZooKeeperInfo`,
a null pid when it was given, not ours to stop) and one `BrokerProc` per broker (its ports,
PID and log dir); `to_json` / `from_json` are the file's format (deploy/cluster.py's docstring
shows it). Fields added later have defaults, so a state file from before still loads.

`StateFile(dir)` reads and saves `dir/cluster.json`. A save writes cluster.json.tmp and renames
it over the file, so a reader never sees half a file and needs no lock to read. Every
read-modify-write holds `lock()`: an exclusive fcntl.flock on cluster.json.lock beside it (the
file is opened without inheritance, so broker processes started under it do not hold it), so
two shells (`cluster kill 1` here, `cluster start 2` there) never save a state that has lost
the other's broker PID. `ClusterError` is the one error of the local cluster's modules.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from protocol.errors import UsageError

STATE_FILE = "cluster.json"
LOCK_FILE = "cluster.json.lock"  # flock'ed across every read-modify-write of the state file


class ClusterError(UsageError):
    """The local cluster cannot do what was asked (none running, a broker died at start...)."""

    name = "CLUSTER_ERROR"


@dataclass(slots=True)
class BrokerProc:
    id: int
    port: int
    pid: int
    log_dir: str
    kafka_port: int = 0  # the Kafka listener (0: none, a state file from before it existed)
    host: str = ""  # its own address (a network namespace's); "": the cluster's host
    metrics_port: int = 0  # Prometheus metrics, http://host:port/metrics (0: none)
    registry_port: int = 0  # the schema registry, http://host:port (0: none)
    listener_ports: dict[str, int] = field(default_factory=dict)  # listeners of its own: name->port
    extra_log_dirs: list[str] = field(default_factory=list)  # log.dirs after log_dir (JBOD)

    @property
    def log_dirs(self) -> list[str]:
        return [self.log_dir, *self.extra_log_dirs]

    def ports(self) -> tuple[int, ...]:
        """The ports `up` picked for it (0: not used)."""
        return (self.port, self.kafka_port, self.metrics_port, self.registry_port)

    def listening_ports(self) -> list[int]:
        """The ports its clients know: the native and Kafka listeners' (its own ones too)."""
        return [p for p in (self.port, self.kafka_port, *self.listener_ports.values()) if p]


@dataclass(slots=True)
class ZooKeeperInfo:
    connect: str
    port: int | None
    pid: int | None  # None: given to us, not ours to stop


@dataclass(slots=True)
class ClusterState:
    host: str
    session_timeout_ms: int
    zookeeper: ZooKeeperInfo
    brokers: list[BrokerProc] = field(default_factory=list)
    version: int = 1
    network: str = "loopback"  # or "netns": brokers in a network lab (deploy/netns.py)
    netlab: dict[str, Any] | None = None  # the lab's LabSpec, in netns mode
    tmpfs_mb: int = 0  # each broker's log dir on a tmpfs of this size (0: none)
    console_pid: int = 0  # the console `cluster up` started (deploy/console/launch.py)
    console_port: int = 0
    secure: bool = False  # SASL_SSL + SCRAM everywhere, authorizer on (deploy/cluster_security)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ClusterState:
        raw = json.loads(text)
        return cls(
            host=str(raw["host"]),
            session_timeout_ms=int(raw["session_timeout_ms"]),
            zookeeper=ZooKeeperInfo(**raw["zookeeper"]),
            brokers=[BrokerProc(**b) for b in raw["brokers"]],
            version=int(raw.get("version", 1)),
            network=str(raw.get("network", "loopback")),
            netlab=raw.get("netlab"),
            tmpfs_mb=int(raw.get("tmpfs_mb", 0)),
            console_pid=int(raw.get("console_pid", 0)),
            console_port=int(raw.get("console_port", 0)),
            secure=bool(raw.get("secure", False)),
        )


class StateFile:
    """cluster.json in `dir`: read, saved whole by rename, and its lock."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir
        self.path = dir / STATE_FILE

    def read(self) -> ClusterState | None:
        """The state as saved, or None when there is no state file."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        try:
            return ClusterState.from_json(text)
        except (ValueError, KeyError, TypeError) as exc:
            raise ClusterError(f"{self.path} is not a valid state file ({exc})") from None

    def save(self, state: ClusterState) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(state.to_json())
        os.replace(tmp, self.path)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the cluster's lock (fcntl.flock on LOCK_FILE), making the directory if need be."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / LOCK_FILE, "a") as lock:  # children do not inherit it (close_fds)
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
