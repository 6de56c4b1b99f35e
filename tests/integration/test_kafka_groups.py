"""Kafka clients' consumer groups on odradek's coordinator: real clients, real processes.

Members are tests/integration/kafka_group_member.py processes (kafka-python, confluent-kafka or
aiokafka, each processing then committing), so a test can close one (LeaveGroup), pause one
(SIGSTOP) or kill one (SIGKILL). The group is watched from outside through the Kafka protocol
(tests/integration/kafka_wire.py): DescribeGroups at the coordinator says when it converged
(Stable, exactly the live members, every partition owned by exactly one), and a `CommitWatch`
thread samples OffsetFetch all along: a committed offset never goes down, and every offset below
one was processed before it was committed. Every wait is a poll with a deadline.

Also here: a group of kafka-python and confluent-kafka members together, kcat's `-G`, a group
refusing the other kind of consumer, commits with a wrong generation or member, and
`odradek groups` describing, resetting and deleting a Kafka group. Coordinator failures are in
test_kafka_groups_faults.py.
"""

from __future__ import annotations

import struct
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    ConsumerGroupTopicPartitions,
    KafkaError,
    TopicPartition,
)
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka.admin import AdminClient

from client import Admin, Consumer, Producer
from client.types import NewTopic
from coordinator.group.records import OFFSETS_TOPIC, partition_for
from deploy.cluster import LocalCluster
from protocol.errors import InconsistentGroupProtocolError
from protocol.kafka.consumer_protocol import encode_assignment
from tests.fixtures.cluster import ClusterFactory, run_odradek
from tests.integration import kafka_wire as wire
from tests.integration.kafka_clients import GroupMember, processed_by, spawn_member

pytestmark = pytest.mark.integration

PARTITIONS = 6
SESSION_MS = 5000
CONVERGE_S = 60.0
KCAT_TIMEOUT_S = 60.0


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create(bootstrap: str, topic: str, partitions: int = PARTITIONS, rf: int = 3) -> None:
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions, rf)])
        wire.wait_for(lambda: _all_led(admin, topic), f"{topic} to have leaders", 30)


def _all_led(admin: Admin, topic: str) -> bool:
    (d,) = admin.describe_topics([topic])
    return not d.error_code and bool(d.partitions) and all(p.leader >= 0 for p in d.partitions)


class CommitWatch:
    """Samples a group's committed offsets every 100 ms in a thread. Each sample must be no
    lower than the one before (per partition), and every offset below it must already be in
    what the members processed (they write, then commit: a commit never runs ahead)."""

    def __init__(self, bootstrap: str, group: str, topic: str, members: list[GroupMember]):
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.members = members  # the test appends the members it starts
        self.samples: dict[int, list[int]] = {}
        self.skipped: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CommitWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._sample()  # one more, after the last commits

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self._sample()

    def _sample(self) -> None:
        got = wire.committed(self.bootstrap, self.group)
        if got is not None:  # else the coordinator is moving or loading
            done = processed_by(list(self.members))  # read after the commits were seen
            for (topic, p), offset in sorted(got.items()):
                if topic == self.topic:
                    self._check_one(p, offset, done)

    def _check_one(self, p: int, offset: int, done: set[tuple[int, int]]) -> None:
        self.samples.setdefault(p, []).append(offset)
        missing = [o for o in range(offset) if (p, o) not in done]
        if missing:
            self.skipped.append(f"partition {p} committed {offset}, not processed {missing[:5]}")

    def last(self) -> dict[int, int]:
        return {p: s[-1] for p, s in self.samples.items() if s}

    def check(self) -> None:
        assert self.samples, "no committed offsets were sampled"
        for p, offsets in self.samples.items():
            assert offsets == sorted(offsets), f"partition {p}'s committed offset went back"
        assert not self.skipped, self.skipped[:5]


@dataclass
class Scenario:
    """One test's topic and group: members started as processes, records produced (with the
    native producer, acks=all) and the log end offsets they reached."""

    cluster: LocalCluster
    tmp_path: Path
    topic: str
    group: str
    partitions: int = PARTITIONS
    members: list[GroupMember] = field(default_factory=list)
    ends: dict[int, int] = field(default_factory=dict)

    @classmethod
    def new(cls, cluster: LocalCluster, tmp_path: Path, prefix: str,
            partitions: int = PARTITIONS) -> Scenario:  # fmt: skip
        s = cls(cluster, tmp_path, _name(f"{prefix}-t"), _name(f"{prefix}-g"), partitions)
        _create(cluster.bootstrap, s.topic, partitions, min(3, len(cluster.broker_ids)))
        return s

    @property
    def kafka(self) -> str:
        return self.cluster.kafka_bootstrap

    def produce(self, per_partition: int) -> None:
        with Producer(self.cluster.bootstrap, acks="all", linger_ms=2) as producer:
            futures = [producer.send(self.topic, b"v%d" % i, partition=p)
                       for p in range(self.partitions) for i in range(per_partition)]  # fmt: skip
            producer.flush()
            for f in futures:
                md = f.result(60)
                self.ends[md.partition] = max(self.ends.get(md.partition, 0), md.offset + 1)

    def start(self, client: str, client_id: str, assignor: str = "range",
              session_ms: int = SESSION_MS, max_poll_ms: int = 30_000) -> GroupMember:  # fmt: skip
        m = spawn_member(client, self.kafka, self.group, self.topic, client_id, self.tmp_path,
                         assignor, session_ms, max_poll_ms)  # fmt: skip
        self.members.append(m)
        return m

    def converge(self, live: list[GroupMember]) -> wire.GroupView:
        return wire.wait_converged(self.kafka, self.group, self.topic, self.partitions,
                                   {m.client_id for m in live}, CONVERGE_S)  # fmt: skip

    def committed(self) -> dict[int, int]:
        got = wire.committed(self.kafka, self.group) or {}
        return {p: o for (t, p), o in got.items() if t == self.topic}

    def wait_all_committed(self) -> None:
        wire.wait_for(lambda: self.committed() == self.ends,
                      f"{self.group} to commit {self.ends}", CONVERGE_S)  # fmt: skip

    def idle(self) -> None:
        """Everything committed."""
        self.wait_all_committed()

    def watch(self) -> CommitWatch:
        return CommitWatch(self.kafka, self.group, self.topic, self.members)

    def check_all_processed(self) -> None:
        wanted = {(p, o) for p, end in self.ends.items() for o in range(end)}
        missing = wanted - processed_by(self.members)
        assert not missing, f"never processed: {sorted(missing)[:10]}"

    def stop_all(self) -> None:
        for m in self.members:
            m.stop()


def _gone_at_once(s: Scenario, member: GroupMember) -> None:
    """A member that closed sent LeaveGroup: the coordinator dropped it without waiting for
    its session timeout."""

    def gone() -> bool:
        view = wire.group_view(s.kafka, s.group)
        return view is not None and member.client_id not in {m.client_id for m in view.members}

    wire.wait_for(gone, f"{member.client_id} to leave", SESSION_MS / 1000 - 1)


# ----- three members: join, one leaves, one dies --------------------------------------------

CLIENT_ASSIGNORS = [
    ("kafka-python", "range"),
    ("kafka-python", "roundrobin"),
    ("confluent-kafka", "range"),
    ("confluent-kafka", "roundrobin"),
    ("confluent-kafka", "cooperative-sticky"),
    ("aiokafka", "range"),
    ("aiokafka", "roundrobin"),
]


@pytest.mark.parametrize(("client", "assignor"), CLIENT_ASSIGNORS)
def test_group_converges_as_members_join_leave_and_die(
    cluster3: LocalCluster, tmp_path: Path, client: str, assignor: str
) -> None:
    """Three members join; one closes (LeaveGroup), one is SIGKILLed (found by its session
    timeout); the group converges each time and the last member reads to the end. Every record
    is processed at least once, and committed offsets never skip or go back."""
    s = Scenario.new(cluster3, tmp_path, f"g3-{assignor}")
    s.produce(20)
    try:
        with s.watch() as watch:
            first, second, third = (s.start(client, f"{client}-{i}", assignor) for i in range(3))
            s.converge([first, second, third])
            s.produce(20)
            first.close()
            _gone_at_once(s, first)
            s.converge([second, third])
            s.produce(20)
            s.idle()
            second.kill()
            s.converge([third])  # after second's session timeout
            s.produce(20)
            s.wait_all_committed()
        third.close()
    finally:
        s.stop_all()
    watch.check()
    assert watch.last() == s.ends
    s.check_all_processed()


def test_kafka_python_and_confluent_members_share_a_group(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    """Two clients with a common assignor (range) in one group: each gets partitions, and
    together they read everything."""
    s = Scenario.new(cluster3, tmp_path, "mixed")
    s.produce(20)
    try:
        with s.watch() as watch:
            kp = s.start("kafka-python", "kp", "range")
            cf = s.start("confluent-kafka", "cf", "range")
            view = s.converge([kp, cf])
            before = {m.client_id: len(m.processed()) for m in (kp, cf)}
            s.produce(20)  # after the split: each member reads its own partitions' share
            s.wait_all_committed()
        owned = {m.client_id: [p for _, p in m.partitions] for m in view.members}
        assert len(owned["kp"]) == len(owned["cf"]) == PARTITIONS // 2, owned
        for m in (kp, cf):
            assert len(m.processed()) > before[m.client_id], f"{m.client_id} read nothing"
            new = {p for p, o in m.processed() if o >= 20}
            assert new == set(owned[m.client_id]), (m.client_id, new, owned)
    finally:
        s.stop_all()
    watch.check()
    s.check_all_processed()


def _kcat_group(s: Scenario, *args: str) -> set[tuple[int, int]]:
    done = subprocess.run(
        ["kcat", "-b", s.kafka, "-G", s.group, s.topic, "-X", "auto.offset.reset=earliest",
         "-f", "%p %o\\n", "-q", *args],
        capture_output=True, text=True, timeout=KCAT_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {(int(p), int(o)) for p, o in (line.split() for line in done.stdout.splitlines())}


def test_kcat_consumes_in_a_group_and_its_offsets_are_committed(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    s = Scenario.new(cluster3, tmp_path, "kcat")
    s.produce(10)
    got = _kcat_group(s, "-c", str(10 * PARTITIONS))  # exits after that many, committing
    assert got == {(p, o) for p in range(PARTITIONS) for o in range(10)}
    s.wait_all_committed()
    assert _kcat_group(s, "-e") == set()  # from the committed offsets: nothing new
    s.produce(5)
    assert _kcat_group(s, "-e") == {(p, o) for p in range(PARTITIONS) for o in range(10, 15)}
    s.wait_all_committed()
    view = wire.group_view(s.kafka, s.group)
    assert view is not None and view.state == "Empty" and not view.members


# ----- errors ----------------------------------------------------------------------------------


def test_a_group_takes_one_kind_of_consumer(cluster3: LocalCluster, tmp_path: Path) -> None:
    """An odradek consumer cannot join a Kafka client's group, nor a Kafka client an odradek
    consumer's: INCONSISTENT_GROUP_PROTOCOL (the native answer says which kind the group is;
    Kafka's JoinGroup has no message field, so Kafka clients get the code, and DescribeGroups
    shows the native group's protocol type as "odradek")."""
    s = Scenario.new(cluster3, tmp_path, "kinds")
    kp = s.start("kafka-python", "kp")
    try:
        s.converge([kp])
        with Consumer(cluster3.bootstrap, group_id=s.group, session_timeout_ms=3000,
                      heartbeat_interval_ms=300) as native:  # fmt: skip
            native.subscribe([s.topic])
            with pytest.raises(InconsistentGroupProtocolError, match="is a Kafka consumer group"):
                native.poll(timeout_ms=5000)
        s.converge([kp])  # the Kafka group is as it was
    finally:
        s.stop_all()

    group = _name("native")
    with Consumer(cluster3.bootstrap, group_id=group, session_timeout_ms=10_000,
                  heartbeat_interval_ms=300, client_id="native-member") as native:  # fmt: skip
        native.subscribe([s.topic])
        wire.wait_for(lambda: native.poll(timeout_ms=100) is not None and native.assignment(),
                      "the odradek consumer to join", CONVERGE_S)  # fmt: skip
        found = wire.ready_coordinator(s.kafka, group)
        with wire.KafkaConn(found[1]) as conn:
            refused = wire.join(conn, group, [s.topic])
        assert refused.error_code.value == wire.INCONSISTENT_GROUP_PROTOCOL
        assert _kafka_python_join_error(s.kafka, group, s.topic) == "InconsistentGroupProtocolError"
        view = wire.group_view(s.kafka, group)
        assert view is not None and view.protocol_type == "odradek"
        assert [m.client_id for m in view.members] == ["native-member"]


def _kafka_python_join_error(bootstrap: str, group: str, topic: str) -> str:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=5000,
                      heartbeat_interval_ms=500)  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                c.poll(timeout_ms=500)
            except KafkaError as exc:
                return type(exc).__name__
        return "no error"
    finally:
        c.close()


def test_commits_with_a_wrong_generation_or_member_are_refused(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    """OffsetCommit by hand at the coordinator's Kafka port: ILLEGAL_GENERATION for another
    generation, UNKNOWN_MEMBER_ID for a member the group does not have (or none, while it has
    members); nothing refused is stored. First with a member made by hand (its generation is
    known), then against a running kafka-python member."""
    s = Scenario.new(cluster3, tmp_path, "fence", partitions=1)
    tp = (s.topic, 0)
    found = wire.ready_coordinator(s.kafka, s.group)
    with wire.KafkaConn(found[1]) as conn:
        joined = wire.join(conn, s.group, [s.topic])
        assert joined.error_code.value == wire.NONE
        gen, me = joined.generation_id, joined.member_id
        synced = wire.sync(conn, s.group, gen, me, {me: encode_assignment([tp])})
        assert synced.error_code.value == wire.NONE
        assert wire.commit(conn, s.group, gen + 1, me, {tp: 5}) == {tp: wire.ILLEGAL_GENERATION}
        assert wire.commit(conn, s.group, gen - 1, me, {tp: 5}) == {tp: wire.ILLEGAL_GENERATION}
        assert wire.commit(conn, s.group, gen, "nobody", {tp: 5}) == {tp: wire.UNKNOWN_MEMBER_ID}
        assert wire.commit(conn, s.group, -1, "", {tp: 5}) == {tp: wire.UNKNOWN_MEMBER_ID}
        assert wire.commit(conn, s.group, gen, me, {tp: 3}) == {tp: wire.NONE}
    assert s.committed() == {0: 3}

    real = Scenario.new(cluster3, tmp_path, "fence-real", partitions=1)
    real.produce(10)
    kp = real.start("kafka-python", "kp")
    try:
        view = real.converge([kp])
        real.wait_all_committed()
        (member,) = view.members
        found = wire.ready_coordinator(real.kafka, real.group)
        rtp = (real.topic, 0)
        with wire.KafkaConn(found[1]) as conn:
            assert wire.commit(conn, real.group, 1_000_000, member.member_id, {rtp: 1}) == {
                rtp: wire.ILLEGAL_GENERATION
            }
            assert wire.commit(conn, real.group, 1, "nobody", {rtp: 1}) == {
                rtp: wire.UNKNOWN_MEMBER_ID
            }
        assert real.committed() == {0: 10}
        real.converge([kp])  # the member was not disturbed
    finally:
        real.stop_all()


def test_commits_for_partitions_that_do_not_exist_are_refused(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    """confluent-kafka's Consumer.commit and its admin's alter_consumer_group_offsets (an
    OffsetCommit too) for a topic that does not exist, and for a partition past an existing
    topic's count: UNKNOWN_TOPIC_OR_PARTITION for each of them, as Kafka answers (odradek
    committed them), and nothing stored for them. The existing partition asked in the same
    request is committed (librdkafka's commit callback reports the request's error on every
    partition, so OffsetFetch shows it)."""
    s = Scenario.new(cluster3, tmp_path, "unknown", partitions=1)
    missing = _name("missing")
    answers: list[tuple[KafkaError | None, list[TopicPartition]]] = []
    consumer = ConfluentConsumer({
        "bootstrap.servers": s.kafka, "group.id": s.group, "enable.auto.commit": False,
        "on_commit": lambda err, partitions: answers.append((err, partitions)),
    })  # fmt: skip
    try:
        consumer.commit(offsets=[TopicPartition(s.topic, 0, 3), TopicPartition(s.topic, 5, 4),
                                 TopicPartition(missing, 0, 123)], asynchronous=True)  # fmt: skip
        wire.wait_for(lambda: consumer.poll(0.1) is None and bool(answers),
                      "the commit's answer", CONVERGE_S)  # fmt: skip
    finally:
        consumer.close()
    ((_, partitions),) = answers
    errors = {(tp.topic, tp.partition): tp.error for tp in partitions}
    unknown = KafkaError.UNKNOWN_TOPIC_OR_PART
    for tp in ((missing, 0), (s.topic, 5)):
        error = errors[tp]
        assert error is not None and error.code() == unknown, (tp, error)
    assert wire.committed(s.kafka, s.group) == {(s.topic, 0): 3}

    admin = AdminClient({"bootstrap.servers": s.kafka})
    request = ConsumerGroupTopicPartitions(s.group, [TopicPartition(s.topic, 0, 2),
                                           TopicPartition(missing, 0, 7)])  # fmt: skip
    (future,) = admin.alter_consumer_group_offsets([request]).values()
    altered = future.result(CONVERGE_S)
    got = {(tp.topic, tp.partition): tp.error for tp in altered.topic_partitions}
    assert got[(s.topic, 0)] is None
    refused = got[(missing, 0)]
    assert refused is not None and refused.code() == unknown, refused
    assert wire.committed(s.kafka, s.group) == {(s.topic, 0): 2}


def _offsets_partition_records(kafka: str, group: str) -> list[tuple[bytes, bytes | None]]:
    """Every record of the group's `__consumer_offsets` partition, read by a Kafka client."""
    reader = ConfluentConsumer({"bootstrap.servers": kafka, "group.id": _name("reader"),
                                "enable.auto.commit": False})  # fmt: skip
    try:
        count = len(reader.list_topics(OFFSETS_TOPIC, timeout=30).topics[OFFSETS_TOPIC].partitions)
        tp = TopicPartition(OFFSETS_TOPIC, partition_for(group, count), OFFSET_BEGINNING)
        _, high = reader.get_watermark_offsets(tp, timeout=30)
        reader.assign([tp])
        out: list[tuple[bytes, bytes | None]] = []
        deadline = time.monotonic() + CONVERGE_S
        position = 0
        while position < high:
            assert time.monotonic() < deadline, f"read {position} of {high} records"
            msg = reader.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append((msg.key() or b"", msg.value()))
                position = msg.offset() + 1
        return out
    finally:
        reader.close()


def _s16(data: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">h", data, pos)
    return (None, pos + 2) if n < 0 else (data[pos + 2 : pos + 2 + n].decode(), pos + 2 + n)


def _group_value(data: bytes) -> tuple[str | None, list[tuple[str | None, ...]]]:
    """GroupMetadataValue v3, read as its JSON schema lays it out: (protocol type, members
    as (member id, instance id, client id, client host, subscription?, assignment?))."""
    assert struct.unpack_from(">h", data)[0] == 3
    protocol_type, pos = _s16(data, 2)
    pos += 4  # generation
    _, pos = _s16(data, pos)  # protocol
    _, pos = _s16(data, pos)  # leader
    (count,) = struct.unpack_from(">i", data, pos + 8)  # after currentStateTimestamp
    pos += 12
    members = []
    for _ in range(count):
        fields = []
        for _ in range(4):  # memberId, groupInstanceId, clientId, clientHost
            text, pos = _s16(data, pos)
            fields.append(text)
        pos += 8  # rebalanceTimeout, sessionTimeout
        for _ in range(2):  # subscription, assignment: bytes
            (n,) = struct.unpack_from(">i", data, pos)
            fields.append("bytes" if n > 0 else None)
            pos += 4 + n
        members.append(tuple(fields))
    assert pos == len(data)
    return protocol_type, members


def test_offsets_and_the_group_are_kafkas_records_and_big_metadata_is_refused(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    """A confluent-kafka consumer joins a group, commits and leaves. In `__consumer_offsets`,
    read back with a Kafka client, its commit is OffsetCommitKey (type 1) and OffsetCommitValue
    v3 and its group GroupMetadataKey (type 2) and GroupMetadataValue v3 with the member's
    client id and its subscription and assignment, as Kafka 4.x writes them (odradek wrote
    msgpack). A commit's metadata over 4096 characters (Kafka's offset.metadata.max.bytes)
    is OFFSET_METADATA_TOO_LARGE for its partition, as Kafka answers; the other partition of
    the same commit is committed."""
    s = Scenario.new(cluster3, tmp_path, "records", partitions=2)
    answers: list[tuple[KafkaError | None, list[TopicPartition]]] = []
    consumer = ConfluentConsumer({
        "bootstrap.servers": s.kafka, "group.id": s.group, "client.id": "records-client",
        "enable.auto.commit": False, "session.timeout.ms": SESSION_MS,
        "on_commit": lambda err, partitions: answers.append((err, partitions)),
    })  # fmt: skip
    try:
        consumer.subscribe([s.topic])
        wire.wait_for(lambda: consumer.poll(0.1) is None and len(consumer.assignment()) == 2,
                      "the assignment", CONVERGE_S)  # fmt: skip
        consumer.commit(offsets=[TopicPartition(s.topic, 0, 3, metadata="fine"),
                                 TopicPartition(s.topic, 1, 4, metadata="x" * 4097)],
                        asynchronous=True)  # fmt: skip
        wire.wait_for(lambda: consumer.poll(0.1) is None and bool(answers),
                      "the commit's answer", CONVERGE_S)  # fmt: skip
    finally:
        consumer.close()
    ((_, partitions),) = answers
    errors = {tp.partition: tp.error for tp in partitions}
    large = errors[1]
    assert large is not None and large.code() == KafkaError.OFFSET_METADATA_TOO_LARGE, large
    assert wire.committed(s.kafka, s.group) == {(s.topic, 0): 3}

    commits, groups = [], []
    for key, value in _offsets_partition_records(s.kafka, s.group):
        if key.startswith(b"\x00\x01"):
            group_id, pos = _s16(key, 2)
            topic, pos = _s16(key, pos)
            if group_id == s.group and value is not None:
                (partition,) = struct.unpack_from(">i", key, pos)
                version, offset, _epoch = struct.unpack_from(">hqi", value)
                metadata, pos = _s16(value, 14)
                assert (version, pos + 8) == (3, len(value))
                commits.append((topic, partition, offset, metadata))
        elif key == b"\x00\x02" + struct.pack(">h", len(s.group)) + s.group.encode():
            groups.append(None if value is None else _group_value(value))
    # confluent-kafka 2.12 sends a metadata with its C string's terminating NUL
    assert commits == [(s.topic, 0, 3, "fine\x00")], commits
    stable = [g for g in groups if g and g[1]]
    assert stable, groups
    protocol_type, members = stable[-1]
    assert protocol_type == "consumer" and len(members) == 1, stable
    member_id, instance_id, client_id, _host, subscription, assignment = members[0]
    assert member_id and instance_id is None and client_id == "records-client"
    assert subscription == assignment == "bytes"
    assert groups[-1] == ("consumer", []), groups  # the member left: the group is empty


@dataclass
class Rebalances:
    """One confluent-kafka consumer polling in a thread, noting each assign and revoke."""

    kafka: str
    group: str
    topic: str
    events: list[tuple[str, list[int]]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self, client_id: str) -> threading.Thread:
        thread = threading.Thread(target=self._run, args=(client_id,), daemon=True)
        thread.start()
        return thread

    def _run(self, client_id: str) -> None:
        def note(kind: str) -> Any:
            return lambda _c, parts: self.events.append((kind, sorted(p.partition for p in parts)))

        consumer = ConfluentConsumer({
            "bootstrap.servers": self.kafka, "group.id": self.group, "client.id": client_id,
            "partition.assignment.strategy": "range", "session.timeout.ms": SESSION_MS,
        })  # fmt: skip
        consumer.subscribe([self.topic], on_assign=note("assign"), on_revoke=note("revoke"))
        try:
            while not self._stop.is_set():
                consumer.poll(0.1)
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stop.set()


def test_consumers_started_together_share_the_first_generation(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    """group.initial.rebalance.delay.ms at Kafka's 3 s (the test clusters have 0): two
    confluent-kafka consumers subscribing to a fresh group half a second apart are assigned in
    one generation. Each one's first assignment is its share, and nobody revokes: without the
    delay the first takes every partition and gives half back in a second generation."""
    cluster = cluster_factory(1, broker_settings={"group_initial_rebalance_delay_ms": 3000})
    s = Scenario.new(cluster, tmp_path, "delay", partitions=4)
    members = [Rebalances(s.kafka, s.group, s.topic) for _ in range(2)]
    threads = [members[0].start("first")]
    time.sleep(0.5)  # not synchronisation: the second consumer starts a little later on purpose
    threads.append(members[1].start("second"))
    try:
        wire.wait_for(lambda: all(m.events for m in members), "both to be assigned", CONVERGE_S)
        first, second = (list(m.events) for m in members)  # before close() revokes
    finally:
        for m in members:
            m.stop()
        for t in threads:
            t.join(30)
    assert [kind for kind, _ in first + second] == ["assign", "assign"], (first, second)
    assert sorted(first[0][1] + second[0][1]) == [0, 1, 2, 3] and first[0][1] and second[0][1]


# ----- odradek groups on a Kafka group -------------------------------------------------------


def _cli(cluster: LocalCluster, *args: str) -> tuple[int, str, str]:
    done = run_odradek(*args, "--bootstrap", cluster.bootstrap)
    return done.returncode, done.stdout, done.stderr


def _rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    assert lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                "LOG-END-OFFSET", "LAG", "OWNER"], out  # fmt: skip
    return sorted(line.split() for line in lines[2:])


def test_cli_describes_resets_and_deletes_a_kafka_group(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    """`odradek groups describe` shows a kafka-python group's lag and owner (client id@host);
    reset and delete are refused while it has members, and work once it is Empty."""
    s = Scenario.new(cluster3, tmp_path, "cli", partitions=3)
    s.produce(10)
    # a long session: the member stays in the group while paused below
    kp = s.start("kafka-python", "kp-cli", session_ms=60_000, max_poll_ms=60_000)
    try:
        s.converge([kp])
        s.wait_all_committed()
        kp.pause()  # still a member, reading nothing: lag builds up
        try:
            s.produce(5)
            code, out, err = _cli(cluster3, "groups", "describe", s.group)
            assert code == 0, err
            header = out.splitlines()[0]
            assert "Kafka group (protocol type consumer)" in header, header
            assert "state Stable" in header and "assignor range" in header, header
            # one join: the member knew its topic's partitions when it joined (else
            # kafka-python rejoins by itself, and the pause above may catch it half done)
            assert "generation 1," in header, header
            owner = "kp-cli@/127.0.0.1"
            assert _rows(out) == [[s.group, s.topic, str(p), "10", "15", "5", owner]
                                  for p in range(3)]  # fmt: skip
            code, out, _ = _cli(cluster3, "groups", "list")
            rows = [r.split() for r in out.splitlines()]
            assert code == 0 and [s.group, "Stable", "consumer", "classic"] in rows, out
            code, _, err = _cli(cluster3, "groups", "reset-offsets", s.group, "--topic",
                                s.topic, "--to-earliest")  # fmt: skip
            assert code == 1 and "has members" in err and "Stable" in err, err
            code, _, err = _cli(cluster3, "groups", "delete", s.group)
            assert code == 1 and "has members" in err, err
        finally:
            kp.resume()
        s.wait_all_committed()  # it catches up: lag 0
        kp.close()
    finally:
        s.stop_all()
    code, out, _ = _cli(cluster3, "groups", "describe", s.group)
    assert code == 0 and "state Empty" in out.splitlines()[0], out
    assert _rows(out) == [[s.group, s.topic, str(p), "15", "15", "0", "-"] for p in range(3)]
    code, out, err = _cli(cluster3, "groups", "reset-offsets", s.group, "--topic", s.topic,
                          "--to-offset", "2")  # fmt: skip
    assert code == 0, err
    code, out, _ = _cli(cluster3, "groups", "describe", s.group)
    assert _rows(out) == [[s.group, s.topic, str(p), "2", "15", "13", "-"] for p in range(3)]
    assert s.committed() == {0: 2, 1: 2, 2: 2}  # Kafka's OffsetFetch sees the reset
    code, _, err = _cli(cluster3, "groups", "delete", s.group)
    assert code == 0, err
    code, _, err = _cli(cluster3, "groups", "describe", s.group)
    assert code == 1 and "GROUP_ID_NOT_FOUND" in err, err


def test_a_kip848_consumer_that_only_assigns_commits(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    """confluent-kafka with group.protocol=consumer that assign()s instead of subscribing, then
    commits: the commit goes through and committed() reads it back, as with the classic
    protocol (librdkafka sends its own member id with epoch -1; Kafka takes a commit with a
    negative epoch into a group with no members, whatever the member id)."""
    s = Scenario.new(cluster3, tmp_path, "assign848", partitions=2)
    consumer = ConfluentConsumer({
        "bootstrap.servers": s.kafka, "group.id": s.group, "group.protocol": "consumer",
        "enable.auto.commit": False,
    })  # fmt: skip
    try:
        consumer.assign([TopicPartition(s.topic, 0), TopicPartition(s.topic, 1)])
        offsets = [TopicPartition(s.topic, 0, 3), TopicPartition(s.topic, 1, 5)]
        done = consumer.commit(offsets=offsets, asynchronous=False)
        assert done is not None and all(tp.error is None for tp in done), done
        got = consumer.committed([TopicPartition(s.topic, 0), TopicPartition(s.topic, 1)],
                                 timeout=CONVERGE_S)  # fmt: skip
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 3), (1, 5)]
    finally:
        consumer.close()
    assert s.committed() == {0: 3, 1: 5}
