"""The `odradek` command against a real local cluster, as a user types it.

One module-scoped cluster, started with `odradek cluster up` (its own ZooKeeper, in a temporary
directory that is the working directory of every command, so that commands find the brokers
through ./.odradek/cluster.json). Tests run in file order; the last one kills and restarts
brokers and puts the cluster back as it found it.
"""

from __future__ import annotations

import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deploy.cluster import LocalCluster
from tests.fixtures.cluster import TEST_SESSION_TIMEOUT_MS, odradek_command, run_odradek

pytestmark = pytest.mark.integration

LINE = re.compile(  # labels are padded to line up (docs/cli.md): one space or more
    r"Topic: (\S+) +Partition: (\d+) +Leader: (\d+|none) +Replicas: ([\d,]*) +Isr: ([\d,]*)(.*)"
)


@dataclass(frozen=True)
class Row:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]
    marker: str


@dataclass(frozen=True)
class CliCluster:
    cwd: Path
    bootstrap: str

    def run(self, *args: str, input: str | None = None, ok: bool = True) -> str:
        done = run_odradek(*args, cwd=self.cwd, input=input)
        assert "Traceback" not in done.stderr
        if ok:
            assert done.returncode == 0, done.stderr
        return done.stdout if ok else done.stderr

    def describe(self, topic: str) -> list[Row]:
        out = self.run("topics", "describe", topic)
        rows = []
        for line in out.splitlines()[1:]:
            m = LINE.fullmatch(line)
            assert m is not None and m.group(1) == topic, line
            rows.append(
                Row(
                    int(m.group(2)),
                    None if m.group(3) == "none" else int(m.group(3)),
                    _ints(m.group(4)),
                    _ints(m.group(5)),
                    m.group(6).strip(),
                )
            )
        return rows

    def wait_describe(self, topic: str, check: object, timeout_s: float = 30.0) -> list[Row]:
        deadline = time.monotonic() + timeout_s
        while True:
            rows = self.describe(topic)
            if check(rows):  # type: ignore[operator]
                return rows
            assert time.monotonic() < deadline, f"timed out; last describe: {rows}"
            time.sleep(0.3)

    def status(self) -> dict[int, tuple[str, bool]]:
        out = self.run("cluster", "status")
        lines = out.splitlines()
        assert lines[2].startswith("kafka bootstrap.servers=127.0.0.1:"), out
        assert lines[3].split() == ["ID", "PID", "PORT", "KAFKA", "METRICS", "STATE", "ROLE"], out
        rows = {}
        for line in lines[4:]:
            fields = line.split()
            assert fields[3].isdigit(), f"broker {fields[0]} shows its Kafka port: {line}"
            assert fields[4].isdigit(), f"broker {fields[0]} shows its metrics port: {line}"
            rows[int(fields[0])] = (fields[5], fields[-1] == "controller")
        return rows


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliCluster]:
    cwd = tmp_path_factory.mktemp("cli")
    up = run_odradek(
        "cluster", "up", "--brokers", "3", "--session-timeout-ms", str(TEST_SESSION_TIMEOUT_MS),
        cwd=cwd,
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        assert "Traceback" not in up.stderr
        assert "cluster ready" in up.stderr  # progress lines
        bootstrap, kafka, console = up.stdout.strip().splitlines()
        assert re.fullmatch(r"127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}", bootstrap), up.stdout
        assert re.fullmatch(r"bootstrap.servers=127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}", kafka)
        assert re.fullmatch(r"console=http://127\.0\.0\.1:\d+/", console)  # docs/console.md
        yield CliCluster(cwd, bootstrap)
        down = run_odradek("cluster", "down", "--purge", cwd=cwd)
        assert down.returncode == 0, down.stderr
        assert not (cwd / ".odradek").exists()
    finally:
        if (cwd / ".odradek" / "cluster.json").exists():  # a failed test left it running
            LocalCluster.open(cwd / ".odradek").down()


def test_status_shows_brokers_and_one_controller(cli: CliCluster) -> None:
    status = cli.status()
    assert sorted(status) == [1, 2, 3]
    assert all(state == "alive" for state, _ in status.values())
    assert sum(is_controller for _, is_controller in status.values()) == 1
    again = run_odradek("cluster", "up", cwd=cli.cwd)
    assert again.returncode != 0
    assert "already running" in again.stderr and "Traceback" not in again.stderr


def test_topics_create_list_describe_delete(cli: CliCluster) -> None:
    out = cli.run(
        "topics", "create", "events", "--partitions", "3", "--replication-factor", "2",
        "--config", "retention.ms=60000",
    )  # fmt: skip
    assert "events" in out
    assert "events" in cli.run("topics", "list").split()
    rows = cli.wait_describe("events", lambda rows: all(r.leader is not None for r in rows))
    header = cli.run("topics", "describe", "events").splitlines()[0]
    assert header.startswith("Topic: events PartitionCount: 3 ReplicationFactor: 2 Configs:")
    assert "retention.ms=60000" in header
    # seed placement on brokers [1, 2, 3]: replica j of partition i on broker (i + j) mod 3
    assert [r.replicas for r in rows] == [[1, 2], [2, 3], [3, 1]]
    assert [r.leader for r in rows] == [1, 2, 3]
    # the ISR holds the leader; describe marks a partition whose followers are not (yet) in it
    for r in rows:
        assert r.leader in r.isr and set(r.isr) <= set(r.replicas)
        assert r.marker == ("(under-replicated)" if len(r.isr) < len(r.replicas) else "")

    err = cli.run("topics", "create", "events", "--partitions", "1", ok=False)
    assert err.startswith("odradek: error:") and "TOPIC_ALREADY_EXISTS" in err
    err = cli.run("topics", "create", "wide", "--partitions", "1", "--replication-factor", "4",
                  ok=False)  # fmt: skip
    assert "odradek: error:" in err and "INVALID_REPLICATION_FACTOR" in err

    cli.run("topics", "delete", "events")
    deadline = time.monotonic() + 30
    while "events" in cli.run("topics", "list").split():
        assert time.monotonic() < deadline, "topic not deleted in time"
        time.sleep(0.3)
    err = cli.run("topics", "describe", "events", ok=False)
    assert "UNKNOWN_TOPIC_OR_PARTITION" in err


def test_produce_and_consume_through_the_cli(cli: CliCluster) -> None:
    cli.run("topics", "create", "lines", "--partitions", "2")
    cli.wait_describe("lines", lambda rows: all(r.leader is not None for r in rows))
    records = [(f"k{i % 5}", f"value {i} é") for i in range(40)]
    lines = "".join(f"{k}:{v}\n" for k, v in records)
    cli.run("produce", "lines", "--key-separator", ":", input=lines)

    out = cli.run(
        "consume", "lines", "--from-beginning", "--max-messages", "40", "--timeout-ms", "20000",
        "--print-key", "--print-offset", "--bootstrap", cli.bootstrap,
    )  # fmt: skip
    got = [line.split("\t") for line in out.splitlines()]
    assert sorted((k, v) for _, k, v in got) == sorted(records)
    by_partition: dict[str, list[int]] = {}
    partition_of_key: dict[str, str] = {}
    for where, key, _ in got:
        partition, offset = where.split(":")
        by_partition.setdefault(partition, []).append(int(offset))
        assert partition_of_key.setdefault(key, partition) == partition  # a key keeps its partition
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))  # in order, no gaps, per partition

    cli.run("produce", "lines", "--partition", "1", "--acks", "1", input="x\ny\nz\n")
    n1 = len(by_partition.get("1", []))
    out = cli.run("consume", "lines", "--partition", "1", "--offset", str(n1 + 1),
                  "--max-messages", "2", "--timeout-ms", "20000")  # fmt: skip
    assert out.splitlines() == ["y", "z"]
    # from the end (the default): nothing new arrives, so it stops after the timeout
    assert cli.run("consume", "lines", "--timeout-ms", "1000") == ""
    # a topic that is not there, or a partition it lacks: one line at once, not a 60 s wait
    began = time.monotonic()
    err = cli.run("produce", "no-such-topic", input="x\n", ok=False)
    assert err.startswith("odradek: error:") and "UNKNOWN_TOPIC_OR_PARTITION" in err, err
    err = cli.run("produce", "lines", "--partition", "7", input="x\n", ok=False)
    assert "odradek: error:" in err and "has no partition 7" in err, err
    assert time.monotonic() - began < 30, "the producer waited for its max_block_ms"


@pytest.mark.parametrize("group", [[], ["--group", "ctrl-c"]], ids=["assigned", "group"])
def test_ctrl_c_ends_consume_with_its_summary_line_only(cli: CliCluster, group: list[str]) -> None:
    """Ctrl-C while `consume` waits in poll() (its loop runs in the main thread): exit 0, the
    summary on stderr and nothing else (no traceback, no task destroyed pending)."""
    topic = "ctrl-c-" + ("group" if group else "assigned")
    cli.run("topics", "create", topic, "--partitions", "2")
    cli.wait_describe(topic, lambda rows: all(r.leader is not None for r in rows))
    proc = subprocess.Popen(
        [*odradek_command(), "consume", topic, *group, "--from-beginning"], cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )  # fmt: skip
    try:
        cli.run("produce", topic, input="one\n")
        assert proc.stdout is not None
        readable, _, _ = select.select([proc.stdout], [], [], 60)
        assert readable, "consume printed nothing within 60 s"
        assert proc.stdout.readline() == "one\n"  # it is polling now
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert err.splitlines() == ["Processed a total of 1 messages"], err


def _offline(broker: int) -> object:
    return lambda rows: all((r.leader is None) == (r.replicas == [broker]) for r in rows)


@pytest.mark.slow  # kills or pauses brokers
def test_kill_and_start_a_broker(cli: CliCluster) -> None:
    cli.run("topics", "create", "durable", "--partitions", "3")
    rows = cli.wait_describe("durable", lambda rows: all(r.leader is not None for r in rows))
    victim = rows[0].leader
    assert victim is not None
    values = [f"r{i}" for i in range(30)]
    cli.run("produce", "durable", input="".join(v + "\n" for v in values))

    cli.run("cluster", "kill", str(victim))
    assert cli.status()[victim][0] == "dead"
    rows = cli.wait_describe("durable", _offline(victim))
    offline = [r for r in rows if r.leader is None]
    assert offline and all(r.marker == "(offline)" for r in offline)

    cli.run("cluster", "start", str(victim))
    assert cli.status()[victim][0] == "alive"
    rows = cli.wait_describe("durable", lambda rows: all(r.leader is not None for r in rows))
    assert rows[0].leader == victim
    out = cli.run("consume", "durable", "--from-beginning", "--max-messages", "30",
                  "--timeout-ms", "20000")  # fmt: skip
    assert sorted(out.splitlines()) == sorted(values)  # the restarted broker kept its data

    other = next(b for b in (1, 2, 3) if b != victim)
    cli.run("cluster", "kill", str(other), "--signal", "STOP")
    assert cli.status()[other][0] == "paused"
    cli.run("cluster", "start", str(other))
    assert cli.status()[other][0] == "alive"
