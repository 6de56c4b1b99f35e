"""`odradek produce` / `consume` say at once what they wait for (issue 31, point 3), through the
CLI against a real cluster, and the Python Producer and Consumer say the same.

The module's own three-broker cluster: topic `clicks` has 3 partitions of one replica each, and
the broker holding partition 1's replica is killed first, so that partition has no leader. Each
command runs as a user runs it, stderr a pipe: the `waiting:` line must come while the command
still runs (it only ends at --timeout-ms), well before the final error line. A topic whose
min.insync.replicas (3) is above its replication factor (2) is warned about at create and alter
time, and an acks=all produce to it says NOT_ENOUGH_REPLICAS at once.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from client import Admin, Consumer, NewTopic, Producer
from client.types import TopicPartition
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.errors import NetworkError, RequestTimedOutError
from tests.fixtures.cluster import (
    alive_bootstrap,
    odradek_command,
    run_odradek,
    shared_cluster,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # kills a broker of its own cluster

TOPIC = "clicks"
OFFLINE = 1  # clicks-1: its only replica's broker is killed
TIMEOUT_MS = 12_000  # --timeout-ms of the waiting commands: the line must come long before
LINE_WITHIN_S = 60.0  # how long a loaded machine may take to start a command and print it


@dataclass(frozen=True)
class OneDown:
    cluster: LocalCluster
    bootstrap: str  # the live brokers
    victim: int  # the broker that held clicks-1

    @property
    def no_leader(self) -> str:
        return f"partition {TOPIC}-{OFFLINE} has no leader: its replica {self.victim} is down"


def _leaders(bootstrap: str, topic: str) -> list[int]:
    with Admin(bootstrap) as admin:
        [described] = admin.describe_topics([topic])
    return [p.leader for p in sorted(described.partitions, key=lambda p: p.partition)]


def _all_led(bootstrap: str) -> list[int]:
    leaders = _leaders(bootstrap, TOPIC)
    return leaders if leaders and min(leaders) >= 0 else []


def _take_one_down(cluster: LocalCluster) -> OneDown:
    """clicks with every partition led, then the broker of clicks-1 killed: it has no leader."""
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 3, 1)])
    leaders = wait_until(lambda: _all_led(cluster.bootstrap), "clicks led", 30)
    victim = leaders[OFFLINE]
    cluster.kill(victim)
    bootstrap = alive_bootstrap(cluster)
    wait_until(lambda: _leaders(bootstrap, TOPIC)[OFFLINE] < 0, "clicks-1 offline", 60)
    return OneDown(cluster, bootstrap, victim)


@pytest.fixture(scope="module")
def one_down(zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneDown]:
    # one pass: the cluster goes down (by the PIDs it started) when the loop asks for more
    for cluster in shared_cluster(zk_server, tmp_path_factory, 3):
        yield _take_one_down(cluster)


class Running:
    """One `odradek` command, stdin given and closed, stderr read line by line as it comes."""

    def __init__(self, *args: str, stdin: bytes = b"") -> None:
        env = {k: v for k, v in os.environ.items() if k != "ODRADEK_BOOTSTRAP"}
        self.proc = subprocess.Popen(
            [*odradek_command(), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        assert self.proc.stdin is not None
        self.proc.stdin.write(stdin)
        self.proc.stdin.close()
        self._pending = b""
        self.lines: list[str] = []

    def line_while_running(self, prefix: str) -> str:
        """The first stderr line starting with `prefix`; the command must still be running
        when it comes (it prints a line, then waits on until its timeout)."""
        assert self.proc.stderr is not None
        deadline = time.monotonic() + LINE_WITHIN_S
        fd = self.proc.stderr.fileno()
        while True:
            for line in self.lines:
                if line.startswith(prefix):
                    assert self.proc.poll() is None, f"{line!r} came only as it ended"
                    return line
            left = deadline - time.monotonic()
            assert left > 0, f"no {prefix!r} line in {LINE_WITHIN_S} s: {self.lines}"
            readable, _, _ = select.select([fd], [], [], left)
            if readable:
                data = os.read(fd, 65536)
                assert data, f"stderr closed without a {prefix!r} line: {self.lines}"
                *whole, self._pending = (self._pending + data).split(b"\n")
                self.lines += [w.decode() for w in whole]

    def finish(self) -> tuple[int, str, list[str]]:
        """(exit code, stdout, every stderr line) once it ends."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        try:
            self.proc.wait(timeout=TIMEOUT_MS / 1000 + 60)
            out, err = self.proc.stdout.read(), self.proc.stderr.read()
        finally:
            self.close()
        lines = self.lines + (self._pending + err).decode().splitlines()
        assert not any("Traceback" in line for line in lines), lines
        return self.proc.returncode, out.decode(), lines

    def close(self) -> None:
        """Stop it if it still runs (a failed check), and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()  # by its PID: the one process this test started
            self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_waiting(*args: str, stdin: bytes = b"") -> tuple[str, int, str, list[str]]:
    """Run a command that waits: (its `waiting:` line, which came while it ran, its exit code,
    stdout, every stderr line)."""
    with Running(*args, stdin=stdin) as run:
        waiting = run.line_while_running("waiting:")
        return (waiting, *run.finish())


def test_produce_to_a_partition_without_a_leader_says_so_at_once(one_down: OneDown) -> None:
    waiting, code, _, lines = run_waiting(
        "produce", TOPIC, "--partition", str(OFFLINE), "--key-separator", ":",
        "--timeout-ms", str(TIMEOUT_MS), "--bootstrap", one_down.bootstrap, stdin=b"k:v\n",
    )  # fmt: skip
    until = f"retrying until --timeout-ms {TIMEOUT_MS} runs out"
    assert waiting == f"waiting: {one_down.no_leader}; {until}"
    assert code == 1
    assert lines.count(waiting) == 1  # piped: one line, not one per retry
    assert lines[-1] == (
        f"odradek: error: REQUEST_TIMED_OUT: delivery timed out after {TIMEOUT_MS} ms: "
        f"{one_down.no_leader}"
    )


def test_acks_all_below_min_insync_warns_at_create_and_says_so_at_once(
    one_down: OneDown,
) -> None:
    where = ["--bootstrap", one_down.bootstrap]
    created = run_odradek("topics", "create", "strict", "--partitions", "1",
                          "--replication-factor", "2", "--config", "min.insync.replicas=3",
                          *where)  # fmt: skip
    assert created.returncode == 0, created.stderr  # Kafka accepts it: a warning, no error
    warning = (
        "warning: min.insync.replicas=3 is above the replication factor 2 of topic strict: "
        "every produce with acks=all to it will be refused (NOT_ENOUGH_REPLICAS)"
    )
    assert created.stderr.splitlines() == [warning]
    altered = run_odradek("topics", "alter-config", "strict", "--set", "min.insync.replicas=4",
                          *where)  # fmt: skip
    assert altered.returncode == 0, altered.stderr
    assert altered.stderr.splitlines() == [warning.replace("=3", "=4")]
    fine = run_odradek("topics", "alter-config", "strict", "--set", "min.insync.replicas=3",
                       "--validate-only", *where)  # fmt: skip
    assert fine.stderr.splitlines() == [warning]  # what it would be, said before it is made
    wait_until(lambda: _leaders(one_down.bootstrap, "strict")[0] >= 0, "strict-0 led", 30)

    waiting, code, _, lines = run_waiting(
        "produce", "strict", "--acks", "all", "--timeout-ms", str(TIMEOUT_MS), *where,
        stdin=b"v\n",
    )  # fmt: skip
    assert waiting.startswith("waiting: NOT_ENOUGH_REPLICAS: acks=all refused: strict-0: ISR ")
    assert "is below min.insync.replicas 4, more than its 2 replica(s)" in waiting
    assert waiting.endswith(f"; retrying until --timeout-ms {TIMEOUT_MS} runs out")
    assert code == 1
    assert lines[-1].startswith(
        f"odradek: error: REQUEST_TIMED_OUT: delivery timed out after {TIMEOUT_MS} ms: "
        "NOT_ENOUGH_REPLICAS: acks=all refused: strict-0: ISR "
    )


def test_consume_from_a_partition_without_a_leader_says_so(one_down: OneDown) -> None:
    waiting, code, out, lines = run_waiting(
        "consume", TOPIC, "--partition", str(OFFLINE), "--timeout-ms", str(TIMEOUT_MS),
        "--bootstrap", one_down.bootstrap,
    )  # fmt: skip
    until = f"polling until --timeout-ms {TIMEOUT_MS} passes without a record"
    assert waiting == f"waiting: {one_down.no_leader}; {until}"
    assert (code, out) == (1, "")
    assert lines[-2:] == [
        "Processed a total of 0 messages",
        f"odradek: error: LEADER_NOT_AVAILABLE: {one_down.no_leader}; nothing was read from it",
    ]


def test_the_python_clients_say_why_they_wait(one_down: OneDown) -> None:
    tp = TopicPartition(TOPIC, OFFLINE)
    with Producer(one_down.bootstrap, delivery_timeout_ms=20_000) as producer:
        sent = producer.send(TOPIC, b"v", partition=OFFLINE)
        assert wait_until(lambda: producer.waiting(), "the producer's reason", 30) == {
            tp: one_down.no_leader
        }
        assert not sent.done()
        led = next(p for p in range(3) if p != OFFLINE)
        producer.send(TOPIC, b"v", partition=led).get(timeout=30)
        assert producer.waiting() == {tp: one_down.no_leader}  # only the partition waiting
        with pytest.raises(RequestTimedOutError) as expired:
            sent.get(timeout=60)
        assert str(expired.value).endswith(f"after 20000 ms: {one_down.no_leader}")
        assert producer.waiting() == {}

    with Consumer(one_down.bootstrap, request_timeout_ms=2000) as consumer:
        consumer.assign([tp])
        consumer.poll(timeout_ms=500)
        assert wait_until(lambda: consumer.poll(timeout_ms=100) == {} and consumer.waiting(),
                          "the consumer's reason", 30) == {tp: one_down.no_leader}  # fmt: skip
        with pytest.raises(RequestTimedOutError) as no_position:
            consumer.position(tp)
        assert str(no_position.value).endswith(f"within the request timeout: {one_down.no_leader}")
        with pytest.raises(NetworkError) as no_offsets:
            consumer.end_offsets([tp])
        assert str(no_offsets.value).endswith(one_down.no_leader)
