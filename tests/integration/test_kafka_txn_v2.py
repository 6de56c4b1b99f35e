"""Transaction version 2 (KIP-890 part 2) on a real three-broker cluster, driven by hand over
Kafka's wire protocol: neither librdkafka 2.12 nor kafka-python 3 uses it (Kafka's Java
producer does, when ApiVersions finalizes transaction.version 2), so the test is the producer.

A TV2 producer sends no AddPartitionsToTxn and no AddOffsetsToTxn: Produce v12 and
TxnOffsetCommit v5 add their partitions to the transaction. EndTxn v5 bumps the epoch and
answers it; the markers carry the bumped epoch, so a late batch of the ended transaction is
refused (INVALID_PRODUCER_EPOCH) instead of joining the next one; a lost answer is retried and
answered again; an abort with nothing open bumps the epoch too. A read_committed consumer
(confluent-kafka) then reads exactly the committed records. A coordinator killed after
PrepareCommit (coordinator/transaction/hold.py) leaves the next one to write the markers at the
bumped epoch it loads from `__transaction_state`. TV1 producers (EndTxn v0-v4, every
Python client) are the other transaction tests, unchanged.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.transaction.hold import DIR_ENV, ENV
from deploy.cluster import LocalCluster
from protocol.batch import build_batch_from_values
from protocol.kafka import versions as v
from tests.fixtures.cluster import ClusterFactory
from tests.integration.kafka_wire import Address, KafkaConn, addresses, committed, nested

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0
NONE = 0
INVALID_PRODUCER_EPOCH = 47
PRODUCER_FENCED = 90
LEADER_NOT_AVAILABLE = 5
# a coordinator being created, moving or loading, markers being written, a timeout
RETRIABLE = frozenset({LEADER_NOT_AVAILABLE, 7, 14, 15, 16, 51})


def retry(ask: Callable[[], int], what: str) -> None:
    """Ask until the answer is not retriable; the last answer must be NONE."""
    deadline = time.monotonic() + TIMEOUT_S
    while (code := ask()) in RETRIABLE and time.monotonic() < deadline:
        time.sleep(0.05)
    assert code == NONE, f"{what}: error {code}"


def init_producer_id(coordinator: Callable[[], Address], tid: str) -> tuple[int, int]:
    """(producer id, epoch) from InitProducerId v5 at `coordinator()` (asked again on each
    retriable answer: the coordinator may move)."""
    ids: list[tuple[int, int]] = []

    def init() -> int:
        with KafkaConn(coordinator()) as conn:
            resp = conn.call(v.INIT_PRODUCER_ID, 5, transactional_id=tid, producer_id=-1,
                             transaction_timeout=60_000, producer_epoch=-1)  # fmt: skip
        ids.append((int(resp.producer_id), int(resp.producer_epoch)))
        return int(resp.error_code.value)

    retry(init, "InitProducerId")
    return ids[-1]


class Cluster:
    """Addresses of the cluster's brokers on their Kafka listeners, by node id."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.bootstrap = cluster.kafka_bootstrap
        meta = self.call(v.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False)  # fmt: skip
        self.nodes = {int(b.node_id): (b.host, int(b.port)) for b in meta.brokers}

    def call(self, key: int, version: int, /, **fields: Any) -> Any:
        """Ask the first broker that answers (one may have been killed)."""
        for address in addresses(self.bootstrap):
            try:
                with KafkaConn(address) as conn:
                    return conn.call(key, version, **fields)
            except OSError:
                continue
        raise AssertionError("no broker answers")

    def leader(self, topic: str) -> Address:
        def ask() -> int:
            meta = self.call(v.METADATA, 12, topics=(nested(
                v.METADATA, 12, "MetadataRequestTopic", name=topic, topic_id=None),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False)  # fmt: skip
            (t,) = meta.topics
            if t.error_code.value or not t.partitions or int(t.partitions[0].leader_id) < 0:
                return LEADER_NOT_AVAILABLE  # not ready yet
            found.append(int(t.partitions[0].leader_id))
            return NONE

        found: list[int] = []
        retry(ask, f"the leader of {topic}")
        return self.nodes[found[-1]]

    def coordinator(self, key: str, key_type: int) -> Address:
        found: list[Address] = []

        def ask() -> int:
            resp = self.call(v.FIND_COORDINATOR, 3, key=key, key_type=key_type)
            found.append((resp.host, int(resp.port)))
            return int(resp.error_code.value)

        retry(ask, f"the coordinator of {key}")
        return found[-1]


@pytest.fixture(scope="module")
def wire(cluster3: LocalCluster) -> Iterator[Cluster]:
    yield Cluster(cluster3)


def produce(leader: Address, tid: str, topic: str, pid: int, epoch: int, seq: int,
            *values: bytes) -> int:  # fmt: skip
    """A transactional batch by Produce v12 (TV2): the leader adds the partition itself."""
    batch = build_batch_from_values(list(values), int(time.time() * 1000), producer_id=pid,
                                    producer_epoch=epoch, base_sequence=seq,
                                    transactional=True)  # fmt: skip
    with KafkaConn(leader) as conn:
        resp = conn.call(v.PRODUCE, 12, transactional_id=tid, acks=-1, timeout=10_000,
                         topic_data=(nested(v.PRODUCE, 12, "TopicProduceData", name=topic,
                                            partition_data=(nested(
                                                v.PRODUCE, 12, "PartitionProduceData",
                                                index=0, records=batch),)),))  # fmt: skip
    return int(resp.responses[0].partition_responses[0].error_code.value)


def end(coordinator: Address, tid: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    with KafkaConn(coordinator) as conn:
        resp = conn.call(v.END_TXN, 5, transactional_id=tid, producer_id=pid,
                         producer_epoch=epoch, committed=commit)  # fmt: skip
    return int(resp.error_code.value), int(resp.producer_id), int(resp.producer_epoch)


def described(coordinator: Address, tid: str) -> Any:
    with KafkaConn(coordinator) as conn:
        resp = conn.call(v.DESCRIBE_TRANSACTIONS, 0, transactional_ids=(tid,))
    (state,) = resp.transaction_states
    return state


def partition_epoch(leader: Address, topic: str, pid: int) -> int:
    """The producer's epoch as the partition knows it (DescribeProducers): a marker sets it."""
    with KafkaConn(leader) as conn:
        resp = conn.call(
            v.DESCRIBE_PRODUCERS,
            0,
            topics=(
                nested(v.DESCRIBE_PRODUCERS, 0, "TopicRequest", name=topic, partition_indexes=(0,)),
            ),
        )
    rows = resp.topics[0].partitions[0].active_producers
    return next((int(r.producer_epoch) for r in rows if int(r.producer_id) == pid), -1)


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_api_versions_finalize_transaction_version_2(wire: Cluster) -> None:
    address = addresses(wire.bootstrap)[0]
    for version in (3, 4):
        with KafkaConn(address) as conn:
            resp = conn.call(v.API_VERSIONS, version, client_software_name="wire-test",
                             client_software_version="1")  # fmt: skip
        finalized = {f.name: (int(f.min_version_level), int(f.max_version_level))
                     for f in resp.finalized_features}  # fmt: skip
        supported = {f.name: (int(f.min_version), int(f.max_version))
                     for f in resp.supported_features}  # fmt: skip
        assert finalized["transaction.version"] == (2, 2)
        assert int(resp.finalized_features_epoch) >= 0
        # below v4 a supported minimum of 0 is left out, as Kafka does (KAFKA-17011)
        assert supported.get("transaction.version") == ((0, 2) if version == 4 else None)
        served = {int(k.api_key): int(k.max_version) for k in resp.api_keys}
        assert (served[v.END_TXN], served[v.ADD_PARTITIONS_TO_TXN]) == (5, 5)
        assert served[v.TXN_OFFSET_COMMIT] == 5 and served[v.PRODUCE] >= 12


def test_each_end_bumps_the_epoch_and_fences_a_late_batch(
    cluster3: LocalCluster, wire: Cluster
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, tid, group = (f"tv2-{uuid.uuid4().hex[:8]}" for _ in range(3))
    admin = AdminClient({"bootstrap.servers": wire.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(TIMEOUT_S)
    leader = wire.leader(topic)
    coordinator = wire.coordinator(tid, 1)

    pid, epoch = init_producer_id(lambda: coordinator, tid)

    # 1. no AddPartitionsToTxn: the produce opens the transaction on its partition
    assert produce(leader, tid, topic, pid, epoch, 0, b"a", b"b") == NONE
    state = described(coordinator, tid)
    assert (state.transaction_state, [t.topic for t in state.topics]) == ("Ongoing", [topic])
    # and TxnOffsetCommit v5, with no AddOffsetsToTxn, adds the group's offsets partition
    group_coordinator = wire.coordinator(group, 0)
    with KafkaConn(group_coordinator) as conn:
        resp = conn.call(v.TXN_OFFSET_COMMIT, 5, transactional_id=tid, group_id=group,
                         producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
                         group_instance_id=None, topics=(nested(
                             v.TXN_OFFSET_COMMIT, 5, "TxnOffsetCommitRequestTopic", name=topic,
                             partitions=(nested(v.TXN_OFFSET_COMMIT, 5,
                                                "TxnOffsetCommitRequestPartition",
                                                partition_index=0, committed_offset=2,
                                                committed_leader_epoch=-1,
                                                committed_metadata=None),)),))  # fmt: skip
    assert int(resp.topics[0].partitions[0].error_code.value) == NONE
    in_txn = {t.topic for t in described(coordinator, tid).topics}
    assert in_txn == {topic, "__consumer_offsets"}

    # 2. EndTxn v5 answers the bumped epoch; the markers carry it
    assert end(coordinator, tid, pid, epoch, True) == (NONE, pid, epoch + 1)
    wait_for(lambda: partition_epoch(leader, topic, pid) == epoch + 1, "the COMMIT marker")
    wait_for(lambda: committed(wire.bootstrap, group) == {(topic, 0): 2}, "the group's offset")
    # a lost answer, retried with the old epoch once the commit completed, is answered again
    # (while the coordinator still waits for the markers' answers it is CONCURRENT_TRANSACTIONS,
    # retriable, as in Kafka: the markers can be visible before the CompleteCommit is written)
    wait_for(lambda: described(coordinator, tid).transaction_state == "CompleteCommit",
             "the coordinator's CompleteCommit")  # fmt: skip
    assert end(coordinator, tid, pid, epoch, True) == (NONE, pid, epoch + 1)

    # 3. a late batch of the ended transaction cannot join the next one
    assert produce(leader, tid, topic, pid, epoch, 2, b"late") == INVALID_PRODUCER_EPOCH
    # the next transaction runs at the bumped epoch, its sequence from 0; it is aborted
    assert produce(leader, tid, topic, pid, epoch + 1, 0, b"aborted") == NONE
    assert end(coordinator, tid, pid, epoch + 1, False) == (NONE, pid, epoch + 2)
    assert end(coordinator, tid, pid, epoch, False)[0] == PRODUCER_FENCED
    # 4. once the markers are written, an abort with nothing open bumps the epoch too
    # (fencing whatever the producer had in flight): an empty transaction, ended at once
    wait_for(lambda: described(coordinator, tid).transaction_state == "CompleteAbort",
             "the ABORT markers")  # fmt: skip
    assert end(coordinator, tid, pid, epoch + 2, False) == (NONE, pid, epoch + 3)
    wait_for(lambda: described(coordinator, tid).transaction_state == "CompleteAbort",
             "the empty abort")  # fmt: skip
    assert int(described(coordinator, tid).producer_epoch) == epoch + 3

    # 5. a read_committed reader sees the committed records only
    assert read_committed(wire.bootstrap, topic) == [b"a", b"b"]


def read_committed(bootstrap: str, topic: str) -> list[bytes]:
    """Partition 0 read to its end by a read_committed consumer (confluent-kafka)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        tp = TopicPartition(topic, 0, 0)
        _, high = consumer.get_watermark_offsets(tp, timeout=TIMEOUT_S)
        consumer.assign([tp])
        seen: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while consumer.position([tp])[0].offset < high:  # past the markers and aborted data
            assert time.monotonic() < deadline, f"read {seen} of {high} offsets"
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
        return seen
    finally:
        consumer.close()


NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS = 6, 19


def produce_to_leader(wire: Cluster, tid: str, topic: str, pid: int, epoch: int, seq: int,
                      *values: bytes) -> None:  # fmt: skip
    """Produce v12 to whichever broker leads now, until it is taken (a leader may be dead)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            code = produce(wire.leader(topic), tid, topic, pid, epoch, seq, *values)
        except OSError:
            code = NOT_LEADER_OR_FOLLOWER
        if code not in (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, *RETRIABLE):
            break
        assert time.monotonic() < deadline, f"produce: error {code}"
        time.sleep(0.1)
    assert code == NONE, f"produce: error {code}"


def end_at_coordinator(wire: Cluster, tid: str, pid: int, epoch: int,
                       commit: bool) -> tuple[int, int, int]:  # fmt: skip
    """EndTxn v5 at the id's coordinator now, until it is not retriable."""
    answers: list[tuple[int, int, int]] = []

    def ask() -> int:
        try:
            answers.append(end(wire.coordinator(tid, 1), tid, pid, epoch, commit))
        except OSError:
            return 15  # COORDINATOR_NOT_AVAILABLE: it was killed
        return answers[-1][0]

    retry(ask, "EndTxn")
    return answers[-1]


@pytest.mark.slow  # kills a broker
def test_a_tv2_commit_survives_its_coordinator_killed_after_prepare(
    cluster_factory: ClusterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PrepareCommit is written with the bumped epoch and answered, then its coordinator dies
    before any marker: the next coordinator loads the record (its epoch, its transaction
    version) and writes the markers at the bumped epoch; the producer's next transaction runs
    at it."""
    from confluent_kafka.admin import AdminClient, NewTopic

    hold_dir = tmp_path / "holds"
    hold_dir.mkdir()
    monkeypatch.setenv(ENV, "prepared")
    monkeypatch.setenv(DIR_ENV, str(hold_dir))
    cluster = cluster_factory(3, broker_settings={"transaction_state_log_num_partitions": 3})
    wire = Cluster(cluster)
    topic, tid = f"tv2-failover-{uuid.uuid4().hex[:6]}", "tv2-failover"
    admin = AdminClient({"bootstrap.servers": wire.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(TIMEOUT_S)
    pid, epoch = init_producer_id(lambda: wire.coordinator(tid, 1), tid)
    produce_to_leader(wire, tid, topic, pid, epoch, 0, b"first")
    # answered once PrepareCommit is written; the markers are held there
    assert end_at_coordinator(wire, tid, pid, epoch, True) == (NONE, pid, epoch + 1)
    held = hold_dir / "txn-held-prepared"
    wait_for(lambda: held.exists() and bool(held.read_text()), "the hold after PrepareCommit")
    dead = next(s.id for s in cluster.status() if s.pid == int(held.read_text().split()[0]))
    cluster.kill(dead, "KILL")

    wait_for(lambda: marked_at(wire, topic, pid, epoch + 1),
             "the COMMIT marker at the bumped epoch, from the next coordinator")  # fmt: skip
    produce_to_leader(wire, tid, topic, pid, epoch + 1, 0, b"second")
    assert end_at_coordinator(wire, tid, pid, epoch + 1, True) == (NONE, pid, epoch + 2)
    wait_for(lambda: marked_at(wire, topic, pid, epoch + 2), "the second COMMIT marker")
    assert read_committed(wire.bootstrap, topic) == [b"first", b"second"]


def marked_at(wire: Cluster, topic: str, pid: int, epoch: int) -> bool:
    try:
        return partition_epoch(wire.leader(topic), topic, pid) == epoch
    except OSError:
        return False
