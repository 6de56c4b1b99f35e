"""LocalCluster's bookkeeping without real brokers: the state file, process states by PID, and
kill/start/down signalling, against stand-in processes whose command line names a log dir (as a
real broker's does). Real clusters are in tests/integration/test_cluster*.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.cluster import LocalCluster
from deploy.cluster_brokers import broker_command
from deploy.cluster_state import BrokerProc, ClusterError, ClusterState, ZooKeeperInfo
from deploy.processes import LISTEN_PORTS_FROM, free_port, process_state


def _wait_state(pid: int, want: str, timeout_s: float = 5.0) -> str:
    deadline = time.monotonic() + timeout_s
    state = process_state(pid)
    while state != want and time.monotonic() < deadline:
        time.sleep(0.02)
        state = process_state(pid)
    return state


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[tuple[LocalCluster, list[subprocess.Popen[bytes]]]]:
    """A recorded 'cluster' of three stand-in brokers (sleeping Pythons), given ZooKeeper."""
    cluster_dir = tmp_path / "c"
    procs: list[subprocess.Popen[bytes]] = []
    brokers = []
    for broker_id in (1, 2, 3):
        log_dir = str(cluster_dir / "data" / f"broker-{broker_id}")
        code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_DFL); time.sleep(60)"
        proc = subprocess.Popen([sys.executable, "-c", code, log_dir])
        procs.append(proc)
        brokers.append(BrokerProc(broker_id, free_port(), proc.pid, log_dir))
    state = ClusterState("127.0.0.1", 6000, ZooKeeperInfo("127.0.0.1:1/x", None, None), brokers)
    cluster_dir.mkdir()
    (cluster_dir / "cluster.json").write_text(state.to_json())
    try:
        yield LocalCluster.open(cluster_dir), procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def test_free_ports_are_below_the_ephemeral_range() -> None:
    """A broker restarts on its old port, so that port must not be one the kernel hands to
    outgoing connections meanwhile (a CI run once failed with "address already in use")."""
    low, _high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = {free_port() for _ in range(50)}
    assert all(LISTEN_PORTS_FROM <= p < low for p in ports), sorted(ports)
    assert len(ports) > 40  # spread out, so concurrent test runs pick apart
    for port in ports:  # and free
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_state_round_trip() -> None:
    state = ClusterState(
        "127.0.0.1",
        4000,
        ZooKeeperInfo("127.0.0.1:2181", 2181, 77),
        [BrokerProc(1, 9092, 100, "/d/1"), BrokerProc(2, 9093, 101, "/d/2")],
    )
    assert ClusterState.from_json(state.to_json()) == state
    state.brokers[0].extra_log_dirs = ["/d/1.dir1"]
    assert ClusterState.from_json(state.to_json()).brokers[0].log_dirs == ["/d/1", "/d/1.dir1"]


def test_a_broker_with_several_log_dirs_is_started_with_each() -> None:
    proc = BrokerProc(1, 9092, 0, "/d/1", extra_log_dirs=["/d/1.dir1", "/d/1.dir2"])
    cmd = broker_command(proc, "zk:2181", Path("/c/broker.toml"), "127.0.0.1", "PLAINTEXT")
    given = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--log-dir"]
    assert given == ["/d/1", "/d/1.dir1", "/d/1.dir2"]
    with pytest.raises(ClusterError, match="log dirs per broker must be between 1 and 8"):
        LocalCluster(Path("/c"), log_dirs_per_broker=9)


def test_open_without_state_or_with_bad_state(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="no local cluster"):
        LocalCluster.open(tmp_path)
    (tmp_path / "cluster.json").write_text("{not json")
    with pytest.raises(ClusterError, match="not a valid state file"):
        LocalCluster.open(tmp_path)


def test_constructor_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="between 1 and"):
        LocalCluster(tmp_path, brokers=0)
    with pytest.raises(ClusterError, match="session timeout"):
        LocalCluster(tmp_path, session_timeout_ms=10)
    with pytest.raises(ClusterError, match="base port"):
        LocalCluster(tmp_path, base_port=80)
    with pytest.raises(ClusterError, match="advertise_listeners needs listeners"):
        LocalCluster(tmp_path, advertise_listeners=True)


def test_process_state_alive_paused_dead() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert process_state(proc.pid) == "alive"
        os.kill(proc.pid, signal.SIGSTOP)
        assert _wait_state(proc.pid, "paused") == "paused"
        os.kill(proc.pid, signal.SIGCONT)
        assert _wait_state(proc.pid, "alive") == "alive"
        os.kill(proc.pid, signal.SIGKILL)
        assert _wait_state(proc.pid, "dead") == "dead"  # a zombie counts as dead
    finally:
        proc.kill()
        proc.wait(timeout=5)
    assert process_state(proc.pid) == "dead"


def test_status_kill_start_down_by_pid(
    fakes: tuple[LocalCluster, list[subprocess.Popen[bytes]]],
) -> None:
    cluster, procs = fakes
    assert cluster.bootstrap.count("127.0.0.1:") == 3
    status = cluster.status()
    assert [(s.id, s.pid, s.state, s.controller) for s in status] == [
        (p_id, p.pid, "alive", False) for p_id, p in zip((1, 2, 3), procs, strict=True)
    ]
    assert cluster.zookeeper_state() == "external"

    cluster.kill(2, "STOP")
    assert [s.state for s in cluster.status()] == ["alive", "paused", "alive"]
    with pytest.raises(ClusterError, match="already paused"):
        cluster.kill(2, "STOP")
    cluster.start(2, wait=False)  # resume: SIGCONT
    assert _wait_state(procs[1].pid, "alive") == "alive"
    with pytest.raises(ClusterError, match="already running"):
        cluster.start(2, wait=False)

    cluster.kill(3)  # SIGKILL by default
    assert procs[2].wait(timeout=5) == -signal.SIGKILL
    assert [s.state for s in cluster.status()] == ["alive", "alive", "dead"]
    with pytest.raises(ClusterError, match="not running"):
        cluster.kill(3)
    with pytest.raises(ClusterError, match="no broker 9"):
        cluster.kill(9)

    cluster.kill(1, "STOP")  # down() must also stop a paused broker
    cluster.down()
    assert procs[0].wait(timeout=15) == -signal.SIGTERM
    assert procs[1].wait(timeout=15) == -signal.SIGTERM
    assert not cluster.state_path.exists()


def test_a_reused_pid_is_not_ours(
    fakes: tuple[LocalCluster, list[subprocess.Popen[bytes]]],
) -> None:
    cluster, _ = fakes
    assert cluster.state is not None
    cluster.state.brokers[0].pid = os.getpid()  # alive, but its command line is not a broker's
    assert cluster.status()[0].state == "dead"
    with pytest.raises(ClusterError, match="not running"):
        cluster.kill(1)
    assert process_state(os.getpid()) == "alive"


def test_up_refuses_while_a_cluster_runs(
    fakes: tuple[LocalCluster, list[subprocess.Popen[bytes]]],
) -> None:
    cluster, _ = fakes
    again = LocalCluster(cluster.dir, brokers=1, zookeeper="127.0.0.1:1")
    with pytest.raises(ClusterError, match="already running"):
        again.up()


def test_up_fails_fast_without_a_zookeeper(tmp_path: Path) -> None:
    port = free_port()  # nobody listens here
    with pytest.raises(ClusterError, match="no ZooKeeper server answers"):
        LocalCluster(tmp_path, brokers=1, zookeeper=f"127.0.0.1:{port}/chroot").up()
    with pytest.raises(ClusterError, match="is not HOST:PORT"):
        LocalCluster(tmp_path, brokers=1, zookeeper="nohost").up()
    assert not (tmp_path / "cluster.json").exists()
