"""The local cluster used from several shells at once: `odradek cluster kill|start` run side by
side on different brokers of one cluster keep every broker's PID in cluster.json (the state
file is locked across each read-modify-write), and client commands find that cluster with
`--dir D`, before or after the command.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from deploy.cluster import LocalCluster
from tests.fixtures.cluster import CLI_TIMEOUT_S, ClusterFactory, odradek_command, run_odradek

pytestmark = pytest.mark.integration


def _side_by_side(cluster_dir: Path, *commands: tuple[str, int]) -> None:
    """Run `odradek cluster ACTION ID --dir D` for every (ACTION, ID) at once; all must pass."""
    procs = [
        subprocess.Popen(
            [*odradek_command(), "cluster", action, str(broker_id), "--dir", str(cluster_dir)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for action, broker_id in commands
    ]
    for (action, broker_id), proc in zip(commands, procs, strict=True):
        _, err = proc.communicate(timeout=CLI_TIMEOUT_S)
        assert proc.returncode == 0, f"cluster {action} {broker_id}: {err}"
        assert "Traceback" not in err


def _status(cluster_dir: Path) -> dict[int, tuple[int, str]]:
    done = run_odradek("--dir", str(cluster_dir), "cluster", "status", "-o", "json")
    assert done.returncode == 0, done.stderr
    return {b["id"]: (b["pid"], b["state"]) for b in json.loads(done.stdout)["brokers"]}


def _kill_strays(cluster_dir: Path) -> None:
    """Brokers whose PID a broken lock lost run unrecorded: stop them by their command line,
    which names a log dir under this test's own directory."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "broker" in args and any(a.startswith(str(cluster_dir)) for a in args):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)


@pytest.mark.slow  # kills or pauses brokers
def test_concurrent_kills_and_starts_keep_every_pid(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(3)
    where = cluster.dir
    try:
        _side_by_side(where, ("kill", 1), ("kill", 2))
        _side_by_side(where, ("start", 1), ("start", 2), ("kill", 3))
        _side_by_side(where, ("start", 3))
        status = _status(where)
        assert {b: state for b, (_, state) in status.items()} == {
            1: "alive",
            2: "alive",
            3: "alive",
        }
        recorded = LocalCluster.open(where)
        assert recorded.broker_states() == {1: "alive", 2: "alive", 3: "alive"}
        for b in recorded.broker_ids:  # the PID shown is the running broker of that log dir
            pid = status[b][0]
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            assert recorded.broker(b).log_dir in args
        # client commands find this cluster by --dir, before or after the command
        for argv in (
            ["--dir", str(where), "topics", "list"],
            ["topics", "list", "--dir", str(where)],
        ):
            done = run_odradek(*argv)
            assert done.returncode == 0, done.stderr
    finally:
        _kill_strays(where)
