"""Kafka 4.2's versions of the group APIs with a real client (kafka-python 3.0.12, which takes
the newest version both sides serve), on the shared three-broker cluster:

- DescribeGroups v6 (KIP-1043): a group that does not exist is GROUP_ID_NOT_FOUND with Kafka's
  message, where v0-v5 answered it as an empty Dead group; kafka-python's admin reports the
  error. FindCoordinator v6 finds the coordinator it asks first.
- DescribeCluster v2 (KIP-1073): kafka-python asks for fenced brokers too; a ZooKeeper-mode
  cluster has none, so it gets every broker, each unfenced;
- ListTransactions v2 (KIP-1152): kafka-python's admin lists only the transactional ids the
  pattern matches whole.
"""

from __future__ import annotations

import re
import uuid

import pytest

from deploy.cluster import LocalCluster

pytestmark = pytest.mark.integration

kafka = pytest.importorskip("kafka")


def test_describing_a_group_that_does_not_exist_is_group_id_not_found(
    cluster3: LocalCluster,
) -> None:
    group = f"no-such-group-{uuid.uuid4().hex[:8]}"
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
