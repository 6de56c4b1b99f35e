"""The leftover sweep (tests/fixtures/sweep.py) on real processes: stand-ins for brokers, a
ZooKeeper and a Spark master (with an executor in its process group) whose command lines name
what the state files record, as the real ones do.

A base temp dir whose session is gone is swept: the recorded processes that are still the
recorded ones are killed, a PID now used by another program is left alone. A dir whose session
still runs (or that has no session marker) is not touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import spark_cluster
from deploy.cluster import STATE_FILE, process_state
from tests.fixtures.cluster import wait_until
from tests.fixtures.sweep import SESSION_MARKER, sweep, sweep_dead_sessions, write_marker

pytestmark = pytest.mark.integration

SLEEP = "import time; time.sleep(120)"
# a Spark worker stand-in: a child (its executor) in its process group, whose PID it prints
SPAWN_AND_SLEEP = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(120)"
)


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                if os.getpgid(proc.pid) == proc.pid:  # a group leader: its children too
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def _leftovers(base: Path, procs: list[subprocess.Popen[bytes]]) -> dict[str, int]:
    """A cluster's, a ZooKeeper's and a Spark cluster's state files under `base`, as a killed
    run leaves them, with processes running for them; {name: pid}."""
    cluster_dir = base / "test_x0" / "cluster-0"
    log_dir = str(cluster_dir / "data" / "broker-1")
    zk_dir = (base / "zookeeper0").resolve()
    broker = subprocess.Popen([sys.executable, "-c", SLEEP, "broker", "--log-dir", log_dir])
    stranger = subprocess.Popen([sys.executable, "-c", SLEEP, "not-a-broker"])
    zk = subprocess.Popen(
        [sys.executable, "-c", SLEEP, str(zk_dir / "zoo.cfg")], start_new_session=True
    )
    procs += [broker, stranger, zk]
    cluster_dir.mkdir(parents=True)
    zk_dir.mkdir(parents=True)
    brokers = [
        {"id": 1, "port": 1, "pid": broker.pid, "log_dir": log_dir},
        {"id": 2, "port": 2, "pid": stranger.pid, "log_dir": str(cluster_dir / "data" / "b2")},
    ]
    zookeeper = {"connect": "x", "port": None, "pid": None}
    state = {"version": 1, "host": "127.0.0.1", "session_timeout_ms": 6000,
             "zookeeper": zookeeper, "brokers": brokers}  # fmt: skip
    (cluster_dir / STATE_FILE).write_text(json.dumps(state))
    (zk_dir / "zookeeper.json").write_text(json.dumps({"pid": zk.pid, "port": 1, "connect": "x"}))
    spark_dir = (base / "spark0").resolve()
    spark_dir.mkdir(parents=True)
    props = str(spark_dir / "master.conf")
    master = subprocess.Popen([sys.executable, "-c", SPAWN_AND_SLEEP, "--properties-file", props],
                              start_new_session=True, stdout=subprocess.PIPE)  # fmt: skip
    procs.append(master)
    assert master.stdout is not None
    executor = int(master.stdout.readline())  # its child, in its process group
    master_daemon = spark_cluster.Daemon("master", master.pid, 1, 2)
    spark_cluster.write_state(spark_cluster.SparkCluster(spark_dir, master_daemon))
    return {"broker": broker.pid, "stranger": stranger.pid, "zookeeper": zk.pid,
            "spark": master.pid, "executor": executor}  # fmt: skip


def _dead_session_marker(base: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=10)
    (base / SESSION_MARKER).write_text(json.dumps({"pid": gone.pid, "start_time": 1}))


def test_a_dead_sessions_leftovers_are_killed_by_pid(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    base = tmp_path / "pytest-7"
    pids = _leftovers(base, spawned)
    _dead_session_marker(base)
    killed = sweep_dead_sessions([base])
    assert sorted(line.split()[0] for line in killed) == ["Spark", "ZooKeeper", "broker"]
    # SIGKILL is delivered when the target next runs, which on a busy machine can be a few ms
    # after kill() returns: wait for the exits (a process the sweep missed sleeps for 120 s)
    by_pid = {proc.pid: proc for proc in spawned}
    for name in ("broker", "zookeeper", "spark"):
        by_pid[pids[name]].wait(timeout=10)
        assert process_state(pids[name]) == "dead"
    wait_until(lambda: process_state(pids["executor"]) == "dead", "the executor's exit", 10)
    assert process_state(pids["stranger"]) == "alive"  # its PID names another program


def test_a_running_or_unmarked_session_is_left_alone(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    running, unmarked = tmp_path / "pytest-8", tmp_path / "pytest-9"
    pids = [*_leftovers(running, spawned).values(), *_leftovers(unmarked, spawned).values()]
    write_marker(running)  # this very process: alive
    assert sweep_dead_sessions([running, unmarked]) == []
    assert all(process_state(pid) == "alive" for pid in pids)
    # the session's own end-of-run sweep takes its dir regardless of the marker
    assert len(sweep(running)) == 3
    assert os.path.exists(running / SESSION_MARKER)


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and tmpfs mounts need root")
def test_a_killed_runs_network_lab_and_tmpfs_are_undone(tmp_path: Path) -> None:
    """A netns cluster killed mid-run leaves namespaces, a bridge and tmpfs mounts in the
    kernel; the sweep undoes them from what its state file records."""
    from deploy.netns import NetLab
    from tests.fixtures.zk import free_port

    cluster_dir = tmp_path / "cluster-0"
    log_dir = cluster_dir / "data" / "broker-1"
    log_dir.mkdir(parents=True)
    lab = NetLab.plan(str(cluster_dir), [1], [free_port()])
    lab.setup()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(log_dir)], check=True)
    try:
        state = {"version": 1, "host": "127.0.0.1", "session_timeout_ms": 6000,
                 "zookeeper": {"connect": "x", "port": None, "pid": None},
                 "brokers": [{"id": 1, "port": 1, "pid": 0, "log_dir": str(log_dir)}],
                 "network": "netns", "netlab": lab.spec.to_json(), "tmpfs_mb": 1}  # fmt: skip
        (cluster_dir / STATE_FILE).write_text(json.dumps(state))
        report = sweep(tmp_path)
        assert not lab.exists()
        assert not os.path.ismount(log_dir)
        assert any(lab.spec.bridge in line for line in report)
        assert any("tmpfs" in line for line in report)
    finally:
        if os.path.ismount(log_dir):
            subprocess.run(["umount", str(log_dir)], check=False)
        lab.teardown()
