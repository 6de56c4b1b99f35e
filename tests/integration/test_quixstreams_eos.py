"""Quix Streams with processing_guarantee="exactly-once" on a three-broker cluster, across a
SIGKILL of the app and a restart on the same state directory.

The app is tests/integration/quix_counter.py --exactly-once: a running count per key, one
output per input (its value with `total` added). Quix's exactly-once producer is transactional:
each checkpoint's outputs, changelog writes and consumed offsets commit together, and its
consumer reads read_committed. N keyed inputs are written up front; the app runs with short
checkpoints (COMMIT_INTERVAL_S) and is SIGKILLed once the group has committed a random share of
them (seeded: the seed is printed), mid-checkpoint, leaving a transaction open and its RocksDB
state ahead of what was committed. It is restarted on the same state directory and runs until
the group's committed offsets reach the input's end, then stops by SIGTERM.

It must start (issue: the app stopped at start under exactly-once), and the output topic read
read_committed must hold each input's output exactly once: per key, the inputs' `n` in the
order written and the totals 1, 2, ..., n_key, so the final total of each key is its number of
inputs (the killed run's uncommitted counts were not kept, nor counted twice).

quixstreams is imported only in the app's process (see test_quixstreams.py for why).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from client import Admin
from client.types import NewTopic
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import seeded_rng, wait_until
from tests.integration.test_exactly_once_ctp import (
    Committed,
    end_offsets,
    read_output,
    wait_decided,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,  # a third-party stream processor
    pytest.mark.skipif(
        importlib.util.find_spec("quixstreams") is None,
        reason="quixstreams is a dev dependency (pip install -e .[dev])",
    ),
]

APP = Path(__file__).with_name("quix_counter.py")
USERS = [f"user{i}" for i in range(8)]
N = 4000  # input messages
PARTITIONS = 3
COMMIT_INTERVAL_S = 0.5  # many checkpoints, so the kill lands after some and inside one
PAUSE_MS = 3  # per message: Quix counts thousands a second, the whole input before a kill
STARTED_LINE = "The application started and is now processing"
STARTED_S = 120.0  # from the app's start to its first committed checkpoint
DONE_S = 240.0  # the restarted app's run: recovery, the dead transaction's abort, the rest
TIMEOUT_S = 60.0


def inputs() -> list[tuple[str, int]]:
    """(user, n): keyed inputs, uneven per user (user i gets a share growing with i)."""
    weights = [i + 1 for i in range(len(USERS))]
    cycle = [u for u, w in zip(USERS, weights, strict=True) for _ in range(w)]
    return [(cycle[n % len(cycle)], n) for n in range(N)]


def create_input(cluster: LocalCluster, topic: str) -> None:
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 3)])

        def ready() -> bool:
            (d,) = admin.describe_topics([topic])
            return d.error_code == 0 and all(p.leader >= 0 for p in d.partitions)

        wait_until(ready, f"{topic} led", TIMEOUT_S)


def produce_inputs(kafka: str, topic: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": kafka, "acks": "all", "linger.ms": 20})
    for user, n in inputs():
        p.produce(topic, key=user.encode(), value=json.dumps({"user": user, "n": n}).encode())
        p.poll(0)
    assert p.flush(TIMEOUT_S) == 0, "the input was not all written"


class App:
    """One quix_counter.py --exactly-once process, running until SIGTERM; its log in a file."""

    def __init__(self, kafka: str, names: dict[str, str], state_dir: Path, log: Path) -> None:
        argv = [sys.executable, str(APP), "--bootstrap", kafka, "--group", names["group"],
                "--input", names["input"], "--output", names["output"], "--state-dir",
                str(state_dir), "--count", "0", "--timeout-s", "0", "--exactly-once",
                "--commit-interval-s", str(COMMIT_INTERVAL_S),
                "--pause-ms", str(PAUSE_MS)]  # fmt: skip
        self.log = log
        with log.open("ab") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=err, stderr=err)  # fmt: skip

    def running(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"the Quix app exited {self.proc.returncode}:\n{self.tail()}")
        return True

    def wait_started(self) -> None:
        """Until Quix says it processes (its SIGTERM handler is set by then)."""

        def started() -> bool:
            return self.running() and STARTED_LINE in self.log.read_text(errors="replace")

        try:
            wait_until(started, "the Quix app to start", STARTED_S)
        except AssertionError as exc:
            pytest.fail(f"{exc}:\n{self.tail()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM: Quix's graceful stop commits its checkpoint; it must exit 0."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the Quix app did not stop on SIGTERM:\n{self.tail()}")
        assert code == 0, f"the Quix app exited {code} on SIGTERM:\n{self.tail()}"

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def wait_committed(
    app: App, committed: Committed, what: str, enough: Any, timeout_s: float
) -> dict[int, int]:
    """Poll the group's committed offsets (the app must stay up) until `enough(offsets)`."""

    def check() -> dict[int, int]:
        app.running()
        got = committed.get()
        return got if got and enough(got) else {}

    try:
        found: dict[int, int] = wait_until(check, what, timeout_s)
    except AssertionError as exc:
        pytest.fail(f"{exc}: committed {committed.get()}\n{app.tail()}")
    return found


def check_outputs(records: list[tuple[bytes, bytes]]) -> dict[str, int]:
    """Per user, the outputs carry the user's inputs in order, each once, with totals 1, 2, ...;
    returns each user's final total."""
    want: dict[str, list[int]] = defaultdict(list)
    for user, n in inputs():
        want[user].append(n)
    got: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for key, value in records:
        out = json.loads(value)
        assert key.decode() == out["user"], (key, out)
        got[out["user"]].append((out["n"], out["total"]))
    for user, ns in want.items():
        seen = got.get(user, [])
        expected = [(n, i + 1) for i, n in enumerate(ns)]
        if seen != expected:
            pairs = enumerate(zip(seen, expected, strict=False))  # the common prefix's length
            first = next((i for i, (a, b) in pairs if a != b), min(len(seen), len(expected)))
            pytest.fail(
                f"{user}: {len(seen)} outputs for {len(ns)} inputs; first difference at {first}:"
                f" got {seen[first : first + 5]}, want {expected[first : first + 5]}"
            )
    assert set(got) == set(want), sorted(set(got) - set(want))
    return {user: seen[-1][1] for user, seen in got.items()}


def test_quix_exactly_once_counts_each_input_once_across_a_sigkill(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    rng = seeded_rng()
    kafka = cluster3.kafka_bootstrap
    run = uuid.uuid4().hex[:8]
    names = {"group": f"eos-{run}", "input": f"eos-in-{run}", "output": f"eos-out-{run}"}
    create_input(cluster3, names["input"])
    produce_inputs(kafka, names["input"])
    ends = end_offsets(kafka, names["input"], "read_uncommitted", PARTITIONS)
    assert sum(ends.values()) == N
    state_dir = tmp_path / "state"
    committed = Committed(kafka, names["group"], names["input"], PARTITIONS)
    kill_at = int(rng.uniform(0.2, 0.6) * N)
    try:
        first = App(kafka, names, state_dir, tmp_path / "app-1.log")
        try:
            first.wait_started()
            wait_committed(first, committed, "the app's first checkpoint",
                           lambda got: sum(got.values()) > 0, STARTED_S)  # fmt: skip
            at = wait_committed(first, committed, f"{kill_at} inputs committed",
                                lambda got: sum(got.values()) >= kill_at, DONE_S)  # fmt: skip
        finally:
            first.kill()
        print(f"SIGKILL at {sum(at.values())}/{N} committed")

        second = App(kafka, names, state_dir, tmp_path / "app-2.log")
        try:
            second.wait_started()
            wait_committed(second, committed, "every input committed after the restart",
                           lambda got: all(got.get(p, 0) >= e for p, e in ends.items()),
                           DONE_S)  # fmt: skip
        finally:
            second.stop()
    finally:
        committed.close()

    partitions = len(end_offsets_any(kafka, names["output"]))
    wait_decided(kafka, names["output"], partitions)
    totals = check_outputs(read_output(kafka, names["output"], "read_committed", partitions))
    everything = read_output(kafka, names["output"], "read_uncommitted", partitions)
    print(f"read_uncommitted: {len(everything) - N} outputs of aborted attempts")
    per_user: dict[str, int] = defaultdict(int)
    for user, _ in inputs():
        per_user[user] += 1
    assert totals == per_user


def end_offsets_any(kafka: str, topic: str) -> dict[int, int]:
    """`topic`'s high watermarks, however many partitions Quix gave it."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=kafka)
    try:
        parts = c.partitions_for_topic(topic) or set()
        ends = c.end_offsets([TopicPartition(topic, p) for p in sorted(parts)])
        return {tp.partition: o for tp, o in ends.items()}
    finally:
        c.close()
