"""JBOD (KIP-112/KIP-113) on a real cluster whose brokers have two log directories each
(`cluster up --log-dirs-per-broker 2`; the first of each is a small tmpfs, so one can fill up):

- kafka-python's alter_replica_log_dirs moves a leader's replica to its other directory while a
  confluent-kafka producer and consumer keep going; describe_log_dirs shows the future replica
  (is_future_key) while the copy runs (throttled by
  replica_alter_log_dirs_io_max_bytes_per_second), then the replica in its new directory; every
  acknowledged record is read back once, in order; after a restart the partition is still in
  its new directory;
- a full directory takes only its own partitions offline: the controller moves their leadership
  away, while the broker keeps leading and serving the partitions of its other directory, and
  DescribeLogDirs answers KAFKA_STORAGE_ERROR for the failed directory.

Needs root (the tmpfs).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from client import Admin, PartitionDescription
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import shared_cluster, wait_until

pytestmark = pytest.mark.integration

WAIT_S = 60.0
KAFKA_STORAGE_ERROR = 56
MOVE_BYTES_PER_SECOND = 200_000  # the copy of ~1.2 MB takes about 6 s: the future is seen
# records a second produced during the move, ~210 bytes each: well under the copy's rate, so
# the copy catches up (as in Kafka, a move never ends while the log grows faster)
PACED_RECORDS_PER_SECOND = 200
TMPFS_MB = 16


@pytest.fixture(scope="module")
def jbod(zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    if os.geteuid() != 0:
        pytest.skip("the first log directory of each broker is a tmpfs: needs root")
    settings = {"replica_alter_log_dirs_io_max_bytes_per_second": MOVE_BYTES_PER_SECOND}
    yield from shared_cluster(zk_server, tmp_path_factory, 3, log_dirs_per_broker=2,
                              tmpfs_mb=TMPFS_MB, broker_settings=settings)  # fmt: skip


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _kafka_admin(cluster: LocalCluster) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap, request_timeout_ms=30_000)


def _partitions(cluster: LocalCluster, topic: str) -> list[PartitionDescription]:
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    return [] if d.error_code else sorted(d.partitions, key=lambda p: p.partition)


def _create(cluster: LocalCluster, topic: str, assignment: dict[int, list[int]]) -> None:
    from kafka.admin import NewTopic as KafkaNewTopic

    kp = _kafka_admin(cluster)
    try:
        kp.create_topics([KafkaNewTopic(topic, replica_assignments=assignment)])
    finally:
        kp.close()

    def led() -> bool:
        parts = _partitions(cluster, topic)
        return len(parts) == len(assignment) and all(
            p.leader == assignment[p.partition][0] and len(p.isr) == len(p.replicas) for p in parts
        )

    wait_until(led, f"{topic} led by its preferred replicas, all in sync", WAIT_S)


def _log_dirs(cluster: LocalCluster, broker: int, topic: str) -> dict[str, Any]:
    """{log dir: {"error": code, "partitions": {(partition, is_future): (size, lag)}}}."""
    kp = _kafka_admin(cluster)
    try:
        (entry,) = kp.describe_log_dirs([topic], brokers=[broker])
    finally:
        kp.close()
    return {
        d["log_dir"]: {
            "error": d["error_code"],
            "partitions": {
                (p["partition_index"], p["is_future_key"]): (p["partition_size"], p["offset_lag"])
                for t in d["topics"] if t["name"] == topic for p in t["partitions"]
            },
        }
        for d in entry["log_dirs"]
    }  # fmt: skip


def _dir_of(dirs: dict[str, Any], partition: int) -> str:
    (where,) = [d for d, v in dirs.items() if (partition, False) in v["partitions"]]
    return where


def _move(cluster: LocalCluster, topic: str, partition: int, broker: int, to: str) -> None:
    from kafka import TopicPartitionReplica
    from kafka.errors import NoError

    kp = _kafka_admin(cluster)
    try:
        replica = TopicPartitionReplica(topic, partition, broker)
        assert kp.alter_replica_log_dirs({replica: to}) == {replica: NoError}
    finally:
        kp.close()


class Traffic:
    """A confluent-kafka producer (acks=all) and consumer on one partition, in threads, until
    `stop`: what was acknowledged (offset -> value) and what was read (offset, value)."""

    def __init__(
        self, cluster: LocalCluster, topic: str, first: int = 0, paced: bool = False
    ) -> None:
        self.cluster, self.topic, self.first = cluster, topic, first
        self.pause_s = 1 / PACED_RECORDS_PER_SECOND if paced else 0.002
        self.acked: dict[int, bytes] = {}
        self.read: list[tuple[int, bytes]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._produce),
            threading.Thread(target=self._consume),
        ]

    def __enter__(self) -> Traffic:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(WAIT_S)

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.cluster.kafka_bootstrap, "acks": "all",
                             "linger.ms": 5, "enable.idempotence": True})  # fmt: skip

        def done(err: Any, msg: Any) -> None:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acked[msg.offset()] = msg.value()

        i = self.first
        while not self._stop.is_set():
            producer.produce(self.topic, b"v%06d" % i + b"." * 200, partition=0, on_delivery=done)
            producer.poll(0)  # delivery reports
            self._stop.wait(self.pause_s)  # the pace (a load generator's, not a wait for state)
            i += 1
        assert producer.flush(WAIT_S) == 0

    def _consume(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.cluster.kafka_bootstrap,
                             "group.id": uuid.uuid4().hex,
                             "enable.auto.commit": False})  # fmt: skip
        consumer.assign([TopicPartition(self.topic, 0, 0)])
        try:
            while not self._stop.is_set():
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    self.read.append((msg.offset(), msg.value()))
        finally:
            consumer.close()


def _read_all(cluster: LocalCluster, topic: str, end: int) -> list[tuple[int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while (not got or got[-1][0] < end - 1) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    return got


def _eventually(check: Callable[[], Any], what: str) -> Any:
    return wait_until(check, what, WAIT_S)


def test_a_replica_moves_to_its_other_dir_while_produced_and_consumed(jbod: LocalCluster) -> None:
    cluster = jbod
    topic = _topic("jbod-move")
    leader, follower = 1, 2
    _create(cluster, topic, {0: [leader, follower]})
    with Traffic(cluster, topic) as warm:  # about 1.2 MB before the move
        _eventually(lambda: len(warm.acked) >= 5000 or None, "5,000 records acknowledged")
    before = _log_dirs(cluster, leader, topic)
    source = _dir_of(before, 0)
    (destination,) = set(before) - {source}

    with Traffic(cluster, topic, first=len(warm.acked), paced=True) as traffic:
        _move(cluster, topic, 0, leader, destination)

        def future_seen() -> bool:
            found = _log_dirs(cluster, leader, topic)
            return (0, True) in found[destination]["partitions"]

        _eventually(future_seen, "the future replica in the destination (is_future_key)")

        def moved() -> dict[str, Any] | None:
            found = _log_dirs(cluster, leader, topic)
            done = set(found[destination]["partitions"]) == {(0, False)}
            return found if done and not found[source]["partitions"] else None

        after = _eventually(moved, "the replica in its new directory, no future left")
        written = len(traffic.acked)
        _eventually(lambda: len(traffic.acked) > written + 100, "more records acknowledged")
    assert not traffic.errors, traffic.errors[:3]
    assert after[destination]["partitions"][(0, False)][1] == 0  # its lag
    assert (Path(destination) / f"{topic}-0").is_dir()
    assert not (Path(source) / f"{topic}-0").exists()

    acked = {**warm.acked, **traffic.acked}
    got = _read_all(cluster, topic, max(acked) + 1)
    assert [o for o, _ in got] == list(range(len(got)))  # once each, in order
    assert {o: v for o, v in got if o in acked} == acked  # every acknowledged record
    assert traffic.read and all(dict(got)[o] == v for o, v in traffic.read)  # read during it

    cluster.kill(leader, "TERM")
    cluster.start(leader)
    _eventually(lambda: sorted(_partitions(cluster, topic)[0].isr) == [leader, follower] or None,
                "the restarted broker back in sync")  # fmt: skip
    found = _eventually(lambda: _log_dirs(cluster, leader, topic) or None, "DescribeLogDirs")
    assert _dir_of(found, 0) == destination
    assert [o for o, _ in _read_all(cluster, topic, max(acked) + 1)] == [o for o, _ in got]


def test_a_move_asked_before_the_replica_exists_places_it(jbod: LocalCluster) -> None:
    """Kafka's preferred log dir: REPLICA_NOT_AVAILABLE now, and the replica a reassignment
    then brings to the broker is created in the directory asked, not the emptier one."""
    from kafka import TopicPartition, TopicPartitionReplica
    from kafka.errors import ReplicaNotAvailableError

    cluster = jbod
    topic = _topic("jbod-later")
    newcomer = 3
    _create(cluster, topic, {0: [1, 2]})
    kp = _kafka_admin(cluster)
    try:
        (entry,) = kp.describe_log_dirs(brokers=[newcomer])
        counts = {d["log_dir"]: sum(len(t["partitions"]) for t in d["topics"])
                  for d in entry["log_dirs"]}  # fmt: skip
        emptier = min(counts, key=lambda d: counts[d])  # where it goes unasked (ties: the first)
        (asked,) = set(counts) - {emptier}
        replica = TopicPartitionReplica(topic, 0, newcomer)
        assert kp.alter_replica_log_dirs({replica: asked}) == {replica: ReplicaNotAvailableError}
        tp = TopicPartition(topic, 0)
        assert kp.alter_partition_reassignments({tp: [1, 2, newcomer]}) == {tp: None}
    finally:
        kp.close()
    _eventually(lambda: newcomer in _partitions(cluster, topic)[0].isr, f"{newcomer} in sync")
    assert _dir_of(_log_dirs(cluster, newcomer, topic), 0) == asked


def test_a_full_dir_takes_only_its_partitions_offline(jbod: LocalCluster) -> None:
    cluster = jbod
    victim, other = 3, 1
    topic = _topic("jbod-full")
    _create(cluster, topic, {0: [victim, other], 1: [victim, other]})
    first = cluster.broker(victim).log_dir  # the tmpfs
    dirs = _log_dirs(cluster, victim, topic)
    (second,) = set(dirs) - {str(Path(first).absolute())}
    full, serving = (0, 1) if _dir_of(dirs, 0) != second else (1, 0)
    _move(cluster, topic, serving, victim, second)  # empty: moved at once
    _move(cluster, topic, full, victim, str(Path(first).absolute()))
    _eventually(lambda: _dir_of(_log_dirs(cluster, victim, topic), serving) == second
                and _dir_of(_log_dirs(cluster, victim, topic), full) != second,
                "one partition in each directory")  # fmt: skip

    ballast = Path(first) / "ballast"
    try:
        _fill(ballast)
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap, "acks": "all",
                             "message.timeout.ms": 60_000})  # fmt: skip
        delivered: list[tuple[int, int]] = []

        def done(err: Any, msg: Any) -> None:
            if err is None:
                delivered.append((msg.partition(), msg.offset()))

        for _ in range(400):  # ~3 MB to the full partition: its directory fails on the way
            producer.produce(topic, b"x" * 8000, partition=full, on_delivery=done)
            producer.poll(0)
        # delivered after the controller moved the leadership (or failed at the timeout)
        assert producer.flush(2 * WAIT_S) == 0

        def moved() -> list[PartitionDescription] | None:
            parts = _partitions(cluster, topic)
            ok = parts[full].leader == other and victim not in parts[full].isr
            return parts if ok and victim in parts[full].offline_replicas else None

        parts = _eventually(moved, f"{topic}-{full} led by {other}, {victim} out of its ISR")
        assert parts[serving].leader == victim and victim in parts[serving].isr, parts
        assert parts[serving].offline_replicas == [], parts
        found = _log_dirs(cluster, victim, topic)
        assert found[str(Path(first).absolute())]["error"] == KAFKA_STORAGE_ERROR, found
        assert found[second]["error"] == 0, found
        assert (serving, False) in found[second]["partitions"], found
        log_text = (cluster.dir / f"broker-{victim}.log").read_text(errors="replace")
        assert "ENOSPC" in log_text and "is offline" in log_text

        for i in range(50):  # the broker still leads and serves its other directory's partition
            producer.produce(topic, b"ok-%d" % i, partition=serving, on_delivery=done)
        assert producer.flush(WAIT_S) == 0
        assert sum(1 for p, _ in delivered if p == serving) == 50, delivered[-60:]
        assert cluster.broker_states()[victim] == "alive"
    finally:
        ballast.unlink(missing_ok=True)
        cluster.kill(victim, "TERM")
        cluster.start(victim)


def _fill(path: Path) -> None:
    """A ballast file leaving about 64 KiB free on the volume of `path`."""
    st = os.statvfs(path.parent)
    size = st.f_bavail * st.f_frsize - 64 * 1024
    chunk = b"\0" * (1 << 20)
    with open(path, "wb") as f:
        while size > 0:
            f.write(chunk[: min(size, len(chunk))])
            size -= len(chunk)
