"""Kafka 4.2's versions of the group APIs with a real client (kafka-python 3.0.12, which takes
the newest version both sides serve), on the shared three-broker cluster:

- DescribeGroups v6 (KIP-1043): a group that does not exist is GROUP_ID_NOT_FOUND with Kafka's
  message, where v0-v5 answered it as an empty Dead group; kafka-python's admin reports the
  error. FindCoordinator v6 finds the coordinator it asks first.
"""

from __future__ import annotations

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
