"""Share groups (KIP-932) with confluent-kafka 2.16's ShareConsumer, each member a process of
.venv-share's python (tests/integration/share_member.py; the project's venv pins 2.12 for
Quix Streams, pyproject.toml says how the two are kept): several members on one partition,
acknowledgement by ACCEPT, RELEASE and REJECT, and a member SIGKILLed with records in flight
(the others get them at once).

One single-broker cluster for the module, with a short acquisition lock
(group.share.record.lock.duration.ms) and heartbeat interval; each test has its own topic and
groups, whose share.auto.offset.reset is set to earliest (a group config, as Kafka's
kafka-configs.sh --entity-type groups sets it) so records produced before a member's first
fetch are delivered.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from client import (
    Admin,
    AsyncShareConsumer,
    Producer,
    ShareConsumer,
    ShareRecord,
    ShareStateError,
    TopicPartition,
)
from client.types import NewTopic
from deploy import cli
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import shared_cluster
from tests.integration import kafka_wire
from tests.integration.kafka_wire import wait_for

ROOT = Path(__file__).resolve().parents[2]
SHARE_PYTHON = ROOT / ".venv-share" / "bin" / "python"
MEMBER = Path(__file__).with_name("share_member.py")
LOCK_MS = 8000  # long beside a poll (implicit acknowledgements)
SETTINGS: dict[str, int | bool | str] = {
    "group_share_record_lock_duration_ms": LOCK_MS,
    "group_share_heartbeat_interval_ms": 500,
    "group_share_session_timeout_ms": 6000,
    # below Kafka's bounds (15 s, 5 s, 45 s), which the settings above must be within
    "group_share_min_record_lock_duration_ms": 1000,
    "group_share_min_heartbeat_interval_ms": 100,
    "group_share_min_session_timeout_ms": 1000,
}
WAIT_S = 90.0


def share_cluster(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory, brokers: int,
    **settings: int | bool | str,
) -> Iterator[LocalCluster]:  # fmt: skip
    """A module's cluster of `brokers` with SETTINGS (and `settings`), once .venv-share is there."""
    if not SHARE_PYTHON.exists():
        pytest.fail(f"{SHARE_PYTHON} is missing: `make setup` builds it (confluent-kafka 2.16)")
    yield from shared_cluster(zk_server, tmp_path_factory, brokers,
                              broker_settings={**SETTINGS, **settings})  # fmt: skip


@pytest.fixture(scope="module")
def cluster(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    yield from share_cluster(zk_server, tmp_path_factory, 1)


class Members:
    """The test's member processes and what each wrote."""

    def __init__(self, cluster: LocalCluster, tmp_path: Path, topic: str) -> None:
        self.cluster, self.tmp_path, self.topic = cluster, tmp_path, topic
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, group: str, mode: str = "accept") -> Path:
        out = self.tmp_path / f"{name}.out"
        args = [str(SHARE_PYTHON), str(MEMBER), "--bootstrap", self.cluster.kafka_bootstrap,
                "--group", group, "--topic", self.topic, "--out", str(out), "--mode", mode,
                "--name", name]  # fmt: skip
        with (self.tmp_path / f"{name}.err").open("ab") as err:
            self.procs[name] = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
            )
        return out

    def lines(self, name: str) -> list[tuple[int, int, str]]:
        """(offset, delivery count, what it did) of each record `name` received."""
        path = self.tmp_path / f"{name}.out"
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            if line and not line.startswith("#"):
                offset, count, what = line.split()
                out.append((int(offset), int(count), what))
        return out

    def stop_one(self, name: str) -> None:
        """SIGTERM: the member closes (sending what it has to acknowledge) and leaves."""
        p = self.procs.pop(name)
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0, f"{name} exited with {p.returncode}"

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for name, p in self.procs.items():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
                pytest.fail(f"{name} did not close within 30 s")


@pytest.fixture
def topic(cluster: LocalCluster) -> str:
    name = f"share-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(name, 1, 1)])

        def led() -> bool:
            (d,) = admin.describe_topics([name])
            return not d.error_code and all(p.leader >= 0 for p in d.partitions)

        wait_for(led, f"{name} to have a leader", 30)
    return name


@pytest.fixture
def members(cluster: LocalCluster, tmp_path: Path, topic: str) -> Iterator[Members]:
    m = Members(cluster, tmp_path, topic)
    try:
        yield m
    finally:
        m.stop()


def new_group(cluster: LocalCluster, lock_ms: int | None = None) -> str:
    """A share group id whose share.auto.offset.reset is earliest (and whose
    share.record.lock.duration.ms is `lock_ms`, if given)."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    group = f"share-g-{uuid.uuid4().hex[:8]}"
    entry = ConfigEntry("share.auto.offset.reset", "earliest",
                        incremental_operation=AlterConfigOpType.SET)  # fmt: skip
    entries = [entry]
    if lock_ms is not None:
        entries.append(ConfigEntry("share.record.lock.duration.ms", str(lock_ms),
                                   incremental_operation=AlterConfigOpType.SET))  # fmt: skip
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})  # held until answered
    admin.incremental_alter_configs([res])[res].result(30)
    return group


def produce(cluster: LocalCluster, topic: str, count: int, one_by_one: bool = False) -> None:
    with Producer(cluster.bootstrap, acks="all", linger_ms=2) as producer:
        futures = []
        for i in range(count):
            futures.append(producer.send(topic, b"v%d" % i, partition=0))
            if one_by_one:  # each its own batch, so fetches in between find some
                futures[-1].result(30)
        producer.flush()
        for f in futures:
            f.result(30)


def test_four_members_share_one_partition_each_record_accepted_once(
    cluster: LocalCluster, topic: str, members: Members
) -> None:
    group = new_group(cluster)
    names = [f"m{i}" for i in range(4)]
    for name in names:
        members.start(name, group)  # the ShareConsumer's defaults: implicit acknowledgement
    produce(cluster, topic, 40)
    wait_for(lambda: any(members.lines(n) for n in names), "the first records", WAIT_S)
    produce(cluster, topic, 200, one_by_one=True)
    total = 240

    def received() -> list[int]:
        return sorted(o for n in names for o, _, _ in members.lines(n))

    wait_for(lambda: len(set(received())) == total, f"{total} records received", WAIT_S)
    members.stop()
    got = received()
    assert got == list(range(total)), "each record delivered once, none lost"
    assert all(c == 1 for n in names for _, c, _ in members.lines(n))
    split = {n: len(members.lines(n)) for n in names}
    assert all(split.values()), f"every member did some of the work: {split}"


def test_release_redelivers_with_delivery_count_two_and_reject_archives(
    cluster: LocalCluster, topic: str, members: Members
) -> None:
    releasing, rejecting = new_group(cluster), new_group(cluster)
    members.start("rel", releasing, "release-first")
    members.start("rej", rejecting, "reject")
    produce(cluster, topic, 5)

    def released_and_accepted() -> bool:
        got = set(members.lines("rel"))
        return all({(o, 1, "release"), (o, 2, "accept")} <= got for o in range(5))

    wait_for(released_and_accepted, "each record released, then accepted on delivery 2", WAIT_S)
    wait_for(lambda: len(members.lines("rej")) >= 5, "5 records rejected", WAIT_S)
    members.stop_one("rej")
    # a rejected record is archived: a later member of the group gets only the new record
    late = members.start("late", rejecting)
    produce(cluster, topic, 1)
    wait_for(lambda: members.lines("late"), f"{late} to receive the new record", WAIT_S)
    members.stop()
    assert members.lines("rej") == [(o, 1, "reject") for o in range(5)]
    assert members.lines("late") == [(5, 1, "accept")]
    assert sorted(r for r in members.lines("rel") if r[0] < 5) == sorted(
        [(o, 1, "release") for o in range(5)] + [(o, 2, "accept") for o in range(5)]
    )


def test_a_killed_members_records_go_to_the_others_at_once(
    cluster: LocalCluster, topic: str, members: Members
) -> None:
    """A member SIGKILLed with records in flight: its connection closes, which ends its share
    session on the leader, and its records go to the other member at once (as Kafka's
    ShareSessionCache on a disconnect), with their delivery count kept, not after the
    group's 60 s lock."""
    lock_s = 60
    group = new_group(cluster, lock_ms=lock_s * 1000)
    members.start("holder", group, "hold")
    produce(cluster, topic, 10)
    held = wait_for(lambda: [o for o, _, w in members.lines("holder") if w == "hold"],
                    "the holder to acquire records", WAIT_S)  # fmt: skip
    members.start("heir", group)
    produce(cluster, topic, 1)  # offset 10: only the heir polls, so it is fetching once it has it
    wait_for(lambda: 10 in {o for o, _, _ in members.lines("heir")}, "the heir's first record",
             WAIT_S)  # fmt: skip
    os.kill(members.procs["holder"].pid, signal.SIGKILL)
    members.procs["holder"].wait(10)

    def redelivered() -> dict[int, int]:
        got = {o: c for o, c, _ in members.lines("heir")}
        return got if set(range(11)) <= set(got) else {}

    # far below the lock: without the release on the connection's close this waits 60 s
    got = wait_for(redelivered, "the heir to receive the held records", lock_s / 2)
    assert all(got[o] == 2 for o in held), f"held {held}, heir got {got}"
    assert all(got[o] == 1 for o in range(11) if o not in held)


def test_a_groups_share_configs_are_described_and_held_to_the_brokers_bounds(
    cluster: LocalCluster,
) -> None:
    """DescribeConfigs on a GROUP lists the share.* configs with their values and sources (the
    broker's group.share.* settings where the group has none), and IncrementalAlterConfigs
    refuses a value outside the broker's group.share.min/max.* bounds with Kafka's line."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )

    group = new_group(cluster)
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    res = ConfigResource(ResourceType.GROUP, group)
    got = admin.describe_configs([res])[res].result(30)
    assert (got["share.auto.offset.reset"].value, got["share.auto.offset.reset"].source) == (
        "earliest", ConfigSource.GROUP_CONFIG.value)  # fmt: skip
    lock = got["share.record.lock.duration.ms"]
    assert (lock.value, lock.source) == (str(LOCK_MS), ConfigSource.STATIC_BROKER_CONFIG.value)
    limit = got["share.delivery.count.limit"]
    assert (limit.value, limit.source) == ("5", ConfigSource.DEFAULT_CONFIG.value)
    assert got["share.isolation.level"].value == "read_uncommitted"
    entry = ConfigEntry("share.delivery.count.limit", "11",
                        incremental_operation=AlterConfigOpType.SET)  # fmt: skip
    change = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    with pytest.raises(KafkaException) as refused:
        admin.incremental_alter_configs([change])[change].result(30)
    assert "must be less than or equal to group.share.max.delivery.count.limit" in str(
        refused.value
    )


async def test_two_odradek_share_consumers_split_the_work_each_record_accepted_once(
    cluster: LocalCluster, topic: str
) -> None:
    """odradek's own AsyncShareConsumer (native door) with implicit acknowledgement: two
    members of one group on a 1-partition topic both get records, each record once."""
    group = new_group(cluster)
    produce(cluster, topic, 60)
    members = [AsyncShareConsumer(cluster.bootstrap, group_id=group, client_id=f"c{i}",
                                  max_poll_records=5) for i in range(2)]  # fmt: skip
    got: list[list[ShareRecord]] = [[], []]
    committed: list[dict[TopicPartition, object]] = []
    try:
        for m in members:
            m.subscribe([topic])

        async def take(i: int) -> None:
            got[i].extend(await members[i].poll(200))

        async def all_received() -> bool:
            await asyncio.gather(take(0), take(1))
            return len({r.offset for g in got for r in g}) >= 60

        deadline = asyncio.get_running_loop().time() + WAIT_S
        while not await all_received():  # each round polls both members for up to 200 ms
            assert asyncio.get_running_loop().time() < deadline, f"60 records by {WAIT_S} s"
        assert await members[0].commit_sync() in ({}, {TopicPartition(topic, 0): None})
        members[1].commit_async(committed.append)  # the last poll's records, accepted
    finally:
        for m in members:
            await m.close()  # waits for the commit_async
    assert committed in ([{}], [{TopicPartition(topic, 0): None}]), committed
    offsets = sorted(r.offset for g in got for r in g)
    assert offsets == list(range(60)), "each record delivered once, none lost"
    assert all(r.delivery_count == 1 and r.value == b"v%d" % r.offset for g in got for r in g)
    assert got[0] and got[1], f"both members did some of the work: {[len(g) for g in got]}"


def test_odradek_share_consumer_explicit_release_redelivers_and_reject_archives(
    cluster: LocalCluster, topic: str
) -> None:
    """odradek's ShareConsumer (sync) with share_acknowledgement_mode="explicit": a released
    record comes back with delivery_count 2, a rejected one never again; Kafka's
    IllegalStateException cases are ShareStateError."""
    group = new_group(cluster)
    produce(cluster, topic, 4)
    with ShareConsumer(cluster.bootstrap, group_id=group,
                       share_acknowledgement_mode="explicit") as consumer:  # fmt: skip
        consumer.subscribe([topic])
        first = wait_for(lambda: consumer.poll(500), "the first delivery", WAIT_S)
        assert [(r.offset, r.delivery_count) for r in first] == [(o, 1) for o in range(4)]
        with pytest.raises(ShareStateError, match="All records must be acknowledged"):
            consumer.poll(0)
        for r in first:
            consumer.acknowledge(r, "release" if r.offset < 2 else "reject")
        with pytest.raises(ShareStateError, match="cannot be acknowledged"):
            consumer.acknowledge(first[0], "accept")  # twice
        again = wait_for(lambda: consumer.poll(500), "the released records again", WAIT_S)
        assert [(r.offset, r.delivery_count) for r in again] == [(0, 2), (1, 2)]
        for r in again:
            consumer.acknowledge(r, "accept")
        assert consumer.commit_sync() == {TopicPartition(topic, 0): None}
        produce(cluster, topic, 1)
        late = wait_for(lambda: consumer.poll(500), "the new record", WAIT_S)
        assert [(r.offset, r.delivery_count) for r in late] == [(4, 1)], "rejected: archived"
        consumer.acknowledge(late[0], "accept")
    with (
        ShareConsumer(cluster.bootstrap, group_id=group) as implicit,
        pytest.raises(ShareStateError, match="implicit"),
    ):
        implicit.acknowledge(late[0], "accept")
    # the broker's Prometheus metrics under Kafka's names (broker/share/metrics.py); the
    # cluster is the module's, so other tests' counts are in them too: at least ours
    state = cluster.state
    assert state is not None
    (broker,) = state.brokers
    url = f"http://{broker.host or state.host}:{broker.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as answer:
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for f in text_string_to_metric_families(answer.read().decode())
                   for s in f.samples}  # fmt: skip
    acked = "odradek_server_sharegroupmetrics_recordacknowledgements_total"
    assert samples[(acked, (("ack_type", "release"),))] >= 2
    assert samples[(acked, (("ack_type", "reject"),))] >= 2
    assert samples[(acked, (("ack_type", "accept"),))] >= 3
    fetches = "odradek_server_brokertopicmetrics_totalsharefetchrequests_total"
    assert samples[(fetches, (("topic", topic),))] >= 3
    acks = "odradek_server_brokertopicmetrics_totalshareacknowledgementrequests_total"
    assert samples[(acks, (("topic", topic),))] >= 1
    assert samples[("odradek_server_sharegroupmetrics_partitionloadtimems_count", ())] >= 1
    by_state = {labels: v for (n, labels), v in samples.items()
                if n == "odradek_coordinator_share_group_count"}  # fmt: skip
    assert set(by_state) == {(("state", s),) for s in ("empty", "stable", "dead")}
    assert by_state[(("state", "empty"),)] >= 1  # ours, its members gone


async def console_groups(cluster: LocalCluster) -> list[dict[str, object]]:
    from deploy.console.gather import Gatherer

    gatherer = Gatherer(cluster.bootstrap, timeout_ms=10_000)
    try:
        return await gatherer._groups()
    finally:
        await gatherer.close()


async def console_share_rows(cluster: LocalCluster, group: str) -> list[dict[str, object]]:
    """The console's rows of `group`'s share partitions, with the leaders' counts read from
    their metrics as the console's refresh does (metadata, the cluster's brokers, then their
    metrics)."""
    from deploy.console.gather import Gatherer

    gatherer = Gatherer(cluster.bootstrap, cluster.dir, timeout_ms=10_000)
    try:
        await gatherer._bounded("metadata", gatherer._metadata())
        gatherer._processes()
        await gatherer._dirty()
        (shown,) = [g for g in await gatherer._groups() if g["id"] == group]
        return list(shown["offsets"])  # type: ignore[call-overload]
    finally:
        await gatherer.close()


def test_the_consoles_groups_view_shows_in_flight_and_archived_counts(
    cluster: LocalCluster, topic: str
) -> None:
    """Per share partition, the leader's in-flight count (SPEO - SPSO, Kafka's
    InFlightMessageCount) and archived count, from its metrics, beside the start offset."""
    group = new_group(cluster)
    produce(cluster, topic, 3)
    with ShareConsumer(cluster.bootstrap, group_id=group,
                       share_acknowledgement_mode="explicit") as consumer:  # fmt: skip
        consumer.subscribe([topic])
        got = wait_for(lambda: consumer.poll(500), "records", WAIT_S)
        consumer.acknowledge(got[0], "reject")  # archived
        for record in got[1:]:
            consumer.acknowledge(record, "release")  # Available again: still in flight
        assert all(e is None for e in consumer.commit_sync().values())
        want = {"topic": topic, "partition": 0, "committed": 1, "in_flight": len(got) - 1,
                "archived": 1}  # fmt: skip

        def shown() -> bool:
            rows = asyncio.run(console_share_rows(cluster, group))
            return [{k: r[k] for k in want} for r in rows] == [want]

        wait_for(shown, f"the console's row {want}", WAIT_S)


def test_odradek_share_groups_lists_describes_and_deletes_as_kafkas_tool(
    cluster: LocalCluster, topic: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`odradek share-groups` with kafka-share-groups.sh's flags and columns: list (--state),
    describe (the partitions with their start offset and lag, --members, --state),
    reset-offsets and delete-offsets only once the group is Empty, and delete (DeleteGroups of
    a share group); the
    console's groups view of the same group. The command's main() runs in this process (a process
    per call costs seconds of imports on a loaded machine)."""
    group = new_group(cluster)

    def odradek(*args: str, code: int = 0) -> str:
        got = cli.main(["share-groups", *args, "--bootstrap", cluster.bootstrap])
        out, err = capsys.readouterr()
        assert got == code and "Traceback" not in err, (got, out, err)
        return out if code == 0 else err

    with ShareConsumer(cluster.bootstrap, group_id=group, client_id="worker-1") as consumer:
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(100) or consumer.assignment(), "an assignment", WAIT_S)
        assert group in odradek("list").split()
        assert [group, "Stable"] in [
            line.split() for line in odradek("list", "--state").splitlines()
        ]
        assert "Invalid state list 'Bogus'" in odradek("list", "--state", "Bogus", code=2)
        offsets = odradek("describe", group).splitlines()
        assert offsets[0].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
        assert offsets[1].split()[:3] == [group, topic, "0"]
        # the console's groups view: the share group by its own describe and offsets
        (shown,) = [g for g in asyncio.run(console_groups(cluster)) if g["id"] == group]
        assert (shown["type"], shown["state"], shown["shared_partitions"]) == ("share", "Stable", 1)
        assert [m["assignment"] for m in shown["members"]] == [[f"{topic}-0"]]
        refused = odradek("reset-offsets", group, "--topic", topic, "--to-earliest", "--execute",
                          code=1)  # fmt: skip
        assert f"Share group '{group}' is not empty." in refused
        members = [line.split() for line in odradek("describe", group, "--members", "--verbose")
                   .splitlines()]  # fmt: skip
        assert members[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                              "MEMBER-EPOCH", "ASSIGNMENT"]  # fmt: skip
        (row,) = members[1:]
        assert (row[0], row[3], row[4], row[6]) == (group, "worker-1", "1", f"{topic}:0")
        state = odradek("describe", group, "--state").splitlines()
        assert state[1].split()[0] == group and state[1].split()[-2:] == ["Stable", "1"]
        assert f"Share group '{group}' is not EMPTY." in odradek("delete", group, code=1)
        assert f"Share group '{group}' is not empty." in odradek(
            "delete-offsets", group, "--topic", topic, code=1)  # fmt: skip
    # Empty now: its start offset moves back (AlterShareGroupOffsets), 4 records to deliver
    produce(cluster, topic, 4)
    dry = odradek("reset-offsets", group, "--topic", topic, "--to-offset", "1").splitlines()
    assert [line.split() for line in dry] == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                                              [group, topic, "0", "1"]]  # fmt: skip
    odradek("reset-offsets", group, "--topic", f"{topic}:0", "--to-latest", "--execute")
    assert odradek("describe", group).splitlines()[1].split() == [group, topic, "0", "4", "0"]
    odradek("reset-offsets", group, "--all-topics", "--to-earliest", "--execute")
    wait_for(lambda: odradek("describe", group).splitlines()[1].split() == [group, topic, "0",
             "0", "4"], "start offset 0 and lag 4", WAIT_S)  # fmt: skip
    # the Kafka door's DescribeShareGroupOffsets v1 says the same (confluent-kafka 2.16's
    # AdminClient has no share-group offsets calls)
    _, address = kafka_wire.ready_coordinator(cluster.kafka_bootstrap, group)
    asked = kafka_wire.nested(90, 1, "DescribeShareGroupOffsetsRequestGroup", group_id=group,
                              topics=None)  # fmt: skip
    (described,) = kafka_wire.call(address, 90, 1, groups=(asked,)).groups
    assert [(t.topic_name, p.partition_index, p.start_offset, p.lag, p.error_code)
            for t in described.topics for p in t.partitions] == [(topic, 0, 0, 4, 0)]  # fmt: skip
    # delete-offsets (kafka-share-groups.sh's --group and --topic): the state on the topic goes
    gone = odradek("delete-offsets", "--group", group, "--topic", topic).splitlines()
    assert [line.split() for line in gone] == [["TOPIC", "STATUS"], [topic, "Successful"]]
    assert odradek("describe", group).splitlines()[1:] == []
    assert cli.main(["share-groups", "delete-offsets", group, "--topic", "no-such-topic",
                     "--bootstrap", cluster.bootstrap]) == 1  # fmt: skip
    missing = capsys.readouterr().out.splitlines()
    assert missing[1].split()[:2] == ["no-such-topic", "Error:"], missing
    assert f"('{group}') was successful" in odradek("delete", group)  # closed: it left
    assert group not in odradek("list").split()
    assert "is not a share group" in odradek("delete", "no-such-group", code=1)
