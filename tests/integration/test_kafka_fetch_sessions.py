"""kafka-python's incremental fetch sessions (KIP-227) against a real broker, with the timing
test_kafka_consumer of kafka-python's suite leaves to chance made certain.

In kafka-python's test_kafka_consumer the consumer (no group: it assigns itself every partition)
is created, 100 records are sent to partition 0 and 100 to partition 1, and then it consumes;
once in about 20 loaded runs it got none of partition 0's. Here the consumer first opens its
fetch session over the 4 empty partitions and goes incremental (session epoch past 1, so its
requests name nothing), and only then do records come: first to partitions 0 and 1, then to 0
alone. Each partition's records must all arrive, in order, though no request names it again.

A topic deleted and re-created while in a v13+ session (partitions named by topic id, KIP-516)
is answered under the id the client named it by, with UNKNOWN_TOPIC_ID, as Kafka answers;
not under the new topic's id, which the client never asked for. Once the client forgets the
old id and names the new one, it reads under the new id.

A share consumer's ShareFetch and ShareAcknowledge at a broker that no longer leads the
partition (a follower, as the old leader is after a leader move) are answered
NOT_LEADER_OR_FOLLOWER with the current leader and epoch, and the leader's endpoint in
NodeEndpoints (KIP-951, as Kafka's). Raw requests (kafka_wire.py), on the shared three-broker
cluster.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from protocol.kafka.versions import DELETE_TOPICS, FETCH, SHARE_ACKNOWLEDGE, SHARE_FETCH
from tests.fixtures.cluster import ClusterFactory, wait_until
from tests.integration.kafka_wire import KafkaConn, addresses, nested
from tests.integration.test_topic_ids import WAIT_S, _agreed_id, _create, _metadata

pytestmark = pytest.mark.integration

kafka = pytest.importorskip("kafka")
DEADLINE_S = 30.0
PARTITIONS = 4


def _until(what: str, check: Callable[[], bool], tick: Callable[[], None]) -> None:
    """Call `tick` until `check()` holds; fail after DEADLINE_S, naming `what`."""
    end = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < end, f"not in {DEADLINE_S:.0f} s: {what}"
        tick()


def _session_epoch(consumer: Any) -> int:
    """The epoch of the consumer's next fetch in its session with the one broker (0: full)."""
    handlers = consumer._fetcher._session_handlers  # kafka-python 3.0.12, pinned
    return max((h.next_metadata.epoch for h in handlers.values()), default=0)


def test_partitions_empty_when_the_session_opened_get_all_their_records(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(1, broker_settings={"num_partitions": PARTITIONS})
    bootstrap = cluster.kafka_bootstrap.split(",")[0]
    topic = f"sessions-{time.monotonic_ns()}"
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([kafka.admin.NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()
    tps = [kafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer = kafka.KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )  # fmt: skip
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}

    def poll() -> None:
        for tp, records in consumer.poll(timeout_ms=100).items():
            got[tp.partition].extend(r.offset for r in records)

    def send(partition: int, count: int) -> None:
        for i in range(count):
            producer.send(topic, value=b"%d" % i, partition=partition)
        producer.flush()

    try:
        _until("all 4 partitions assigned", lambda: set(consumer.assignment()) == set(tps), poll)
        _until("an incremental fetch session", lambda: _session_epoch(consumer) >= 2, poll)
        assert all(not offsets for offsets in got.values()), got
        send(0, 100)
        send(1, 100)
        _until("100 records of partitions 0 and 1",
               lambda: len(got[0]) >= 100 and len(got[1]) >= 100, poll)  # fmt: skip
        send(0, 50)  # partition 1 stays quiet in the session
        _until("150 records of partition 0", lambda: len(got[0]) >= 150, poll)
        assert got == {0: list(range(150)), 1: list(range(100)), 2: [], 3: []}
        assert _session_epoch(consumer) > 2  # the session lived through it
    finally:
        producer.close()
        consumer.close()


UNKNOWN_TOPIC_ID = 100
NOT_LEADER_OR_FOLLOWER = 6
BY_ID = 13  # the first Fetch version naming topics by id


def _fetch(conn: KafkaConn, session_id: int, epoch: int, named: uuid.UUID | None = None,
           forgotten: uuid.UUID | None = None) -> Any:  # fmt: skip
    """A Fetch v13 in a session: partition 0 of the topic `named` (by id), and partition 0 of
    `forgotten` forgotten; (session id, [(topic id, [error code per partition])])."""
    part = nested(FETCH, BY_ID, "FetchPartition", partition=0, current_leader_epoch=-1,
                  fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                  partition_max_bytes=1 << 20)  # fmt: skip
    topics = (
        ()
        if named is None
        else (nested(FETCH, BY_ID, "FetchTopic", topic_id=named, partitions=(part,)),)
    )
    gone = (
        ()
        if forgotten is None
        else (nested(FETCH, BY_ID, "ForgottenTopic", topic_id=forgotten, partitions=(0,)),)
    )
    resp = conn.call(FETCH, BY_ID, max_wait=0, min_bytes=0, max_bytes=1 << 20,
                     isolation_level=0, session_id=session_id, session_epoch=epoch,
                     topics=topics, forgotten_topics_data=gone, rack_id="")  # fmt: skip
    assert resp.error_code.value == 0, resp.error_code
    answered = [(t.topic_id, [p.error_code.value for p in t.partitions]) for t in resp.responses]
    return resp.session_id, answered


def _recreate(cluster: LocalCluster, topic: str, old: uuid.UUID) -> uuid.UUID:
    """Delete `topic` (by id) and create it again once every broker has let it go; its new id."""
    bootstrap = addresses(cluster.kafka_bootstrap)
    gone = nested(DELETE_TOPICS, 6, "DeleteTopicState", name=None, topic_id=old)
    with KafkaConn(bootstrap[0], timeout_s=WAIT_S) as conn:
        (r,) = conn.call(DELETE_TOPICS, 6, topics=(gone,), timeout=30_000).responses
    assert r.error_code.value == 0, r.error_message
    wait_until(lambda: all(_metadata(a, topic).error_code.value != 0 for a in bootstrap),
               f"{topic} deleted on every broker", WAIT_S)  # fmt: skip
    new = _create(cluster, topic)
    assert new != old and _agreed_id(cluster, topic) == new
    return new


def test_a_topic_recreated_in_a_v13_session_is_answered_unknown_topic_id_under_its_old_id(
    cluster3: LocalCluster,
) -> None:
    topic = f"recreated-{uuid.uuid4().hex[:8]}"
    old = _create(cluster3, topic)
    assert _agreed_id(cluster3, topic) == old
    by_broker = dict(zip(cluster3.broker_ids, addresses(cluster3.kafka_bootstrap), strict=True))
    first = by_broker[cluster3.broker_ids[0]]
    p0 = next(p for p in _metadata(first, topic).partitions if p.partition_index == 0)
    with KafkaConn(by_broker[p0.leader_id]) as conn:
        session_id, answered = _fetch(conn, 0, 0, named=old)  # opens a session
        assert session_id > 0 and answered == [(old, [0])]
        new = _recreate(cluster3, topic, old)
        assert _fetch(conn, session_id, 1) == (session_id, [(old, [UNKNOWN_TOPIC_ID])])
        assert _fetch(conn, session_id, 2) == (session_id, [(old, [UNKNOWN_TOPIC_ID])])
        # the client, told, forgets the old id and names the new one: read under the new id
        now = _metadata(by_broker[p0.leader_id], topic).partitions
        leads = next(p for p in now if p.partition_index == 0).leader_id == p0.leader_id
        code = 0 if leads else NOT_LEADER_OR_FOLLOWER
        assert _fetch(conn, session_id, 3, named=new, forgotten=old) == (
            session_id, [(new, [code])])  # fmt: skip
        assert _fetch(conn, session_id, 4) == (session_id, [])  # nothing new since


def test_share_fetch_and_acknowledge_at_a_follower_name_the_current_leader(
    cluster3: LocalCluster,
) -> None:
    topic = f"share-hint-{uuid.uuid4().hex[:8]}"
    tid = _create(cluster3, topic, partitions=1)
    assert _agreed_id(cluster3, topic) == tid
    by_broker = dict(zip(cluster3.broker_ids, addresses(cluster3.kafka_bootstrap), strict=True))
    (p0,) = _metadata(by_broker[cluster3.broker_ids[0]], topic).partitions
    leader, epoch = p0.leader_id, p0.leader_epoch
    follower = next(b for b in cluster3.broker_ids if b != leader)
    group, member = f"share-hint-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    host, port = by_broker[leader]

    def hinted(resp: Any) -> None:
        (t,) = resp.responses
        (p,) = t.partitions
        assert (t.topic_id, p.error_code.value) == (tid, 6)  # NOT_LEADER_OR_FOLLOWER
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, epoch)
        assert [(n.node_id, n.host, n.port) for n in resp.node_endpoints] == [(leader, host, port)]

    with KafkaConn(by_broker[follower]) as conn:
        part = nested(SHARE_FETCH, 1, "FetchPartition", partition_index=0,
                      acknowledgement_batches=())  # fmt: skip
        fetched = conn.call(
            SHARE_FETCH, 1, group_id=group, member_id=member, share_session_epoch=0, max_wait=0,
            min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10, forgotten_topics_data=(),
            topics=(nested(SHARE_FETCH, 1, "FetchTopic", topic_id=tid, partitions=(part,)),),
        )  # fmt: skip
        assert fetched.error_code.value == 0
        hinted(fetched)
        batch = nested(SHARE_ACKNOWLEDGE, 1, "AcknowledgementBatch", first_offset=0,
                       last_offset=0, acknowledge_types=(1,))  # fmt: skip
        acked = conn.call(
            SHARE_ACKNOWLEDGE, 1, group_id=group, member_id=member, share_session_epoch=1,
            topics=(nested(SHARE_ACKNOWLEDGE, 1, "AcknowledgeTopic", topic_id=tid, partitions=(
                nested(SHARE_ACKNOWLEDGE, 1, "AcknowledgePartition", partition_index=0,
                       acknowledgement_batches=(batch,)),)),),
        )  # fmt: skip
        assert acked.error_code.value == 0
        hinted(acked)
