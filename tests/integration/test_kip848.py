"""KIP-848 consumer groups (group.protocol=consumer) with real confluent-kafka consumers.

Members are tests/integration/kafka_group_member.py processes (confluent-kafka with
--group-protocol; process, write, then commit), closed (SIGTERM: leave with epoch -1) or
SIGKILLed (fenced when the session, 6 s here, expires). An `OwnerWatch` thread samples
ConsumerGroupDescribe at the coordinator every 100 ms: no partition is ever in two members'
current assignments; the committed offsets (OffsetFetch) never go
back. The coordinator's broker is SIGKILLed while the group reconciles, and the group converges
on the new coordinator, which loaded it from the KIP-848 records. Also: a classic group and a
consumer group on one topic; an empty group taken over by the other protocol both ways; a
classic member served inside a consumer group. Every wait is a poll with a deadline.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import pytest

from client import Admin, Producer
from client.types import NewTopic
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.kafka.versions import CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT
from tests.fixtures.cluster import ClusterFactory, run_odradek, shared_cluster
from tests.integration import kafka_wire as wire
from tests.integration.kafka_clients import GroupMember, processed_by

pytestmark = pytest.mark.integration

PARTITIONS = 6
GROUP_ID_NOT_FOUND = 69
SESSION_MS = 6000
CONVERGE_S = 90.0
MEMBER_SCRIPT = Path(__file__).with_name("kafka_group_member.py")
SETTINGS: dict[str, int | bool | str] = {
    "group_consumer_session_timeout_ms": SESSION_MS,
    "group_consumer_heartbeat_interval_ms": 500,
    # below Kafka's bounds (45-60 s, 5-15 s); a group's configs must stay within these
    "group_consumer_min_session_timeout_ms": 5000,
    "group_consumer_max_session_timeout_ms": 20_000,
    "group_consumer_min_heartbeat_interval_ms": 200,
    "group_consumer_max_heartbeat_interval_ms": 5000,
}


@pytest.fixture(scope="module")
def cluster(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """The module's cluster with these settings (the test that kills its coordinator makes its
    own)."""
    yield from shared_cluster(zk_server, tmp_path_factory, 3, broker_settings=SETTINGS)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class View:
    coordinator: int
    state: str
    group_epoch: int
    owners: dict[int, list[str]]  # partition -> client ids whose current assignment holds it
    clients: set[str]


def describe(kafka: str, group: str) -> View | None:
    """ConsumerGroupDescribe v1 at the coordinator; None when it cannot answer just now."""
    found = wire.find_coordinator(kafka, group)
    if found is None:
        return None
    try:
        resp = wire.call(
            found[1],
            CONSUMER_GROUP_DESCRIBE,
            1,
            group_ids=(group,),
            include_authorized_operations=False,
        )
    except OSError:
        return None
    (g,) = resp.groups
    if g.error_code.value:
        return None
    owners: dict[int, list[str]] = {}
    for m in g.members:
        for tp in m.assignment.topic_partitions:
            for p in tp.partitions:
                owners.setdefault(int(p), []).append(m.client_id)
    return View(
        found[0], g.group_state, int(g.group_epoch), owners, {m.client_id for m in g.members}
    )


@dataclass
class Group:
    cluster: LocalCluster
    tmp_path: Path
    topic: str
    group: str
    members: list[GroupMember] = field(default_factory=list)
    ends: dict[int, int] = field(default_factory=dict)

    @property
    def kafka(self) -> str:
        return self.cluster.kafka_bootstrap

    def start(
        self,
        client_id: str,
        protocol: str = "consumer",
        assignor: str | None = None,
        group: str | None = None,
        instance_id: str | None = None,
        topic: str | None = None,
    ) -> GroupMember:
        out = self.tmp_path / f"{client_id}.out"
        args = [
            sys.executable,
            str(MEMBER_SCRIPT),
            "--bootstrap",
            self.kafka,
            "--group",
            group or self.group,
            "--topic",
            topic or self.topic,
            "--client-id",
            client_id,
            "--out",
            str(out),
            "--client",
            "confluent-kafka",
            "--group-protocol",
            protocol,
            "--session-ms",
            str(SESSION_MS),
        ]
        if assignor:
            args += ["--assignor", assignor]
        if instance_id:
            args += ["--instance-id", instance_id]
        with out.with_suffix(".err").open("ab") as err:
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
            )
        m = GroupMember("confluent-kafka", client_id, out, proc)
        self.members.append(m)
        return m

    def produce(self, per_partition: int) -> None:
        with Producer(self.cluster.bootstrap, acks="all", linger_ms=2) as producer:
            futures = [
                producer.send(self.topic, b"v%d" % i, partition=p)
                for p in range(PARTITIONS)
                for i in range(per_partition)
            ]
            producer.flush()
            for f in futures:
                md = f.result(60)
                self.ends[md.partition] = max(self.ends.get(md.partition, 0), md.offset + 1)

    def converge(self, live: list[GroupMember]) -> View:
        want = {m.client_id for m in live}

        def check() -> View | None:
            v = describe(self.kafka, self.group)
            ok = (
                v is not None
                and v.state == "Stable"
                and v.clients == want
                and sorted(v.owners) == list(range(PARTITIONS))
            )
            return v if ok else None

        view: View = wire.wait_for(check, f"{self.group} to converge on {sorted(want)}", CONVERGE_S)
        return view

    def committed(self) -> dict[int, int]:
        got = wire.committed(self.kafka, self.group) or {}
        return {p: o for (t, p), o in got.items() if t == self.topic}

    def wait_all_committed(self) -> None:
        wire.wait_for(
            lambda: self.committed() == self.ends, f"{self.group} to commit {self.ends}", CONVERGE_S
        )

    def check_all_processed(self) -> None:
        wanted = {(p, o) for p, end in self.ends.items() for o in range(end)}
        missing = wanted - processed_by(self.members)
        assert not missing, f"never processed: {sorted(missing)[:10]}"

    def stop_all(self) -> None:
        for m in self.members:
            m.stop()


def said(m: GroupMember) -> str:
    """What a member wrote and logged so far."""
    out = m.out.read_text(errors="replace") if m.out.exists() else ""
    return out + m.err_tail(200)


class GroupWatch:
    """A thread that looks at the group every 100 ms (`look`, each subclass's) until the
    with-block ends, and at its committed offsets, which must never go back (`backwards`)."""

    def __init__(self, g: Group) -> None:
        self.g = g
        self.backwards: list[str] = []
        self.samples = 0
        self._last: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def look(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.look()
            for p, o in self.g.committed().items():
                if o < self._last.get(p, -1):
                    self.backwards.append(f"partition {p}: {self._last[p]} -> {o}")
                self._last[p] = o


class OwnerWatch(GroupWatch):
    """No partition in two members' assignments, no committed offset going back."""

    def __init__(self, g: Group) -> None:
        super().__init__(g)
        self.doubles: list[str] = []

    def look(self) -> None:
        v = describe(self.g.kafka, self.g.group)
        if v is not None:
            self.samples += 1
            self.doubles += [f"partition {p}: {o}" for p, o in v.owners.items() if len(o) > 1]

    def check(self) -> None:
        assert self.samples > 0, "ConsumerGroupDescribe never answered"
        assert not self.doubles, self.doubles[:5]
        assert not self.backwards, self.backwards[:5]


@contextlib.contextmanager
def scenario(cluster: LocalCluster, tmp_path: Path, prefix: str) -> Iterator[Group]:
    topic, group = _name(f"{prefix}-t"), _name(f"{prefix}-g")
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 3)])

        def led() -> bool:
            (d,) = admin.describe_topics([topic])
            return (
                not d.error_code and bool(d.partitions) and all(p.leader >= 0 for p in d.partitions)
            )

        wire.wait_for(led, f"{topic} to have leaders", 30)
    g = Group(cluster, tmp_path, topic, group)
    try:
        yield g
    finally:
        g.stop_all()


@pytest.mark.slow  # kills or pauses brokers
def test_members_join_leave_die_and_the_coordinator_dies(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    cluster = cluster_factory(3, broker_settings=SETTINGS)
    with scenario(cluster, tmp_path, "k848") as g, OwnerWatch(g) as watch:
        g.produce(200)
        m1, m2 = g.start("m1"), g.start("m2")
        view = g.converge([m1, m2])
        # `odradek groups describe` and `list` show the consumer group (native door)
        done = run_odradek("groups", "describe", g.group, "--bootstrap", cluster.bootstrap)
        header, *lines = done.stdout.splitlines() or [""]
        # the partition rows: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG OWNER
        rows = [line for line in lines if line.split()[:2] == [g.group, g.topic]]
        assert done.returncode == 0 and "assignor uniform" in header, done.stdout + done.stderr
        assert f"generation {view.group_epoch}," in header, header
        owners = {r.split()[2]: r.split()[-1].split("@")[0] for r in rows}
        assert owners == {str(p): o[0] for p, o in view.owners.items()}, done.stdout
        done = run_odradek("groups", "list", "--bootstrap", cluster.bootstrap)
        assert [g.group, "Stable", "consumer", "consumer"] in [  # KIND, TYPE
            r.split() for r in done.stdout.splitlines()
        ]
        m3 = g.start("m3")
        g.converge([m1, m2, m3])
        g.produce(200)
        m1.close()  # leaves with epoch -1 at once
        g.converge([m2, m3])
        m2.kill()  # fenced when its session expires
        m4 = g.start("m4")
        view = g.converge([m3, m4])
        # the coordinator dies while a new member is being reconciled in
        m5 = g.start("m5")
        wire.wait_for(
            lambda: (v := describe(g.kafka, g.group)) and "m5" in v.clients,
            "m5 to join",
            CONVERGE_S,
        )
        cluster.kill(view.coordinator)
        g.produce(100)
        after = g.converge([m3, m4, m5])
        assert after.coordinator != view.coordinator
        g.wait_all_committed()
    watch.check()
    g.check_all_processed()


def test_classic_and_consumer_groups_and_conversion(cluster: LocalCluster, tmp_path: Path) -> None:
    with scenario(cluster, tmp_path, "k848mix") as g:
        g.produce(50)
        # a classic group beside a consumer group, on the same topic
        classic = g.start("c1", protocol="classic", group=g.group + "-classic")
        modern = g.start("n1")
        g.converge([modern])
        classic_view = wire.wait_converged(
            g.kafka, g.group + "-classic", g.topic, PARTITIONS, {"c1"}, CONVERGE_S
        )
        assert classic_view.state == "Stable"
        # a classic member joins the consumer group: served inside it (online migration,
        # test_kafka_group_migration.py); it leaves, and the group stays a consumer group
        inside = g.start("c2", protocol="classic")
        g.converge([modern, inside])
        inside.close()
        g.converge([modern])
        # empty the consumer group: a classic member takes it over
        modern.close()
        wire.wait_for(
            lambda: (v := describe(g.kafka, g.group)) and not v.clients,
            "the consumer group to be empty",
            CONVERGE_S,
        )
        back = g.start("c3", protocol="classic")
        wire.wait_converged(g.kafka, g.group, g.topic, PARTITIONS, {"c3"}, CONVERGE_S)
        back.close()
        # empty again: the consumer protocol takes it back
        n3 = g.start("n3")
        g.converge([n3])
        classic.close()


def test_a_static_member_comes_back_to_its_partitions(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """group.instance.id with the consumer protocol: closing leaves with epoch -2, so the
    member's partitions wait for it (no new group epoch); it comes back under a new member id
    and gets them again, still without a rebalance."""
    with scenario(cluster, tmp_path, "k848static") as g:
        g.produce(20)
        s1, other = g.start("s1", instance_id="i1"), g.start("o1")
        before = g.converge([s1, other])
        mine = sorted(p for p, o in before.owners.items() if o == ["s1"])
        s1.close()

        def parked() -> View | None:
            v = describe(g.kafka, g.group)
            return v if v is not None and v.clients == {"s1", "o1"} else None

        assert wire.wait_for(parked, "s1 to stay a member", 30).group_epoch == before.group_epoch
        back = g.start("s1", instance_id="i1")
        after = g.converge([back, other])
        assert sorted(p for p, o in after.owners.items() if o == ["s1"]) == mine
        assert after.group_epoch == before.group_epoch


def test_a_regex_subscription_is_resolved_by_the_coordinator(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """librdkafka subscribing to `^pattern` sends it as the heartbeat's subscribed_topic_regex;
    the coordinator matches it against the topics (a full match) and assigns them."""
    with scenario(cluster, tmp_path, "k848re") as g:
        g.produce(10)
        pattern = "^" + g.topic.rsplit("-", 1)[0] + "-[0-9a-f]+$"
        m = g.start("r1", topic=pattern)
        g.converge([m])
        found = wire.wait_for(lambda: wire.find_coordinator(g.kafka, g.group), "coordinator", 30)
        resp = wire.call(
            found[1],
            CONSUMER_GROUP_DESCRIBE,
            1,
            group_ids=(g.group,),
            include_authorized_operations=False,
        )
        (member,) = resp.groups[0].members
        # librdkafka 2.12 sends its patterns joined, e.g. "(^k848re-t-[0-9a-f]+$)"
        assert pattern in (member.subscribed_topic_regex or ""), member
        assert not member.subscribed_topic_names
        g.wait_all_committed()
    g.check_all_processed()


def test_group_configs_are_described_altered_and_given_to_members(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """KIP-848 group configs through confluent-kafka's AdminClient on a GROUP resource (type 32,
    refused before): IncrementalAlterConfigs sets the group's heartbeat interval and session
    timeout, DescribeConfigs (through every broker) shows them as GROUP_CONFIG with the
    broker's settings as synonyms, values outside the broker's group.consumer.min/max bounds
    and unknown names are INVALID_CONFIG, and a member joining the group (at the coordinator,
    which follows the change through ZooKeeper) is told the group's heartbeat interval."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )

    def change(name: str, value: str | None, op: AlterConfigOpType) -> ConfigResource:
        entry = ConfigEntry(name, value, incremental_operation=op)
        return ConfigResource(ResourceType.GROUP, g.group, incremental_configs=[entry])

    def refusal(res: ConfigResource) -> str:
        with pytest.raises(KafkaException) as refused:
            admin.incremental_alter_configs([res])[res].result(30)
        error = refused.value.args[0]
        assert error.code() == KafkaError.INVALID_CONFIG, error
        return str(error.str())

    with scenario(cluster, tmp_path, "gcfg") as g:
        admin = AdminClient({"bootstrap.servers": g.kafka})
        for name, value in (("consumer.heartbeat.interval.ms", "2000"),
                            ("consumer.session.timeout.ms", "9000")):  # fmt: skip
            res = change(name, value, AlterConfigOpType.SET)
            admin.incremental_alter_configs([res])[res].result(30)
        for port in cluster.kafka_bootstrap.split(","):  # each broker answers from ZooKeeper
            one = AdminClient({"bootstrap.servers": port})
            res = ConfigResource(ResourceType.GROUP, g.group)
            entries = one.describe_configs([res])[res].result(30)
            beat = entries["consumer.heartbeat.interval.ms"]
            assert (beat.value, beat.source) == ("2000", ConfigSource.GROUP_CONFIG.value)
            synonyms = beat.synonyms  # by name: the broker setting's two places are one
            assert list(synonyms) == ["consumer.heartbeat.interval.ms",
                                      "group.consumer.heartbeat.interval.ms"]  # fmt: skip
            assert synonyms["consumer.heartbeat.interval.ms"].source == beat.source
            assert entries["consumer.session.timeout.ms"].value == "9000"
        why = refusal(change("consumer.session.timeout.ms", "30000", AlterConfigOpType.SET))
        assert "group.consumer.max.session.timeout.ms" in why, why
        why = refusal(change("consumer.heartbeat.interval.ms", "100", AlterConfigOpType.SET))
        assert "group.consumer.min.heartbeat.interval.ms" in why, why
        assert "Unknown group config" in refusal(change("retention.ms", "1", AlterConfigOpType.SET))

        def joined_interval() -> int | None:
            found = wire.find_coordinator(g.kafka, g.group)
            if found is None:
                return None
            resp = wire.call(found[1], CONSUMER_GROUP_HEARTBEAT, 1, group_id=g.group,
                             member_id=f"probe-{uuid.uuid4().hex[:6]}", member_epoch=0,
                             rebalance_timeout=30_000, subscribed_topic_names=(g.topic,),
                             topic_partitions=())  # fmt: skip
            assert resp.error_code.value == 0, resp.error_message
            wire.call(
                found[1],
                CONSUMER_GROUP_HEARTBEAT,
                1,
                group_id=g.group,
                member_id=resp.member_id,
                member_epoch=-1,
                topic_partitions=None,
            )  # leave again
            return int(resp.heartbeat_interval.total_seconds() * 1000)

        wire.wait_for(lambda: joined_interval() == 2000, "the group's heartbeat interval", 30)
        res = change("consumer.heartbeat.interval.ms", None, AlterConfigOpType.DELETE)
        admin.incremental_alter_configs([res])[res].result(30)
        wire.wait_for(lambda: joined_interval() == 500, "the broker's heartbeat interval", 30)


def test_a_consumer_group_member_commits_its_offsets_in_a_transaction(
    cluster: LocalCluster,
) -> None:
    """Exactly-once with group.protocol=consumer: send_offsets_to_transaction carries the
    member's id and epoch, which the group coordinator checks against the consumer group's
    members (Kafka's ConsumerGroup.validateOffsetCommit), not the classic member list."""
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka import Producer as KProducer
    from confluent_kafka import TopicPartition as KTp

    topic, group = _name("kip848-eos"), _name("kip848-eos-group")
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 3)])
    with Producer(cluster.bootstrap, acks="all") as producer:
        for i in range(3):
            producer.send(topic, b"%d" % i, partition=0)
    consumer = Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})  # fmt: skip
    txn = KProducer({"bootstrap.servers": cluster.kafka_bootstrap,
                     "transactional.id": _name("kip848-eos-txn")})  # fmt: skip
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + CONVERGE_S
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert got == [b"0", b"1", b"2"]
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce(topic, b"derived", partition=0)
        txn.send_offsets_to_transaction(consumer.position([KTp(topic, 0)]),
                                        consumer.consumer_group_metadata(), 30)  # fmt: skip
        try:
            txn.commit_transaction(30)
        except KafkaException as exc:  # the member's commit refused: say which error
            pytest.fail(f"the transaction's offset commit was refused: {exc}")
        (committed,) = consumer.committed([KTp(topic, 0)], timeout=30)
        assert committed.offset == 3
    finally:
        consumer.close()
