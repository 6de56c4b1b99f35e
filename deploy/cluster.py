"""A local mini-cluster: one ZooKeeper and N broker processes under one directory.

`LocalCluster(dir).up()` starts a ZooKeeper (deploy/zookeeper.py) unless a connect string is
given, then N brokers as `python -m deploy.cli broker ...`, each in its own session so that a
Ctrl-C at the terminal that ran `cluster up` does not reach them. It records what it started in
a state file and waits, bounded and with progress lines, until every broker answers a Metadata
request that lists all the brokers and an elected controller. Later commands (`status`, `kill`,
`start`, `down`) reopen the cluster from that file with `LocalCluster.open(dir)`.

Layout of the directory:

    cluster.json          the state file (below)
    broker.toml           settings every broker reads (host, ZooKeeper session timeout)
    broker-<id>.log       a broker's stdout and stderr, appended across restarts
    data/broker-<id>/     a broker's log dir (its partitions)
    zookeeper/            ZooKeeper's data dir, when this cluster started its own

cluster.json: {"version": 1, "host": "127.0.0.1", "session_timeout_ms": 6000,
               "zookeeper": {"connect": "127.0.0.1:2181", "port": 2181, "pid": 123 | null},
               "brokers": [{"id": 1, "port": 9092, "pid": 456, "log_dir": "...",
                            "kafka_port": 9093, "metrics_port": 9094}, ...]}
Every broker has two listeners: the native port and a Kafka-protocol port (`kafka_port`), and
serves Prometheus metrics on `metrics_port` (broker/metrics.py; 0 in a state file from before).
A null ZooKeeper pid means the ZooKeeper was given (not ours to stop).

Commands may run from several shells at once (`cluster kill 1` here, `cluster start 2` there):
each read-modify-write of cluster.json (up, kill, start, down) holds an exclusive flock on
cluster.json.lock beside it and reads the state afresh under it, so no command saves a state
that has lost another's broker PID. Waiting for readiness happens after the lock is released.

Processes are only ever signalled by the PIDs recorded here, and a recorded broker PID counts as
ours only while /proc/<pid>/cmdline still names its log dir (PIDs are reused); the helpers that
read /proc, pick ports and stop the console are deploy/processes.py's.

Network mode (`network="netns"`, `cluster up --netns`, root only): each broker runs in its own
network namespace of a lab (deploy/netns.py) as `ip netns exec <ns> python -m deploy.cli
broker ...` (`ip netns exec` execs, so the recorded PID and its cmdline are the broker's). A
broker's host, advertised on both listeners, is its namespace address (`host` in its entry,
`broker_host(id)`; its settings are in broker-<id>.toml); brokers reach ZooKeeper at the lab's
bridge address, which forwards to the loopback port. The state file keeps "network" and the lab
("netlab": deploy/netns.py's LabSpec) so later commands reopen it; `cluster.netlab` is the lab
for fault injection (None on loopback); `down` tears it down. `tmpfs_mb=N` (root only) mounts
a tmpfs of N MiB at each data/broker-<id> before its broker first starts (a disk that can fill
up), unmounted by `down`; recorded as "tmpfs_mb".

Secure mode (`secure=True`, `cluster up --secure`; recorded as "secure"): every listener of
both doors is SASL_SSL with SCRAM-SHA-512, brokers included, the authorizer is on, and the
users `broker` and `admin` (super users) are made in ZooKeeper before any broker starts.
deploy/cluster_security.py makes the CA and per-broker certificates under tls/, each broker's
settings (broker-<id>.toml, 0600) and client.properties (the admin's, 0600), which this
module's own Metadata probes use too.

Listeners of one's own (`listeners=`, `native_listeners=`: {name: security protocol} per door,
deploy/cluster_listeners.py): each broker gets a port for each (its "listener_ports" in
cluster.json) and its own broker-<id>.toml naming them; the first of each door is its `port` /
`kafka_port`. Their security settings are `broker_settings`; `probe_options` (kafka-python's
names) is how this module's Metadata probes reach the first native listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deploy.cluster_listeners import Listeners, check_listeners, listener_names, listener_settings
from deploy.netns import LabSpec, NetLab, loopback_ports, require_root, rewrite_connect
from deploy.processes import (
    DEFAULT_HOST,
    cmdline,
    free_port,
    port_in_use,
    process_state,
    stop_console,
    wait_until,
)
from protocol.errors import OdradekError, UsageError
from transport.security import PLAINTEXT_CONFIG, SecurityConfig

STATE_FILE = "cluster.json"
LOCK_FILE = "cluster.json.lock"  # flock'ed across every read-modify-write of the state file
DEFAULT_DIR = ".odradek"
DEFAULT_SESSION_TIMEOUT_MS = 6000
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0  # SIGTERM, then SIGKILL after this long
KILL_TIMEOUT_S = 5.0
PROBE_TIMEOUT_MS = 2000
MAX_BROKERS = 64
NETWORKS = ("loopback", "netns")
NETNS_ROOT_MESSAGE = "--netns and --tmpfs-mb need root: run as root or leave them out"
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP}
_PROJECT_ROOT = Path(__file__).resolve().parent.parent

Progress = Callable[[str], None]
ReadyHook = Callable[[int, int, int], None]  # (registered, ready, expected) brokers


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
    listener_ports: dict[str, int] = field(default_factory=dict)  # listeners of its own: name->port


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


@dataclass(frozen=True, slots=True)
class BrokerStatus:
    id: int
    pid: int
    port: int
    state: str  # "alive" | "paused" | "dead"
    controller: bool
    kafka_port: int = 0
    metrics_port: int = 0


PORT_RETRIES = 3  # `up`: fresh ports for a broker whose port was taken before it bound it


def _check_reachable(connect: str, timeout_s: float = 3.0) -> None:
    """Fail early, with one clear line, when no server of a ZooKeeper connect string answers."""
    hosts = connect.split("/", 1)[0]
    for item in hosts.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ClusterError(f"ZooKeeper address {item!r} is not HOST:PORT")
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout_s):
            return
    raise ClusterError(f"no ZooKeeper server answers at {hosts}")


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


# ----- probing brokers over the wire -----------------------------------------------------------


async def _probe_one(
    host: str, port: int, timeout_ms: int, security: SecurityConfig | None = None
) -> tuple[set[int], int] | None:
    """(broker ids, controller id) from one broker's Metadata answer, or None if it has none."""
    from protocol.api.metadata import MetadataRequest
    from transport.connection import BrokerConnection

    try:
        conn = await BrokerConnection.connect(
            host, port, client_id="odradek-cluster", connect_timeout_ms=timeout_ms,
            security=security or PLAINTEXT_CONFIG,
        )  # fmt: skip
    except OdradekError:
        return None
    try:
        resp = await conn.send(MetadataRequest(topics=[]), timeout_ms=timeout_ms)
        return {b.node_id for b in resp.brokers}, int(resp.controller_id)
    except OdradekError:
        return None
    finally:
        await conn.close()


async def _probe_all(
    addrs: list[tuple[str, int]], timeout_ms: int, security: SecurityConfig | None
) -> list[tuple[set[int], int] | None]:
    return await asyncio.gather(*(_probe_one(h, p, timeout_ms, security) for h, p in addrs))


def probe_metadata(
    host: str, ports: list[int], timeout_ms: int = PROBE_TIMEOUT_MS,
    security: SecurityConfig | None = None,
) -> list[tuple[set[int], int] | None]:  # fmt: skip
    """Ask each broker for Metadata at once; one (broker ids, controller id) or None per port."""
    return probe_addresses([(host, p) for p in ports], timeout_ms, security)


def probe_addresses(
    addrs: list[tuple[str, int]], timeout_ms: int = PROBE_TIMEOUT_MS,
    security: SecurityConfig | None = None,
) -> list[tuple[set[int], int] | None]:  # fmt: skip
    """probe_metadata for brokers on different hosts: one answer per (host, port). `security`:
    how to reach them (a secure cluster's admin settings, `LocalCluster.probe_security`)."""
    if not addrs:
        return []
    return asyncio.run(_probe_all(addrs, timeout_ms, security))


# ----- the cluster ---------------------------------------------------------------------------


class LocalCluster:
    """ZooKeeper plus N brokers on this machine, managed by PID through a state file."""

    on_waiting: ReadyHook | None = None  # set: wait_ready reports counts here, not as lines

    def __init__(
        self,
        dir: Path | str = DEFAULT_DIR,
        brokers: int = 3,
        zookeeper: str | None = None,
        base_port: int | None = None,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        *,
        host: str = DEFAULT_HOST,
        progress: Progress | None = None,
        ready_timeout_s: float = READY_TIMEOUT_S,
        broker_settings: dict[str, int | bool | str] | None = None,
        network: str = "loopback",
        tmpfs_mb: int = 0,
        secure: bool = False,
        listeners: Listeners | None = None,
        native_listeners: Listeners | None = None,
        probe_options: dict[str, Any] | None = None,
    ) -> None:
        """`broker_settings`: extra settings every broker reads (broker/config.py's names).
        `network`: "loopback" or "netns" (a namespace per broker); `tmpfs_mb`: log dirs on a
        tmpfs of this many MiB each (0: none). Both of the latter need root. `secure`:
        SASL_SSL with SCRAM-SHA-512 and ACLs (module docstring). `listeners`,
        `native_listeners`, `probe_options`: listeners of one's own (module docstring)."""
        if network not in NETWORKS:
            raise ClusterError(f"network must be one of {', '.join(NETWORKS)}, not {network!r}")
        if tmpfs_mb < 0:
            raise ClusterError(f"tmpfs size must be positive, not {tmpfs_mb}")
        if network == "netns" or tmpfs_mb:
            require_root(NETNS_ROOT_MESSAGE)
        if not 1 <= brokers <= MAX_BROKERS:
            raise ClusterError(f"--brokers must be between 1 and {MAX_BROKERS}, not {brokers}")
        if base_port is not None and not 1024 <= base_port <= 65535 - 3 * brokers:
            raise ClusterError(f"base port {base_port} is out of range")
        if session_timeout_ms < 1000:
            raise ClusterError("the ZooKeeper session timeout must be at least 1000 ms")
        check_listeners(listeners or {}, native_listeners or {})
        if secure and (listeners or native_listeners):
            raise ClusterError("a secure cluster makes its own listeners: give no others")
        self.dir = Path(dir).resolve()
        self.num_brokers = brokers
        self.zookeeper_given = zookeeper
        self.base_port = base_port
        self.session_timeout_ms = session_timeout_ms
        self.host = host
        self.ready_timeout_s = ready_timeout_s
        self.broker_settings = dict(broker_settings or {})
        self.network = network
        self.tmpfs_mb = tmpfs_mb
        self.secure = secure
        self.listeners = dict(listeners or {})
        self.native_listeners = dict(native_listeners or {})
        self.probe_options = probe_options
        self._layout: Any = None  # cluster_security.SecureLayout, in the process that ran up()
        self._probe_security: SecurityConfig | None = None
        self._progress = progress or (lambda _line: None)
        self.state: ClusterState | None = None
        self._procs: dict[int, subprocess.Popen[bytes]] = {}  # children of this process

    # ----- opening and saving -----------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self.dir / STATE_FILE

    @classmethod
    def open(cls, dir: Path | str = DEFAULT_DIR, progress: Progress | None = None) -> LocalCluster:
        """The cluster a previous `up()` (maybe in another process) recorded in `dir`."""
        cluster = cls(dir, progress=progress)
        state = cluster._read_state()
        if state is None:
            raise ClusterError(
                f"no local cluster in {cluster.dir} (start one with `odradek cluster up`)"
            )
        cluster.state = state
        cluster.num_brokers = len(state.brokers)
        cluster.host = state.host
        cluster.session_timeout_ms = state.session_timeout_ms
        cluster.network = state.network
        cluster.tmpfs_mb = state.tmpfs_mb
        cluster.secure = state.secure
        return cluster

    def _read_state(self) -> ClusterState | None:
        try:
            text = self.state_path.read_text()
        except FileNotFoundError:
            return None
        try:
            return ClusterState.from_json(text)
        except (ValueError, KeyError, TypeError) as exc:
            raise ClusterError(f"{self.state_path} is not a valid state file ({exc})") from None

    def _save_state(self) -> None:
        assert self.state is not None
        tmp = self.state_path.with_suffix(".json.tmp")
        tmp.write_text(self.state.to_json())
        os.replace(tmp, self.state_path)

    @contextlib.contextmanager
    def _state_lock(self, reload: bool = True) -> Iterator[None]:
        """Hold the cluster's lock (fcntl.flock on LOCK_FILE) and, with `reload`, take the
        state file as it is now: another process may have changed it since we read it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / LOCK_FILE, "a") as lock:  # children do not inherit it (close_fds)
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if reload:
                    fresh = self._read_state()
                    if fresh is not None:
                        self.state = fresh
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _current_state(self) -> ClusterState:
        """The state file as it is now (saved whole, by rename: no lock needed to read it),
        else the state in hand."""
        fresh = self._read_state()
        if fresh is not None:
            self.state = fresh
        return self._require_state()

    def _require_state(self) -> ClusterState:
        if self.state is None:
            raise ClusterError(f"no local cluster in {self.dir}")
        return self.state

    @property
    def bootstrap(self) -> str:
        """Every broker as host:port, comma-separated, for clients."""
        state = self._require_state()
        return ",".join(f"{b.host or state.host}:{b.port}" for b in state.brokers)

    @property
    def kafka_bootstrap(self) -> str:
        """Every broker's Kafka listener as host:port, for Kafka clients' bootstrap.servers."""
        state = self._require_state()
        return ",".join(
            f"{b.host or state.host}:{b.kafka_port}" for b in state.brokers if b.kafka_port
        )

    def set_console(self, pid: int, port: int) -> None:
        """Record the console started beside this cluster (`cluster down` stops it by PID)."""
        with self._state_lock():
            state = self._require_state()
            state.console_pid, state.console_port = pid, port
            self._save_state()

    def broker_host(self, broker_id: int) -> str:
        """The address the broker listens on and advertises (its namespace's, in netns mode)."""
        return self.broker(broker_id).host or self._require_state().host

    @property
    def netlab(self) -> NetLab | None:
        """The network lab of a netns cluster, for faults (`isolate`, `cut_zookeeper`, `heal`
        by broker id); None for a loopback cluster."""
        state = self._require_state()
        if state.network != "netns" or state.netlab is None:
            return None
        return NetLab(LabSpec.from_json(state.netlab))

    @property
    def zookeeper_connect(self) -> str:
        return self._require_state().zookeeper.connect

    @property
    def broker_ids(self) -> list[int]:
        return [b.id for b in self._require_state().brokers]

    def broker(self, broker_id: int) -> BrokerProc:
        for b in self._require_state().brokers:
            if b.id == broker_id:
                return b
        ids = ", ".join(str(i) for i in self.broker_ids)
        raise ClusterError(f"no broker {broker_id} in this cluster (brokers: {ids})")

    # ----- up --------------------------------------------------------------------------------

    def up(self) -> str:
        """Start ZooKeeper (unless given) and the brokers, wait until ready; the bootstrap."""
        self.dir.mkdir(parents=True, exist_ok=True)
        lock = contextlib.ExitStack()  # the state lock, held until every broker is recorded
        lock.enter_context(self._state_lock(reload=False))
        try:
            self._refuse_if_running()
            zk = self._start_zookeeper()
            self.state = ClusterState(self.host, self.session_timeout_ms, zk)
            self.state.network, self.state.tmpfs_mb = self.network, self.tmpfs_mb
            self.state.secure = self.secure
            lab = self._setup_netlab(zk.connect) if self.network == "netns" else None
            self._write_broker_config()
            ports = self._ports()
            used_ports = set(ports)  # and every listener's of one's own, as they are picked
            if self.secure:
                self._prepare_security(zk.connect, lab)
            for i, broker_id in enumerate(range(1, self.num_brokers + 1)):
                log_dir = self.dir / "data" / f"broker-{broker_id}"
                n = self.num_brokers
                port, kafka_port, metrics_port = ports[i], ports[n + i], ports[2 * n + i]
                host = "" if lab is None else lab.spec.broker_ip(broker_id)
                proc = BrokerProc(broker_id, port, 0, str(log_dir), kafka_port, host, metrics_port)
                self.state.brokers.append(proc)
                if self.listeners or self.native_listeners:
                    self._own_listeners(proc, host or self.host, used_ports)
                elif host and not self.secure:  # secure: written by _spawn, with its listeners
                    self._write_broker_config(host, self._config_path(proc))
                self._mount_tmpfs(proc)
                self._spawn(proc)
                self._save_state()
            self._write_client_properties()
            lock.close()
            self._wait_ready_moving_taken_ports()
            self._write_client_properties()  # ports may have moved
        except BaseException:
            lock.close()
            if self.state is not None:
                self._progress("start-up failed; stopping what was started")
                with contextlib.suppress(Exception):
                    self.down()
            raise
        return self.bootstrap

    def _refuse_if_running(self) -> None:
        old = self._read_state()
        if old is None:
            return
        if any(self._broker_state(b) != "dead" for b in old.brokers):
            raise ClusterError(
                f"a cluster is already running in {self.dir} "
                "(`odradek cluster status` to see it, `odradek cluster down` to stop it)"
            )
        zk_pid = old.zookeeper.pid
        if zk_pid is not None and process_state(zk_pid) != "dead":
            self._stop_zookeeper(zk_pid)  # a ZooKeeper left over from a crashed cluster

    def _start_zookeeper(self) -> ZooKeeperInfo:
        if self.zookeeper_given is not None:
            _check_reachable(self.zookeeper_given)
            self._progress(f"using ZooKeeper at {self.zookeeper_given}")
            return ZooKeeperInfo(self.zookeeper_given, None, None)
        from deploy.zookeeper import ZooKeeperError, start_zookeeper

        port = free_port(self.host)
        self._progress(f"starting ZooKeeper on {self.host}:{port}")
        try:
            zk = start_zookeeper(self.dir / "zookeeper", port)
        except ZooKeeperError as exc:
            raise ClusterError(str(exc)) from None
        self._progress(f"ZooKeeper is up (pid {zk.pid})")
        return ZooKeeperInfo(zk.connect, zk.port, zk.pid)

    def _ports(self) -> list[int]:
        """Native ports, then Kafka ports, then metrics ports: one each per broker (from
        base_port: consecutive)."""
        wanted = 3 * self.num_brokers
        if self.base_port is None:
            return self._free_ports(wanted, set())
        ports = [self.base_port + i for i in range(wanted)]
        busy = [p for p in ports if port_in_use(self.host, p)]
        if busy:
            raise ClusterError(f"port(s) already in use: {', '.join(map(str, busy))}")
        return ports

    def _free_ports(self, count: int, used: set[int]) -> list[int]:
        """`count` distinct free ports, none in `used` (which gets them too)."""
        ports: list[int] = []
        while len(ports) < count:
            port = free_port(self.host)
            if port not in used:
                ports.append(port)
                used.add(port)
        return ports

    def _wait_ready_moving_taken_ports(self) -> None:
        """`wait_ready` for `up`. Ports are picked free here and bound by the broker processes
        a moment later, so another process may take one in between (any pick-then-bind has
        this race). A broker that exits for that gets fresh ports and starts again."""
        for attempt in range(PORT_RETRIES + 1):
            try:
                self.wait_ready(must_run=self.broker_ids)
                return
            except ClusterError:
                with self._state_lock():
                    state = self._require_state()
                    taken = [b for b in state.brokers if self._port_was_taken(b)]
                    if attempt == PORT_RETRIES or not taken or state.brokers[0].listener_ports:
                        raise
                    used = {
                        p for b in state.brokers for p in (b.port, b.kafka_port, b.metrics_port)
                    }
                    for proc in taken:
                        proc.port, proc.kafka_port, proc.metrics_port = self._free_ports(3, used)
                        self._progress(f"broker {proc.id}: a port was taken before it bound it; "
                                       "starting it again on new ports")  # fmt: skip
                        self._spawn(proc)
                    self._save_state()

    def _port_was_taken(self, proc: BrokerProc) -> bool:
        """Dead, its last words "address already in use" (the broker's start-up error)."""
        if self._broker_state(proc) != "dead":
            return False
        return "address already in use" in _log_tail(self.dir / f"broker-{proc.id}.log").lower()

    def _setup_netlab(self, zk_connect: str) -> NetLab:
        """Plan the lab (recorded before anything is made, so `down` can undo a half-made
        one), then make it: namespaces, veths, bridge, ZooKeeper's port forwarded."""
        state = self._require_state()
        ids = range(1, self.num_brokers + 1)
        lab = NetLab.plan(str(self.dir), ids, loopback_ports(zk_connect))
        state.netlab = lab.spec.to_json()
        self._save_state()
        self._progress(f"network lab {lab.spec.bridge} on {lab.spec.subnet}.0/24")
        lab.setup()
        return lab

    def _config_path(self, proc: BrokerProc) -> Path:
        """broker-<id>.toml for a broker with its own host (netns) or its own certificate and
        listeners (secure), else the shared file."""
        own = proc.host or self._require_state().secure or proc.listener_ports
        return self.dir / (f"broker-{proc.id}.toml" if own else "broker.toml")

    def _own_listeners(self, proc: BrokerProc, host: str, used: set[int]) -> None:
        """A port for each of the listeners given, and broker-<id>.toml naming them."""
        names = listener_names(self.listeners, self.native_listeners)
        proc.listener_ports = dict(zip(names, self._free_ports(len(names), used), strict=True))
        if self.native_listeners:
            proc.port = proc.listener_ports[next(iter(self.native_listeners))]
        if self.listeners:
            proc.kafka_port = proc.listener_ports[next(iter(self.listeners))]
        settings = listener_settings(host, self.listeners, self.native_listeners,
                                     proc.listener_ports, proc.kafka_port)  # fmt: skip
        self._write_broker_config(host, self._config_path(proc), settings)

    # ----- secure mode (deploy/cluster_security.py) ---------------------------------------------

    def _prepare_security(self, zk_connect: str, lab: NetLab | None) -> None:
        """The CA, the brokers' certificates, the passwords, and the SCRAM users in ZooKeeper."""
        from deploy import cluster_security

        ids = list(range(1, self.num_brokers + 1))
        hosts = {i: self.host if lab is None else lab.spec.broker_ip(i) for i in ids}
        self._progress("secure: making the CA and the brokers' certificates")
        self._layout = cluster_security.prepare(self.dir, ids, hosts)
        cluster_security.create_users(zk_connect, self._layout, self.session_timeout_ms)
        self._progress(
            f"secure: SCRAM users {cluster_security.BROKER_USER!r} and "
            f"{cluster_security.ADMIN_USER!r} made in ZooKeeper"
        )

    def _write_secure_broker_config(self, proc: BrokerProc, host: str) -> None:
        """broker-<id>.toml: the shared settings, its listeners and its security settings."""
        from deploy import cluster_security

        settings: dict[str, Any] = {
            "host": host,
            "zookeeper_session_timeout_ms": self.session_timeout_ms,
            **self.broker_settings,
            "native_listeners": f"{cluster_security.LISTENER}://{host}:{proc.port}",
            **self._layout.broker_settings(proc.id),
        }
        text = "# Written by `odradek cluster up --secure`: this broker's settings (0600).\n"
        text += "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
        cluster_security.write_private(self._config_path(proc), text)

    def _write_client_properties(self) -> None:
        if self._layout is None:
            return
        from deploy import cluster_security

        text = self._layout.client_properties(self.kafka_bootstrap)
        cluster_security.write_private(self._layout.properties_path, text)

    @property
    def secure_layout(self) -> Any:
        """cluster_security.SecureLayout in the process that ran a secure up(), else None."""
        return self._layout

    @property
    def client_properties_path(self) -> Path | None:
        """The admin's client.properties of a secure cluster (None: a plaintext cluster)."""
        return self.dir / "client.properties" if self._require_state().secure else None

    @property
    def security_protocol(self) -> str:
        """Every listener's security protocol, both doors (one for the whole cluster)."""
        return "SASL_SSL" if self._require_state().secure else "PLAINTEXT"

    def client_options(self) -> dict[str, Any]:
        """The admin's client settings (kafka-python's names) on a secure cluster, else {}."""
        path = self.client_properties_path
        if path is None:
            return {}
        from deploy.command_config import load_command_config

        return load_command_config(path).client_options()

    def probe_security(self) -> SecurityConfig:
        """How our own Metadata probes reach the brokers: as the admin on a secure cluster
        (read once: the TLS context and the password are kept for this object's life)."""
        if self._probe_security is None:
            options = self.probe_options
            self._probe_security = SecurityConfig.from_options(
                options if options is not None else self.client_options()
            )
        return self._probe_security

    def _mount_tmpfs(self, proc: BrokerProc) -> None:
        state = self._require_state()
        log_dir = Path(proc.log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        if not state.tmpfs_mb or os.path.ismount(log_dir):
            return
        size = f"size={state.tmpfs_mb}m"
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", size, "tmpfs", str(log_dir)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise ClusterError(f"cannot mount a tmpfs at {log_dir}: {done.stderr.strip()}")
        self._progress(f"broker {proc.id}: log dir on a {state.tmpfs_mb} MiB tmpfs")

    def _unmount_tmpfs(self, state: ClusterState) -> None:
        for b in state.brokers:
            if state.tmpfs_mb and os.path.ismount(b.log_dir):
                subprocess.run(["umount", b.log_dir], capture_output=True, check=False)

    def _write_broker_config(
        self, host: str | None = None, path: Path | None = None, extra: dict[str, str] | None = None
    ) -> None:
        """Settings shared by every broker of this cluster, in the broker's TOML format (with
        `host` and `path`: one broker's own file, in netns mode; `extra`: its listeners)."""
        text = (
            "# Written by `odradek cluster up`: settings shared by this cluster's brokers.\n"
            f'host = "{host or self.host}"\n'
            f"zookeeper_session_timeout_ms = {self.session_timeout_ms}\n"
        )
        for name, value in {**self.broker_settings, **(extra or {})}.items():
            text += f"{name} = {json.dumps(value)}\n"  # JSON scalars are TOML scalars
        (path or self.dir / "broker.toml").write_text(text)

    def _spawn(self, proc: BrokerProc) -> None:
        state = self._require_state()
        Path(proc.log_dir).mkdir(parents=True, exist_ok=True)
        lab, connect = self.netlab, state.zookeeper.connect
        if lab is not None:
            connect = rewrite_connect(connect, lab.spec.bridge_ip)
        host = proc.host or state.host
        cmd = [
            sys.executable, "-m", "deploy.cli", "broker",
            "--id", str(proc.id), "--port", str(proc.port), "--log-dir", proc.log_dir,
            "--zookeeper", connect, "--config", str(self._config_path(proc)),
        ]  # fmt: skip
        if lab is not None:
            cmd = lab.exec_prefix(proc.id) + cmd
        scheme = "PLAINTEXT"
        if state.secure:
            scheme = "SASL_SSL"
            if self._layout is not None:  # up(): (re)written with its ports; start: as it is
                self._write_secure_broker_config(proc, host)
        if proc.kafka_port and not proc.listener_ports:  # listeners of its own: in its file
            cmd += ["--listeners", f"{scheme}://{host}:{proc.kafka_port}"]
        if proc.metrics_port:
            cmd += ["--metrics-port", str(proc.metrics_port)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = f"{_PROJECT_ROOT}{os.pathsep}{path}" if path else str(_PROJECT_ROOT)
        with open(self.dir / f"broker-{proc.id}.log", "ab") as log:
            child = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                cwd=self.dir,
            )
        self._procs[proc.id] = child
        proc.pid = child.pid
        kafka = f", Kafka port {proc.kafka_port}" if proc.kafka_port else ""
        kafka += f", metrics port {proc.metrics_port}" if proc.metrics_port else ""
        self._progress(f"started broker {proc.id} on {host}:{proc.port}{kafka} (pid {child.pid})")

    # ----- waiting ---------------------------------------------------------------------------

    def wait_ready(self, timeout_s: float | None = None, must_run: Iterable[int] = ()) -> int:
        """Wait until every running broker lists every running broker and the same controller,
        itself a running broker (so after a controller dies this waits for the failover).

        Paused brokers are not asked (they cannot answer) and dead ones are not expected, but
        a broker in `must_run` that is dead is an error. Returns the controller id; raises
        ClusterError when such a broker dies or time runs out.
        """
        deadline = time.monotonic() + (timeout_s or self.ready_timeout_s)
        last_line = ""
        while True:
            state = self._current_state()  # other shells may restart brokers meanwhile
            self._fail_if_died(must_run)
            states = {b.id: self._broker_state(b) for b in state.brokers}
            alive = [b for b in state.brokers if states[b.id] == "alive"]
            answers = probe_addresses(
                [(b.host or state.host, b.port) for b in alive], security=self.probe_security()
            )
            expected = {b.id for b in alive}
            ok = [a for a in answers if a is not None and expected <= a[0] and a[1] in expected]
            controllers = {a[1] for a in ok}
            if len(ok) == len(alive) and len(controllers) == 1:
                controller = controllers.pop()
                if self.on_waiting is not None:
                    self.on_waiting(len(alive), len(alive), len(alive))
                self._progress(f"cluster ready: {len(alive)} broker(s), controller {controller}")
                return controller
            registered = max((len(a[0] & expected) for a in answers if a is not None), default=0)
            line = f"waiting for brokers: {registered}/{len(alive)} registered"
            line += f", {len(ok)}/{len(alive)} ready"
            if self.on_waiting is not None:
                self.on_waiting(registered, len(ok), len(alive))
            elif line != last_line:
                self._progress(line)
                last_line = line
            if time.monotonic() >= deadline:
                raise ClusterError(f"the cluster was not ready in time ({line})")
            time.sleep(0.2)

    def _fail_if_died(self, must_run: Iterable[int]) -> None:
        for broker_id in must_run:
            proc = self.broker(broker_id)
            if self._broker_state(proc) != "dead":
                continue
            child = self._procs.get(broker_id)
            code = child.poll() if child is not None and child.pid == proc.pid else None
            log = self.dir / f"broker-{broker_id}.log"
            tail = _log_tail(log)
            how = "died" if code is None else f"exited with code {code}"
            raise ClusterError(
                f"broker {broker_id} {how} (see {log})" + (f": {tail}" if tail else "")
            )

    # ----- status ----------------------------------------------------------------------------

    def _broker_state(self, proc: BrokerProc) -> str:
        child = self._procs.get(proc.id)
        if child is not None and child.pid == proc.pid and child.poll() is not None:
            return "dead"
        if proc.pid <= 0 or process_state(proc.pid) == "dead":
            return "dead"
        if proc.log_dir not in cmdline(proc.pid):
            return "dead"  # the PID now belongs to someone else
        return process_state(proc.pid)

    def broker_states(self) -> dict[int, str]:
        """Each broker's process state by id, from /proc alone (no network)."""
        return {b.id: self._broker_state(b) for b in self._require_state().brokers}

    def controller_id(self) -> int | None:
        """The controller as the running brokers see it (None when none answers)."""
        state = self._require_state()
        addrs = [(b.host or state.host, b.port) for b in state.brokers
                 if self._broker_state(b) == "alive"]  # fmt: skip
        for answer in probe_addresses(addrs, timeout_ms=1000, security=self.probe_security()):
            if answer is not None and answer[1] >= 0:
                return answer[1]
        return None

    def status(self) -> list[BrokerStatus]:
        state = self._require_state()
        controller = self.controller_id()
        out = []
        for b in state.brokers:
            now = self._broker_state(b)
            # the survivors name a dead controller until its ZooKeeper session expires
            is_controller = now != "dead" and b.id == controller
            out.append(
                BrokerStatus(b.id, b.pid, b.port, now, is_controller, b.kafka_port, b.metrics_port)
            )
        return out

    def zookeeper_state(self) -> str:
        """ "alive"/"paused"/"dead" for a ZooKeeper we started; "external" for a given one."""
        pid = self._require_state().zookeeper.pid
        return "external" if pid is None else process_state(pid)

    # ----- kill and start ----------------------------------------------------------------------

    def kill(self, broker_id: int, sig: str = "KILL", *, reload: bool = False) -> None:
        """Send SIGKILL, SIGTERM or SIGSTOP to one broker and wait until it takes effect.
        Under the state lock (kill writes nothing, but waits out a `start` under way);
        `reload`: take its PID from the state file then, not from the state in hand."""
        with self._state_lock(reload=reload):
            self._kill(broker_id, sig)

    def _kill(self, broker_id: int, sig: str) -> None:
        if sig.upper() not in SIGNALS:
            raise ClusterError(f"unknown signal {sig!r} (choose from KILL, TERM, STOP)")
        sig = sig.upper()
        proc = self.broker(broker_id)
        now = self._broker_state(proc)
        if now == "dead":
            raise ClusterError(f"broker {broker_id} is not running")
        if now == "paused" and sig == "STOP":
            raise ClusterError(f"broker {broker_id} is already paused")
        os.kill(proc.pid, SIGNALS[sig])
        if sig == "STOP":
            if not wait_until(lambda: self._broker_state(proc) == "paused", KILL_TIMEOUT_S):
                raise ClusterError(f"broker {broker_id} (pid {proc.pid}) did not pause")
            self._progress(f"broker {broker_id} (pid {proc.pid}) paused")
            return
        if now == "paused":
            os.kill(proc.pid, signal.SIGCONT)  # a stopped process acts on SIGTERM only once resumed
        timeout_s = KILL_TIMEOUT_S if sig == "KILL" else STOP_TIMEOUT_S
        done = wait_until(lambda: self._broker_state(proc) == "dead", timeout_s)
        if not done:
            raise ClusterError(f"broker {broker_id} (pid {proc.pid}) did not exit after SIG{sig}")
        self._reap(broker_id)
        self._progress(f"broker {broker_id} (pid {proc.pid}) stopped by SIG{sig}")

    def start(self, broker_id: int, wait: bool = True) -> None:
        """Resume a paused broker, or restart a dead one with its id, port and data."""
        with self._state_lock():
            self._start(broker_id)
        if wait:
            self.wait_ready(must_run=[broker_id])

    def _start(self, broker_id: int) -> None:
        proc = self.broker(broker_id)
        now = self._broker_state(proc)
        if now == "alive":
            raise ClusterError(f"broker {broker_id} is already running (pid {proc.pid})")
        if now == "paused":
            os.kill(proc.pid, signal.SIGCONT)
            wait_until(lambda: self._broker_state(proc) != "paused", KILL_TIMEOUT_S)
            self._progress(f"broker {broker_id} (pid {proc.pid}) resumed")
        else:
            state = self._require_state()
            if not proc.host and port_in_use(state.host, proc.port):
                raise ClusterError(f"port {proc.port} of broker {broker_id} is taken")
            self._reap(broker_id)
            self._spawn(proc)
            self._save_state()

    def _reap(self, broker_id: int) -> None:
        child = self._procs.pop(broker_id, None)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=KILL_TIMEOUT_S)

    # ----- down --------------------------------------------------------------------------------

    def down(self, purge: bool = False) -> None:
        """Stop the brokers (SIGTERM, then SIGKILL after a bound), then our ZooKeeper."""
        if not self.dir.exists():
            self._down(purge)  # raises: no cluster here
            return
        with self._state_lock():
            self._down(purge)

    def _down(self, purge: bool) -> None:
        state = self.state if self.state is not None else self._read_state()
        if state is None and not (purge and self.dir.exists()):
            raise ClusterError(f"no local cluster in {self.dir}")
        if state is not None:
            self.state = state
            if state.console_pid and stop_console(state.console_pid, self.dir):
                self._progress(f"stopped the console (pid {state.console_pid})")
            self._stop_brokers(state.brokers)
            if state.zookeeper.pid is not None:
                self._stop_zookeeper(state.zookeeper.pid)
            self._unmount_tmpfs(state)
            lab = self.netlab
            if lab is not None:
                self._progress(f"tearing down network lab {lab.spec.bridge}")
                lab.teardown()
            self.state_path.unlink(missing_ok=True)
        if purge:
            shutil.rmtree(self.dir, ignore_errors=True)
            self._progress(f"removed {self.dir}")

    def _stop_brokers(self, brokers: list[BrokerProc]) -> None:
        running = [b for b in brokers if self._broker_state(b) != "dead"]
        for b in running:
            self._progress(f"stopping broker {b.id} (pid {b.pid})")
            with contextlib.suppress(ProcessLookupError):
                os.kill(b.pid, signal.SIGTERM)
                os.kill(b.pid, signal.SIGCONT)  # a paused broker handles SIGTERM once resumed

        def all_dead() -> bool:
            return all(self._broker_state(b) == "dead" for b in running)

        if not wait_until(all_dead, STOP_TIMEOUT_S, 0.1):
            for b in running:
                if self._broker_state(b) != "dead":
                    self._progress(f"broker {b.id} ignored SIGTERM; sending SIGKILL")
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(b.pid, signal.SIGKILL)
            wait_until(all_dead, KILL_TIMEOUT_S, 0.1)
        for b in brokers:
            self._reap(b.id)

    def _stop_zookeeper(self, pid: int) -> None:
        from deploy.zookeeper import stop_zookeeper

        self._progress(f"stopping ZooKeeper (pid {pid})")
        stop_zookeeper(pid)
