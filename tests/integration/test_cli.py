"""The `odradek` command against a real local cluster, as a user types it.

One module-scoped cluster, started with `odradek cluster up` (its own ZooKeeper, in a temporary
directory that is the working directory of every command, so that commands find the brokers
through ./.odradek/cluster.json). Tests run in file order; the last one kills and restarts
brokers and puts the cluster back as it found it.
"""

from __future__ import annotations

import json
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
        header = ["ID", "PID", "PORT", "KAFKA", "METRICS", "REGISTRY", "STATE", "ROLE", "LOG_DIRS"]
        assert lines[3].startswith("schema registry http://127.0.0.1:"), out
        assert lines[4].split() == header, out
        rows = {}
        for line in lines[5:]:
            fields = line.split()
            assert fields[3].isdigit(), f"broker {fields[0]} shows its Kafka port: {line}"
            assert fields[4].isdigit(), f"broker {fields[0]} shows its metrics port: {line}"
            assert fields[5].isdigit(), f"broker {fields[0]} shows its registry port: {line}"
            assert fields[8].endswith(f"broker-{fields[0]}"), f"its log dir: {line}"
            rows[int(fields[0])] = (fields[6], fields[7] == "controller")
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
        bootstrap, kafka, registry, console = up.stdout.strip().splitlines()
        assert re.fullmatch(r"127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}", bootstrap), up.stdout
        assert re.fullmatch(r"bootstrap.servers=127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}", kafka)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+(,http://127\.0\.0\.1:\d+){2}", registry)
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

    cli.run("topics", "create", "spare", "--partitions", "1")
    done = run_odradek("topics", "delete", "events", "nosuch", "spare", cwd=cli.cwd)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stdout.splitlines() == ["Deleted topic events.", "Deleted topic spare."]
    assert done.stderr.splitlines() == [
        "odradek: error: UNKNOWN_TOPIC_OR_PARTITION: nosuch: topic 'nosuch' does not exist"
    ]
    deadline = time.monotonic() + 30
    while {"events", "spare"} & set(cli.run("topics", "list").split()):
        assert time.monotonic() < deadline, "topic not deleted in time"
        time.sleep(0.3)
    err = cli.run("topics", "describe", "events", ok=False)
    assert "UNKNOWN_TOPIC_OR_PARTITION" in err


def test_a_native_command_at_a_kafka_port_says_so_and_names_the_native_port(
    cli: CliCluster,
) -> None:
    broker = json.loads((cli.cwd / ".odradek" / "cluster.json").read_text())["brokers"][0]
    kafka = f"127.0.0.1:{broker['kafka_port']}"
    done = run_odradek("topics", "list", "--bootstrap", kafka, cwd=cli.cwd)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"odradek: error: {kafka} is a Kafka listener (it answered Kafka's ApiVersions), not "
        "odradek's native port that this command speaks: this broker's native listener is "
        f"port {broker['port']}"
    ]


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


def test_acks_0_says_it_cannot_know_whether_the_records_were_written(cli: CliCluster) -> None:
    """A record the broker refuses (larger than the topic's max.message.bytes) sent with acks=0:
    no answer comes, so the summary says the records were sent, not produced."""
    cli.run("topics", "create", "small", "--partitions", "1", "--config", "max.message.bytes=200")
    cli.wait_describe("small", lambda rows: all(r.leader is not None for r in rows))
    done = run_odradek("produce", "small", "--acks", "0", input="x" * 1000 + "\n", cwd=cli.cwd)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "sent 1 record(s) to small with acks=0: the broker does not answer, so whether they "
        "were written is unknown"
    ]
    assert cli.run("consume", "small", "--from-beginning", "--timeout-ms", "2000") == ""


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


def test_topics_list_shows_internal_topics_unless_excluded(cli: CliCluster) -> None:
    """As kafka-topics.sh: `topics list` and `topics describe` show __consumer_offsets (made by
    the group's first coordinator lookup), `--exclude-internal` leaves it out, and the JSON
    says which topics are internal."""
    cli.run("topics", "create", "listed", "--partitions", "1")  # its own: runs alone with -k
    cli.run("consume", "listed", "--group", "internal-g", "--timeout-ms", "500")
    deadline = time.monotonic() + 60
    while "__consumer_offsets" not in cli.run("topics", "list").split():
        assert time.monotonic() < deadline, "no __consumer_offsets after a group was used"
        time.sleep(0.3)
    excluded = cli.run("topics", "list", "--exclude-internal").split()
    assert "listed" in excluded and not any(name.startswith("__") for name in excluded), excluded
    listed = json.loads(cli.run("topics", "list", "-o", "json"))["topics"]
    internal = {t["name"]: t["internal"] for t in listed}
    assert internal["__consumer_offsets"] is True and internal["listed"] is False, listed
    listed = json.loads(cli.run("topics", "list", "-o", "json", "--exclude-internal"))["topics"]
    assert "__consumer_offsets" not in {t["name"] for t in listed}
    described = json.loads(cli.run("topics", "describe", "-o", "json"))["topics"]
    assert "__consumer_offsets" in {t["name"] for t in described}
    described = json.loads(cli.run("topics", "describe", "-o", "json", "--exclude-internal"))
    assert {t["name"] for t in described["topics"]} >= {"listed"}
    assert "__consumer_offsets" not in {t["name"] for t in described["topics"]}


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

    cli.run("topics", "create", "lagging", "--partitions", "3")  # a replica on every broker
    cli.wait_describe("lagging", lambda rows: all(r.leader is not None for r in rows))
    for partition in "012":  # a committed offset on each partition
        cli.run("produce", "lagging", "--partition", partition, input="x\n")
    cli.run("consume", "lagging", "--group", "lagging-g", "--from-beginning", "--max-messages",
            "3", "--timeout-ms", "20000")  # fmt: skip

    cli.run("cluster", "kill", str(victim))
    assert cli.status()[victim][0] == "dead"
    rows = cli.wait_describe("durable", _offline(victim))
    offline = [r for r in rows if r.leader is None]
    assert offline and all(r.marker == "(offline)" for r in offline)
    lagging = cli.wait_describe("lagging", _offline(victim))
    _unknown_log_end_offsets_show_as_dashes(cli, {r.partition for r in lagging if r.leader is None})

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


def _unknown_log_end_offsets_show_as_dashes(cli: CliCluster, offline: set[int]) -> None:
    """`groups describe` while partitions are offline: their log end offset and lag are not
    known, "-" in the table and null in JSON (it printed -1 for both)."""
    assert offline, "no partition of the topic is on the killed broker"
    doc = json.loads(cli.run("groups", "describe", "lagging-g", "-o", "json"))
    ends = {p["partition"]: (p["log_end_offset"], p["lag"]) for p in doc["partitions"]}
    assert set(ends) == {0, 1, 2}, doc
    for partition, (end, lag) in ends.items():
        if partition in offline:
            assert end is None and lag is None, doc
        else:
            assert end is not None and end >= 0 and lag is not None and lag >= 0, doc
    table = cli.run("groups", "describe", "lagging-g").splitlines()
    header = table[1].split()
    assert header[3:6] == ["CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"], table
    for line in table[2:]:
        cells = line.split()
        if int(cells[2]) in offline:
            assert cells[4:6] == ["-", "-"], table
