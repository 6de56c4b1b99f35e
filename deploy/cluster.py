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
    broker-<id>.log       a broker's stdout and stderr, appended across restarts: `broker_log(id)`
    data/broker-<id>/     a broker's log dir (its partitions)
    zookeeper/            ZooKeeper's data dir, when this cluster started its own

cluster.json: {"version": 1, "host": "127.0.0.1", "session_timeout_ms": 6000,
               "zookeeper": {"connect": "127.0.0.1:2181", "port": 2181, "pid": 123 | null},
               "brokers": [{"id": 1, "port": 9092, "pid": 456, "log_dir": "...",
                            "kafka_port": 9093, "metrics_port": 9094,
                            "registry_port": 9095}, ...]}
Every broker has two listeners: the native port and a Kafka-protocol port (`kafka_port`), and
serves Prometheus metrics on `metrics_port` (broker/metrics.py; 0 in a state file from before)
and Confluent's Schema Registry API on `registry_port` (broker/registry/; 0: none; HTTPS with
HTTP Basic on a `--secure` cluster).
A null ZooKeeper pid means the ZooKeeper was given (not ours to stop).

Commands may run from several shells at once (`cluster kill 1` here, `cluster start 2` there):
each read-modify-write of cluster.json (up, kill, start, down) holds an exclusive flock on
cluster.json.lock beside it and reads the state afresh under it, so no command saves a state
that has lost another's broker PID. Waiting for readiness happens after the lock is released.

Processes are only ever signalled by the PIDs recorded here, and a recorded broker PID counts as
ours only while /proc/<pid>/cmdline still names its log dir (PIDs are reused); the helpers that
read /proc, pick ports and stop the console are deploy/processes.py's.

This module is the orchestration; each concern is a module of its own that takes plain inputs
(paths, settings, PIDs), none of which imports this one:

    deploy/cluster_state.py      the state file, its lock, its records, ClusterError
    deploy/cluster_brokers.py    broker processes: command line, spawn, signal, stop; ports
    deploy/cluster_config.py     the brokers' settings files (broker.toml, broker-<id>.toml)
    deploy/cluster_zookeeper.py  the ZooKeeper started here or given
    deploy/cluster_host.py       root only: a tmpfs per log dir, the network lab
    deploy/cluster_probe.py      Metadata probes of the brokers (readiness, the controller)
    deploy/cluster_security.py   secure mode; deploy/cluster_listeners.py: listeners of one's own

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

import contextlib
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploy import cluster_security, cluster_zookeeper
from deploy.cluster_brokers import (
    BrokerProcesses,
    broker_command,
    check_signal,
    free_ports,
    pick_ports,
)
from deploy.cluster_config import (
    config_path,
    own_listeners,
    write_broker_config,
    write_secure_broker_config,
)
from deploy.cluster_host import mount_tmpfs, setup_netlab, unmount_tmpfs
from deploy.cluster_listeners import Listeners, check_listeners
from deploy.cluster_probe import probe_addresses
from deploy.cluster_state import (
    STATE_FILE,
    BrokerProc,
    ClusterError,
    ClusterState,
    StateFile,
)
from deploy.netns import LabSpec, NetLab, require_root, require_tools, rewrite_connect
from deploy.processes import DEFAULT_HOST, port_in_use, process_state, stop_console
from transport.security import SecurityConfig

DEFAULT_DIR = ".odradek"
DEFAULT_SESSION_TIMEOUT_MS = 6000
READY_TIMEOUT_S = 60.0
MAX_BROKERS = 64
MAX_LOG_DIRS_PER_BROKER = 8  # `cluster up --log-dirs-per-broker` (JBOD, for testing)
NETWORKS = ("loopback", "netns")
NETNS_ROOT_MESSAGE = "--netns and --tmpfs-mb need root: run as root or leave them out"
PORT_RETRIES = 3  # `up`: fresh ports for a broker whose port was taken before it bound it

Progress = Callable[[str], None]
ReadyHook = Callable[[int, int, int], None]  # (registered, ready, expected) brokers


@dataclass(frozen=True, slots=True)
class BrokerStatus:
    id: int
    pid: int
    port: int
    state: str  # "alive" | "paused" | "dead"
    controller: bool
    kafka_port: int = 0
    metrics_port: int = 0
    registry_port: int = 0


def _refuse_if_running(
    old: ClusterState | None, brokers: BrokerProcesses, dir: Path, progress: Progress
) -> None:
    """`up` over a cluster whose brokers still run is an error; a ZooKeeper left over from a
    crashed cluster is stopped."""
    if old is None:
        return
    if any(brokers.state(b) != "dead" for b in old.brokers):
        raise ClusterError(
            f"a cluster is already running in {dir} "
            "(`odradek cluster status` to see it, `odradek cluster down` to stop it)"
        )
    zk_pid = old.zookeeper.pid
    if zk_pid is not None and process_state(zk_pid) != "dead":
        cluster_zookeeper.stop(zk_pid, progress)  # a ZooKeeper left over from a crashed cluster


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
        first_broker_id: int = 1,
        advertise_listeners: bool = False,
        log_dirs_per_broker: int = 1,
    ) -> None:
        """`broker_settings`: extra settings every broker reads (broker/config.py's names).
        `network`: "loopback" or "netns" (a namespace per broker); `tmpfs_mb`: log dirs on a
        tmpfs of this many MiB each (0: none). Both of the latter need root. `secure`:
        SASL_SSL with SCRAM-SHA-512 and ACLs (module docstring). `listeners`,
        `native_listeners`, `probe_options`: listeners of one's own (module docstring).
        `first_broker_id`: the first broker's id; `advertise_listeners`: each broker's own
        Kafka listeners are also its advertised_listeners (kafka-python's suite wants both).
        `log_dirs_per_broker`: each broker's log.dirs, data/broker-<id> then
        data/broker-<id>.dir<k> (JBOD)."""
        if network not in NETWORKS:
            raise ClusterError(f"network must be one of {', '.join(NETWORKS)}, not {network!r}")
        if tmpfs_mb < 0:
            raise ClusterError(f"tmpfs size must be positive, not {tmpfs_mb}")
        if network == "netns" or tmpfs_mb:
            require_root(NETNS_ROOT_MESSAGE)
        if network == "netns":
            require_tools()  # before ZooKeeper starts: one line naming the package to install
        if advertise_listeners and not listeners:
            raise ClusterError("advertise_listeners needs listeners of one's own")
        if not 1 <= brokers <= MAX_BROKERS:
            raise ClusterError(f"--brokers must be between 1 and {MAX_BROKERS}, not {brokers}")
        if base_port is not None and not 1024 <= base_port <= 65535 - 3 * brokers:
            raise ClusterError(f"base port {base_port} is out of range")
        if not 1 <= log_dirs_per_broker <= MAX_LOG_DIRS_PER_BROKER:
            raise ClusterError(f"log dirs per broker must be between 1 and "
                               f"{MAX_LOG_DIRS_PER_BROKER}, not {log_dirs_per_broker}")  # fmt: skip
        if session_timeout_ms < 1000:
            raise ClusterError("the ZooKeeper session timeout must be at least 1000 ms")
        check_listeners(listeners or {}, native_listeners or {})
        if secure and (listeners or native_listeners):
            raise ClusterError("a secure cluster makes its own listeners: give no others")
        self.dir = Path(dir).resolve()
        self.num_brokers = brokers
        self.first_broker_id = first_broker_id
        self.advertise_listeners = advertise_listeners
        self.log_dirs_per_broker = log_dirs_per_broker
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
        self._store = StateFile(self.dir)
        self._brokers = BrokerProcesses(self._progress)  # by PID; children of this process

    # ----- opening and saving -----------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self.dir / STATE_FILE

    @classmethod
    def open(cls, dir: Path | str = DEFAULT_DIR, progress: Progress | None = None) -> LocalCluster:
        """The cluster a previous `up()` (maybe in another process) recorded in `dir`."""
        cluster = cls(dir, progress=progress)
        state = cluster._store.read()
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

    @contextlib.contextmanager
    def _state_lock(self, reload: bool = True) -> Iterator[None]:
        """Hold the cluster's lock (deploy/cluster_state.py) and, with `reload`, take the
        state file as it is now: another process may have changed it since we read it."""
        with self._store.lock():
            if reload:
                fresh = self._store.read()
                if fresh is not None:
                    self.state = fresh
            yield

    def _current_state(self) -> ClusterState:
        """The state file as it is now (saved whole, by rename: no lock needed to read it),
        else the state in hand."""
        fresh = self._store.read()
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

    @property
    def schema_registry_urls(self) -> list[str]:
        """Every broker's schema registry URL (Confluent's `url` takes them, comma-separated)."""
        state = self._require_state()
        scheme = "https" if state.secure else "http"
        return [f"{scheme}://{b.host or state.host}:{b.registry_port}"
                for b in state.brokers if b.registry_port]  # fmt: skip

    def set_console(self, pid: int, port: int) -> None:
        """Record the console started beside this cluster (`cluster down` stops it by PID)."""
        with self._state_lock():
            state = self._require_state()
            state.console_pid, state.console_port = pid, port
            self._store.save(state)

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

    def broker_log(self, broker_id: int) -> Path:
        """The broker's log (stdout and stderr, across restarts; its levels: logger_levels)."""
        return self.dir / f"broker-{broker_id}.log"

    # ----- up --------------------------------------------------------------------------------

    def up(self) -> str:
        """Start ZooKeeper (unless given) and the brokers, wait until ready; the bootstrap."""
        self.dir.mkdir(parents=True, exist_ok=True)
        lock = contextlib.ExitStack()  # the state lock, held until every broker is recorded
        lock.enter_context(self._state_lock(reload=False))
        try:
            _refuse_if_running(self._store.read(), self._brokers, self.dir, self._progress)
            zk = cluster_zookeeper.start_or_use(
                self.dir, self.host, self.zookeeper_given, self._progress
            )
            self.state = state = ClusterState(self.host, self.session_timeout_ms, zk)
            state.network, state.tmpfs_mb = self.network, self.tmpfs_mb
            state.secure = self.secure
            ids = range(self.first_broker_id, self.first_broker_id + self.num_brokers)
            lab = None
            if self.network == "netns":

                def record(spec: dict[str, Any]) -> None:
                    state.netlab = spec
                    self._store.save(state)

                lab = setup_netlab(self.dir, ids, zk.connect, record, self._progress)
            write_broker_config(self.dir / "broker.toml", self.host, self.session_timeout_ms,
                                self.broker_settings)  # fmt: skip
            ports = pick_ports(self.host, 4 * self.num_brokers, self.base_port)
            used_ports = set(ports)  # and every listener's of one's own, as they are picked
            if self.secure:
                hosts = {i: self.host if lab is None else lab.spec.broker_ip(i) for i in ids}
                self._layout = cluster_security.prepare_cluster(
                    self.dir, hosts, zk.connect, self.session_timeout_ms, self._progress
                )
            for i, broker_id in enumerate(ids):
                log_dir = self.dir / "data" / f"broker-{broker_id}"
                n = self.num_brokers
                port, kafka_port, metrics_port = ports[i], ports[n + i], ports[2 * n + i]
                host = "" if lab is None else lab.spec.broker_ip(broker_id)
                proc = BrokerProc(broker_id, port, 0, str(log_dir), kafka_port, host, metrics_port,
                                  registry_port=ports[3 * n + i])  # fmt: skip
                proc.extra_log_dirs = [
                    f"{log_dir}.dir{k}" for k in range(1, self.log_dirs_per_broker)
                ]
                state.brokers.append(proc)
                if self.listeners or self.native_listeners:
                    extra = own_listeners(proc, host or self.host, self.listeners,
                                          self.native_listeners, used_ports, self.host)  # fmt: skip
                    if self.advertise_listeners:
                        extra["advertised_listeners"] = extra["listeners"]
                    write_broker_config(config_path(self.dir, proc, state.secure),
                                        host or self.host, self.session_timeout_ms,
                                        {**self.broker_settings, **extra})  # fmt: skip
                elif host and not self.secure:  # secure: written by _spawn, with its listeners
                    write_broker_config(config_path(self.dir, proc, state.secure), host,
                                        self.session_timeout_ms, self.broker_settings)  # fmt: skip
                mount_tmpfs(proc.id, log_dir, state.tmpfs_mb, self._progress)
                self._spawn(proc)
                self._store.save(state)
            cluster_security.write_client_properties(self._layout, self.kafka_bootstrap)
            lock.close()
            self._wait_ready_moving_taken_ports()
            # ports may have moved
            cluster_security.write_client_properties(self._layout, self.kafka_bootstrap)
        except BaseException:
            lock.close()
            if self.state is not None:
                self._progress("start-up failed; stopping what was started")
                with contextlib.suppress(Exception):
                    self.down()
            raise
        return self.bootstrap

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
                    taken = [b for b in state.brokers
                             if self._brokers.port_was_taken(b, self.broker_log(b.id))]  # fmt: skip
                    if attempt == PORT_RETRIES or not taken or state.brokers[0].listener_ports:
                        raise
                    used = {p for b in state.brokers for p in b.ports()}
                    for proc in taken:
                        fresh = free_ports(self.host, 4, used)
                        proc.port, proc.kafka_port, proc.metrics_port = fresh[:3]
                        proc.registry_port = fresh[3] if proc.registry_port else 0
                        self._progress(f"broker {proc.id}: a port was taken before it bound it; "
                                       "starting it again on new ports")  # fmt: skip
                        self._spawn(proc)
                    self._store.save(state)

    def _spawn(self, proc: BrokerProc) -> None:
        state = self._require_state()
        for log_dir in proc.log_dirs:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
        lab, connect = self.netlab, state.zookeeper.connect
        if lab is not None:
            connect = rewrite_connect(connect, lab.spec.bridge_ip)
        host = proc.host or state.host
        path = config_path(self.dir, proc, state.secure)
        scheme = "PLAINTEXT"
        if state.secure:
            scheme = "SASL_SSL"
            if self._layout is not None:  # up(): (re)written with its ports; start: as it is
                write_secure_broker_config(path, proc, host, self.session_timeout_ms,
                                           self.broker_settings, self._layout)  # fmt: skip
        cmd = broker_command(proc, connect, path, host, scheme)
        if lab is not None:
            cmd = lab.exec_prefix(proc.id) + cmd
        pid = self._brokers.spawn(proc, cmd, self.broker_log(proc.id), self.dir)
        kafka = f", Kafka port {proc.kafka_port}" if proc.kafka_port else ""
        kafka += f", metrics port {proc.metrics_port}" if proc.metrics_port else ""
        kafka += f", schema registry port {proc.registry_port}" if proc.registry_port else ""
        self._progress(f"started broker {proc.id} on {host}:{proc.port}{kafka} (pid {pid})")

    # ----- secure mode (deploy/cluster_security.py) ---------------------------------------------

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
        from client.command_config import load_command_config

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
            for broker_id in must_run:
                self._brokers.fail_if_dead(self.broker(broker_id), self.broker_log(broker_id))
            states = {b.id: self._brokers.state(b) for b in state.brokers}
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

    # ----- status ----------------------------------------------------------------------------

    def broker_states(self) -> dict[int, str]:
        """Each broker's process state by id, from /proc alone (no network)."""
        return {b.id: self._brokers.state(b) for b in self._require_state().brokers}

    def controller_id(self) -> int | None:
        """The controller as the running brokers see it (None when none answers)."""
        state = self._require_state()
        addrs = [(b.host or state.host, b.port) for b in state.brokers
                 if self._brokers.state(b) == "alive"]  # fmt: skip
        for answer in probe_addresses(addrs, timeout_ms=1000, security=self.probe_security()):
            if answer is not None and answer[1] >= 0:
                return answer[1]
        return None

    def status(self) -> list[BrokerStatus]:
        state = self._require_state()
        controller = self.controller_id()
        out = []
        for b in state.brokers:
            now = self._brokers.state(b)
            # the survivors name a dead controller until its ZooKeeper session expires
            is_controller = now != "dead" and b.id == controller
            ports = (b.kafka_port, b.metrics_port, b.registry_port)
            out.append(BrokerStatus(b.id, b.pid, b.port, now, is_controller, *ports))
        return out

    def zookeeper_state(self) -> str:
        """ "alive"/"paused"/"dead" for a ZooKeeper we started; "external" for a given one."""
        pid = self._require_state().zookeeper.pid
        return "external" if pid is None else process_state(pid)

    # ----- kill and start (deploy/cluster_brokers.py) -------------------------------------------

    def kill(self, broker_id: int, sig: str = "KILL", *, reload: bool = False) -> None:
        """Send SIGKILL, SIGTERM or SIGSTOP to one broker and wait until it takes effect.
        Under the state lock (kill writes nothing, but waits out a `start` under way);
        `reload`: take its PID from the state file then, not from the state in hand."""
        with self._state_lock(reload=reload):
            sig = check_signal(sig)  # before the broker's id, as ever
            self._brokers.kill(self.broker(broker_id), sig)

    def start(self, broker_id: int, wait: bool = True) -> None:
        """Resume a paused broker, or restart a dead one with its id, port and data."""
        with self._state_lock():
            proc = self.broker(broker_id)
            now = self._brokers.state(proc)
            if now == "alive":
                raise ClusterError(f"broker {broker_id} is already running (pid {proc.pid})")
            if now == "paused":
                self._brokers.resume(proc)
            else:
                state = self._require_state()
                if not proc.host and port_in_use(state.host, proc.port):
                    raise ClusterError(f"port {proc.port} of broker {broker_id} is taken")
                self._brokers.reap(broker_id)
                self._spawn(proc)
                self._store.save(state)
        if wait:
            self._wait_ready_again(broker_id)

    def _wait_ready_again(self, broker_id: int) -> None:
        """`wait_ready` for `start`. A restarted broker keeps its listeners' ports (clients
        know them), but while it was down another process may have bound one of its ports,
        for good or for a moment (a free-port check). A broker that exits for that starts
        again, on fresh metrics and registry ports if those are still taken (ZooKeeper and
        the state file say where they went); a listener's port still taken is an error."""
        for attempt in range(PORT_RETRIES + 1):
            try:
                self.wait_ready(must_run=[broker_id])
                return
            except ClusterError:
                with self._state_lock():
                    state = self._require_state()
                    proc = next(b for b in state.brokers if b.id == broker_id)
                    log = self.broker_log(broker_id)
                    taken = not proc.host and self._brokers.port_was_taken(proc, log)
                    if (
                        attempt == PORT_RETRIES
                        or not taken
                        or any(port_in_use(state.host, p) for p in proc.listening_ports())
                    ):
                        raise
                    fresh = free_ports(self.host, 2, {p for b in state.brokers for p in b.ports()})
                    if proc.metrics_port and port_in_use(state.host, proc.metrics_port):
                        proc.metrics_port = fresh[0]
                    if proc.registry_port and port_in_use(state.host, proc.registry_port):
                        proc.registry_port = fresh[1]
                    self._progress(f"broker {broker_id}: a port was taken while it was down; "
                                   "starting it again")  # fmt: skip
                    self._brokers.reap(broker_id)
                    self._spawn(proc)
                    self._store.save(state)

    # ----- down --------------------------------------------------------------------------------

    def down(self, purge: bool = False) -> None:
        """Stop the brokers (SIGTERM, then SIGKILL after a bound), then our ZooKeeper."""
        # no directory: no lock to take (and none made), and the check below raises
        lock = self._state_lock() if self.dir.exists() else contextlib.nullcontext()
        with lock:
            state = self.state if self.state is not None else self._store.read()
            if state is None and not (purge and self.dir.exists()):
                raise ClusterError(f"no local cluster in {self.dir}")
            if state is not None:
                self.state = state
                if state.console_pid and stop_console(state.console_pid, self.dir):
                    self._progress(f"stopped the console (pid {state.console_pid})")
                self._brokers.stop(state.brokers)
                if state.zookeeper.pid is not None:
                    cluster_zookeeper.stop(state.zookeeper.pid, self._progress)
                unmount_tmpfs((b.log_dir for b in state.brokers), state.tmpfs_mb)
                lab = self.netlab
                if lab is not None:
                    self._progress(f"tearing down network lab {lab.spec.bridge}")
                    lab.teardown()
                self.state_path.unlink(missing_ok=True)
            if purge:
                shutil.rmtree(self.dir, ignore_errors=True)
                self._progress(f"removed {self.dir}")
