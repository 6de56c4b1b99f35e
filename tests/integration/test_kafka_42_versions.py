"""Kafka 4.2's versions of the group APIs with a real client (kafka-python 3.0.12, which takes
the newest version both sides serve), on the shared three-broker cluster:

- DescribeGroups v6 (KIP-1043): a group that does not exist is GROUP_ID_NOT_FOUND with Kafka's
  message, where v0-v5 answered it as an empty Dead group; kafka-python's admin reports the
  error. FindCoordinator v6 finds the coordinator it asks first.
- DescribeCluster v2 (KIP-1073): kafka-python asks for fenced brokers too; a ZooKeeper-mode
  cluster has none, so it gets every broker, each unfenced;
- AlterPartitionReassignments v1 (KIP-860; no client here sends it, so a raw request): a
  reassignment that would change the replication factor while the request forbids it is
  INVALID_REPLICATION_FACTOR, and nothing moves;
- OffsetCommit and OffsetFetch v10 (KIP-848, Kafka 4.2; raw requests, kafka-python stops at
  v8): topics named by id, answered under their ids; an id no topic has is UNKNOWN_TOPIC_ID;
  fetching every committed offset answers each topic's id;
- ListTransactions v2 (KIP-1152): kafka-python's admin lists only the transactional ids the
  pattern matches whole.
"""

from __future__ import annotations

import re
import uuid

import pytest

from deploy.cluster import LocalCluster
from protocol.kafka.versions import ALTER_PARTITION_REASSIGNMENTS, OFFSET_COMMIT, OFFSET_FETCH
from protocol.topic_ids import new_topic_id
from tests.fixtures.cluster import wait_until
from tests.integration.kafka_wire import KafkaConn, addresses, nested, ready_coordinator
from tests.integration.test_topic_ids import WAIT_S, _agreed_id, _create, _metadata

pytestmark = pytest.mark.integration

kafka = pytest.importorskip("kafka")


def test_describing_a_group_that_does_not_exist_is_group_id_not_found(
    cluster3: LocalCluster,
) -> None:
    group = f"no-such-group-{uuid.uuid4().hex[:8]}"
    # a fresh cluster's coordinator may still be loading: kafka-python's describe_groups does
    # not retry COORDINATOR_LOAD_IN_PROGRESS, so wait until it answers as one
    ready_coordinator(cluster3.kafka_bootstrap, group, WAIT_S)
    admin = kafka.KafkaAdminClient(bootstrap_servers=cluster3.kafka_bootstrap,
                                   request_timeout_ms=30_000)  # fmt: skip
    try:
        described = admin.describe_groups([group])[group]
    finally:
        admin.close()
    assert described["group_state"] == "Dead" and described["members"] == []
    assert described["error"] == f"[Error 69] GroupIdNotFoundError: Group {group} not found."


def test_list_transactions_filters_by_a_transactional_id_pattern(cluster3: LocalCluster) -> None:
    prefix = f"pattern-{uuid.uuid4().hex[:8]}"
    producers = []
    try:
        for suffix in ("a", "b"):
            producer = kafka.KafkaProducer(bootstrap_servers=cluster3.kafka_bootstrap,
                                           transactional_id=f"{prefix}-{suffix}")  # fmt: skip
            producers.append(producer)
            producer.init_transactions()
        admin = kafka.KafkaAdminClient(bootstrap_servers=cluster3.kafka_bootstrap,
                                       request_timeout_ms=30_000)  # fmt: skip
        try:

            def listed(pattern: str) -> list[str]:
                by_broker = admin.list_transactions(transactional_id_pattern=pattern)
                return sorted(t.transactional_id for ts in by_broker.values() for t in ts)

            assert listed(re.escape(prefix) + "-.*") == [f"{prefix}-a", f"{prefix}-b"]
            assert listed(re.escape(prefix) + "-b") == [f"{prefix}-b"]
            assert listed(re.escape(prefix)) == []  # the whole id must match
        finally:
            admin.close()
    finally:
        for producer in producers:
            producer.close()


def test_describe_cluster_v2_marks_every_broker_unfenced(cluster3: LocalCluster) -> None:
    admin = kafka.KafkaAdminClient(bootstrap_servers=cluster3.kafka_bootstrap,
                                   request_timeout_ms=30_000)  # fmt: skip
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    brokers = {b["broker_id"]: b["is_fenced"] for b in described["brokers"]}
    assert brokers == dict.fromkeys(cluster3.broker_ids, False)


INVALID_REPLICATION_FACTOR = 38


def test_a_reassignment_may_forbid_a_change_of_replication_factor(cluster3: LocalCluster) -> None:
    topic = f"keep-rf-{uuid.uuid4().hex[:8]}"
    _create(cluster3, topic, partitions=1)  # replication factor 3
    _agreed_id(cluster3, topic)
    by_broker = dict(zip(cluster3.broker_ids, addresses(cluster3.kafka_bootstrap), strict=True))
    controller = wait_until(cluster3.controller_id, "a controller", WAIT_S)
    part = nested(ALTER_PARTITION_REASSIGNMENTS, 1, "ReassignablePartition", partition_index=0,
                  replicas=tuple(cluster3.broker_ids[:2]))  # fmt: skip
    wanted = nested(ALTER_PARTITION_REASSIGNMENTS, 1, "ReassignableTopic", name=topic,
                    partitions=(part,))  # fmt: skip
    with KafkaConn(by_broker[controller], timeout_s=WAIT_S) as conn:
        resp = conn.call(ALTER_PARTITION_REASSIGNMENTS, 1, timeout=30_000,
                         allow_replication_factor_change=False, topics=(wanted,))  # fmt: skip
    assert resp.error_code.value == 0 and resp.allow_replication_factor_change is False
    ((t_name, codes),) = [(t.name, [p.error_code.value for p in t.partitions])
                          for t in resp.responses]  # fmt: skip
    assert (t_name, codes) == (topic, [INVALID_REPLICATION_FACTOR])
    (p0,) = _metadata(by_broker[controller], topic).partitions
    assert len(p0.replica_nodes) == 3  # nothing moved


UNKNOWN_TOPIC_ID = 100


def test_offset_commit_and_fetch_v10_name_topics_by_id(cluster3: LocalCluster) -> None:
    topic, group = f"ids-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    tid = _create(cluster3, topic, partitions=1)
    _agreed_id(cluster3, topic)
    gone = new_topic_id()
    _, coordinator = ready_coordinator(cluster3.kafka_bootstrap, group, WAIT_S)

    def commit_topic(topic_id: uuid.UUID) -> object:
        part = nested(
            OFFSET_COMMIT,
            10,
            "OffsetCommitRequestPartition",
            partition_index=0,
            committed_offset=7,
            committed_leader_epoch=-1,
            committed_metadata="m",
        )
        return nested(OFFSET_COMMIT, 10, "OffsetCommitRequestTopic", topic_id=topic_id,
                      partitions=(part,))  # fmt: skip

    def fetch_group(topics: object) -> object:
        return nested(OFFSET_FETCH, 10, "OffsetFetchRequestGroup", group_id=group,
                      member_id=None, member_epoch=-1, topics=topics)  # fmt: skip

    with KafkaConn(coordinator, timeout_s=WAIT_S) as conn:
        resp = conn.call(OFFSET_COMMIT, 10, group_id=group, generation_id_or_member_epoch=-1,
                         member_id="", group_instance_id=None,
                         topics=(commit_topic(tid), commit_topic(gone)))  # fmt: skip
        assert {t.topic_id: [p.error_code.value for p in t.partitions] for t in resp.topics} == {
            tid: [0], gone: [UNKNOWN_TOPIC_ID]}  # fmt: skip
        asked = tuple(nested(OFFSET_FETCH, 10, "OffsetFetchRequestTopics", topic_id=i,
                             partition_indexes=(0,)) for i in (tid, gone))  # fmt: skip
        for topics in (asked, None):  # the two named, then every committed one
            (g,) = conn.call(OFFSET_FETCH, 10, require_stable=False,
                             groups=(fetch_group(topics),)).groups  # fmt: skip
            assert g.error_code.value == 0
            fetched = {t.topic_id: [(p.error_code.value, p.committed_offset) for p in t.partitions]
                       for t in g.topics}  # fmt: skip
            expected = {tid: [(0, 7)]}
            if topics is not None:
                expected[gone] = [(UNKNOWN_TOPIC_ID, -1)]
            assert fetched == expected
