"""Durable share state (KIP-932's share coordinator, `__share_group_state`) with confluent-kafka
2.16's ShareConsumer (members as processes of .venv-share, tests/integration/share_member.py):
a SIGKILL of the share partition's leader, and of the share coordinator's broker under load.

Its own three-broker cluster (it kills brokers), the topic replicated on all three. What a
member accepted before a kill is never delivered again; a record released before the leader's
kill comes back to the next member with its delivery count carried over (2, not 1).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from client import Admin
from client.types import NewTopic
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.kafka.versions import FIND_COORDINATOR
from tests.integration.kafka_wire import addresses, call, wait_for
from tests.integration.test_share_groups import (
    WAIT_S,
    Members,
    new_group,
    produce,
    share_cluster,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SHARE_KEY_TYPE = 2


@pytest.fixture(scope="module")
def cluster(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    yield from share_cluster(
        zk_server, tmp_path_factory, 3, share_coordinator_state_topic_num_partitions=3
    )


def replicated_topic(cluster: LocalCluster) -> str:
    name = f"durable-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(name, 1, 3)])

        def led() -> bool:
            (d,) = admin.describe_topics([name])
            return not d.error_code and all(len(p.isr) == 3 for p in d.partitions)

        wait_for(led, f"{name} to have its three replicas in sync", 30)
    return name


def leader_of(cluster: LocalCluster, topic: str) -> int:
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
        return d.partitions[0].leader


def share_coordinator(cluster: LocalCluster, group: str, topic: str) -> int | None:
    """The broker FindCoordinator (key type 2, "group:topicId:partition") names, on the Kafka
    door, or None while none is named."""
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    desc = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    key = f"{group}:{desc.topic_id}:0"
    for address in addresses(cluster.kafka_bootstrap):
        try:
            resp = call(address, FIND_COORDINATOR, 4, key_type=SHARE_KEY_TYPE,
                        coordinator_keys=(key,))  # fmt: skip
        except OSError:
            continue
        (found,) = resp.coordinators
        if found.error_code.value == 0:
            return int(found.node_id)
    return None


def restart_dead(cluster: LocalCluster) -> None:
    for broker_id, state in cluster.broker_states().items():
        if state == "dead":
            cluster.start(broker_id)


@pytest.fixture
def members(cluster: LocalCluster, tmp_path: Path) -> Iterator[Members]:
    m = Members(cluster, tmp_path, replicated_topic(cluster))
    try:
        yield m
    finally:
        m.stop()
        restart_dead(cluster)


def test_a_leader_sigkill_keeps_what_was_accepted_and_released(
    cluster: LocalCluster, members: Members
) -> None:
    topic, group = members.topic, new_group(cluster)
    produce(cluster, topic, 10)
    members.start("a", group)  # accepts (implicitly) everything it gets
    wait_for(lambda: len(members.lines("a")) >= 10, "a to receive 10 records", WAIT_S)
    members.stop_one("a")  # closing sends the last acknowledgements
    produce(cluster, topic, 5)
    members.start("r", group, "release-hold")  # releases one poll's records, then holds
    wait_for(lambda: members.lines("r"), "r to receive records", WAIT_S)
    members.stop_one("r")  # closing sends the releases; each is written before it is answered
    released = {o for o, _, _ in members.lines("r")}
    assert released and all(c == 1 for _, c, _ in members.lines("r"))

    killed = leader_of(cluster, topic)
    cluster.kill(killed)
    wait_for(lambda: leader_of(cluster, topic) not in (killed, -1), "a new leader", WAIT_S)
    members.start("b", group)
    produce(cluster, topic, 5)
    wait_for(lambda: {o for o, _, _ in members.lines("b")} >= set(range(10, 20)),
             "b to receive offsets 10-19", WAIT_S)  # fmt: skip
    members.stop()
    got = members.lines("b")
    assert not [o for o, _, _ in got if o < 10], "nothing accepted before the kill comes again"
    counts = {o: c for o, c, _ in got}
    assert all(counts[o] == 2 for o in released), f"released {released}, then {got}"
    assert all(counts[o] == 1 for o in range(15, 20)), got


def test_a_share_coordinator_sigkill_under_load_loses_no_acknowledgement(
    cluster: LocalCluster, members: Members
) -> None:
    topic, group = members.topic, new_group(cluster)
    names = ["m0", "m1"]
    for name in names:
        members.start(name, group)
    produce(cluster, topic, 20)
    wait_for(lambda: any(members.lines(n) for n in names), "the first records", WAIT_S)
    coordinator = wait_for(lambda: share_coordinator(cluster, group, topic),
                           "the share coordinator", WAIT_S)  # fmt: skip
    produce(cluster, topic, 100, one_by_one=True)
    cluster.kill(coordinator)  # under load: members fetch and acknowledge throughout
    produce(cluster, topic, 100, one_by_one=True)
    total = 220

    def received() -> set[int]:
        return {o for n in names for o, _, _ in members.lines(n)}

    wait_for(lambda: len(received()) == total, f"{total} records received", WAIT_S)
    wait_for(lambda: share_coordinator(cluster, group, topic) not in (None, coordinator),
             "a new share coordinator", WAIT_S)  # fmt: skip
    members.stop()  # every member closes, acknowledging what it got
    assert received() == set(range(total))
    # a later member gets only what is produced after: every acknowledgement was kept
    members.start("late", group)
    produce(cluster, topic, 1)
    wait_for(lambda: members.lines("late"), "late to receive the new record", WAIT_S)
    members.stop()
    assert members.lines("late") == [(total, 1, "accept")]
