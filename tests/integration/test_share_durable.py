"""Durable share state (KIP-932's share coordinator, `__share_group_state`) and durable share
groups (their records in `__consumer_offsets`) with confluent-kafka 2.16's ShareConsumer
(members as processes of .venv-share, tests/integration/share_member.py): a SIGKILL of the
share partition's leader, of the share coordinator's broker under load, and of the group
coordinator's broker.

Its own three-broker cluster (it kills brokers), the topic replicated on all three. What a
member accepted before a kill is never delivered again; a record released before the leader's
kill comes back to the next member with its delivery count carried over (2, not 1).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from client import Admin
from client.types import NewTopic
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.kafka.versions import (
    DESCRIBE_SHARE_GROUP_OFFSETS,
    FIND_COORDINATOR,
    SHARE_GROUP_DESCRIBE,
)
from tests.integration.kafka_wire import addresses, call, find_coordinator, nested, wait_for
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


def described(cluster: LocalCluster, group: str) -> tuple[int, Any] | None:
    """(coordinator id, the group's ShareGroupDescribe v1 answer) at its coordinator; None
    while it has none ready (it moves, or loads)."""
    found = find_coordinator(cluster.kafka_bootstrap, group)
    if found is None:
        return None
    try:
        (got,) = call(found[1], SHARE_GROUP_DESCRIBE, 1, group_ids=(group,),
                      include_authorized_operations=False).groups  # fmt: skip
    except OSError:
        return None
    return (found[0], got) if code(got.error_code) == 0 else None


def start_offset(cluster: LocalCluster, group: str, topic: str) -> int | None:
    """The share partition's start offset (SPSO) by DescribeShareGroupOffsets v1."""
    found = find_coordinator(cluster.kafka_bootstrap, group)
    if found is None:
        return None
    asked = nested(DESCRIBE_SHARE_GROUP_OFFSETS, 1, "DescribeShareGroupOffsetsRequestGroup",
                   group_id=group, topics=None)  # fmt: skip
    try:
        (got,) = call(found[1], DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=(asked,)).groups
    except OSError:
        return None
    parts = [p for t in got.topics if t.topic_name == topic for p in t.partitions]
    return int(parts[0].start_offset) if parts and code(parts[0].error_code) == 0 else None


def code(error: Any) -> int:
    return int(getattr(error, "value", error))


def epochs(group: Any) -> tuple[int, dict[str, int]]:
    return int(group.group_epoch), {m.member_id: int(m.member_epoch) for m in group.members}


def test_a_group_coordinator_sigkill_keeps_the_share_group_its_epoch_and_its_members(
    cluster: LocalCluster, members: Members
) -> None:
    """The share group's records in `__consumer_offsets`: the broker coordinating the group is
    SIGKILLed; the new coordinator loads the group from them, with the same group epoch and
    members at their epochs, who consume on; nothing accepted before is delivered again."""
    topic, group = members.topic, new_group(cluster)
    names = ["m0", "m1", "brief"]
    for name in names:
        members.start(name, group)
    produce(cluster, topic, 20)

    def received() -> list[int]:
        return sorted(o for n in names for o, _, _ in members.lines(n))

    wait_for(lambda: set(received()) == set(range(20)), "20 records received", WAIT_S)
    members.stop_one("brief")  # its join and leave move the group epoch past a fresh group's
    wait_for(lambda: start_offset(cluster, group, topic) == 20, "all 20 accepted", WAIT_S)

    def settled() -> tuple[int, Any] | None:  # two members, each at the assignment epoch
        got = described(cluster, group)
        if got is None or len(got[1].members) != 2:
            return None
        by_member = epochs(got[1])[1]
        return got if set(by_member.values()) == {int(got[1].assignment_epoch)} else None

    coordinator, before = wait_for(settled, "the group to settle with two members", WAIT_S)
    assert int(before.group_epoch) >= 4  # three joins and a leave
    cluster.kill(coordinator)
    moved = wait_for(lambda: (d := described(cluster, group)) and d[0] != coordinator and d,
                     "a new group coordinator to describe the group", WAIT_S)  # fmt: skip
    assert epochs(moved[1]) == epochs(before), "the same group epoch, members and epochs"
    produce(cluster, topic, 20)
    wait_for(lambda: set(received()) >= set(range(40)), "records 20-39 received", WAIT_S)
    after = described(cluster, group)
    assert after is not None and epochs(after[1]) == epochs(before), "members kept their epochs"
    members.stop()
    got = received()
    assert not [o for o in got if o < 20 and got.count(o) > 1], "nothing accepted came again"
    assert set(got) == set(range(40))
