"""The online migration's pure parts (migration.py, classic_in_consumer.py): what a classic
group becomes as a consumer group and back, the records of each conversion (and that replaying
them through their bytes gives the same group, as a new coordinator loads it), the policy's
and the group's refusals, and the translated classic calls' decisions."""

from __future__ import annotations

import copy
import io
import struct
import uuid
from dataclasses import replace

from kio.schema.consumer_protocol_subscription.v1 import data as sub_v1
from kio.serial import entity_writer

from coordinator.group import classic_in_consumer as cic
from coordinator.group import consumer_heartbeat, consumer_service, migration
from coordinator.group import consumer_records as cr
from coordinator.group import group as group_ops
from coordinator.group.consumer_group import (
    ClassicMeta,
    ConsumerConfig,
    ConsumerGroup,
    ConsumerMember,
    Topics,
)
from coordinator.group.consumer_replay import apply_records, current_record, make_record
from coordinator.group.consumer_states import MemberState
from coordinator.group.group import Group, Member, OffsetEntry, group_record
from coordinator.group.reconcile import Reconciled
from coordinator.group.records import ConsumerKey, CoordinatorRecord, GroupKey, decode, encode
from coordinator.group.states import State
from protocol.kafka.consumer_protocol import assigned_partitions, encode_assignment

T = uuid.UUID("6b7a3b8e-0000-4000-8000-000000000001")
TOPICS = Topics({"t": (T, 4)})
NAMES = {T: "t"}
CONFIG = ConsumerConfig()
NOW = 1_000


def subscription(owned: tuple[int, ...] = ()) -> bytes:
    tps = (sub_v1.TopicPartition(topic="t", partitions=owned),) if owned else ()  # type: ignore[arg-type]
    entity = sub_v1.ConsumerProtocolSubscription(topics=("t",), owned_partitions=tps)
    buf = io.BytesIO()
    buf.write(struct.pack(">h", 1))
    entity_writer(sub_v1.ConsumerProtocolSubscription)(buf, entity)
    return buf.getvalue()


def classic_group() -> Group:
    """A Stable classic group of two members (a: 0-1, b: 2-3) at generation 5, with offsets."""
    g = Group("g", state=State.READY, generation=5, strategy="range", protocol_type="consumer",
              leader_id="a")  # fmt: skip
    for mid, parts in (("a", [0, 1]), ("b", [2, 3])):
        g.members[mid] = Member(
            mid, f"client-{mid}", 10_000, 30_000, (), None, client_host="/10.0.0.1",
            protocols=[("range", subscription()), ("roundrobin", subscription())],
            assignment_bytes=encode_assignment([("t", p) for p in parts]), instance_id=None,
        )  # fmt: skip
    g.offsets[("t", 0)] = OffsetEntry(42, "", 7)
    return g


def replay_bytes(shard: dict[str, Group], records: list[CoordinatorRecord]) -> None:
    """As a coordinator loads: each record through its bytes, then replayed."""
    for record in records:
        for key, value in encode(record):
            loaded = decode(key, value)
            if isinstance(loaded.key, ConsumerKey):
                consumer_service.replay(shard, loaded, NOW)
            else:
                group_ops.replay(shard, loaded, NOW)


def loaded_classic(g: Group) -> dict[str, Group]:
    """A shard that loaded `g`'s group record and offsets."""
    shard: dict[str, Group] = {}
    offsets = [CoordinatorRecord(group_ops.OffsetKey("g", t, p), {"offset": e.offset,
               "metadata": e.metadata, "commit_ms": e.commit_ms, "leader_epoch": -1})
               for (t, p), e in g.offsets.items()]  # fmt: skip
    replay_bytes(shard, [*offsets, group_record(g)])
    return shard


def test_upgrade_makes_each_classic_member_a_consumer_member() -> None:
    g = classic_group()
    assert migration.upgrade_refusal(g, CONFIG) is None
    consumer, records = migration.to_consumer(g, TOPICS, NOW, CONFIG)
    assert (consumer.group_epoch, consumer.target_epoch) == (5, 5)
    a = consumer.members["a"]
    assert a.assignment == Reconciled(MemberState.STABLE, 5, 5, {T: frozenset({0, 1})})
    assert consumer.target == {"a": {T: frozenset({0, 1})}, "b": {T: frozenset({2, 3})}}
    assert (a.subscribed_topic_names, a.client_id, a.rebalance_timeout_ms) == (
        ("t",), "client-a", 30_000)  # fmt: skip
    assert a.classic == ClassicMeta(10_000, (("range", subscription()),
                                             ("roundrobin", subscription())))  # fmt: skip
    assert a.server_assignor is None
    # Kafka's order: the classic tombstone, then createConsumerGroupRecords'
    kinds = [r.key.record_type if isinstance(r.key, ConsumerKey) else "group" for r in records]
    assert kinds == ["group", cr.MEMBER_METADATA, cr.MEMBER_METADATA, cr.GROUP_METADATA,
                     cr.TARGET_MEMBER, cr.TARGET_MEMBER, cr.TARGET_METADATA,
                     cr.CURRENT_ASSIGNMENT, cr.CURRENT_ASSIGNMENT]  # fmt: skip
    assert records[0] == CoordinatorRecord(GroupKey("g"), None)
    # the classic part is gone, the offsets stay
    assert (g.members, g.state, g.generation, g.protocol_type) == ({}, State.EMPTY, 0, None)
    assert g.offsets[("t", 0)].offset == 42


def test_an_upgraded_group_replays_as_it_is_in_memory() -> None:
    g = classic_group()
    shard = loaded_classic(g)
    live = copy.deepcopy(g)
    live.consumer, records = migration.to_consumer(live, TOPICS, NOW, CONFIG)
    replay_bytes(shard, records)
    loaded = shard["g"]
    assert loaded.consumer == live.consumer  # members (classic metadata too), epochs, targets
    assert (loaded.members, loaded.state, loaded.protocol_type) == ({}, State.EMPTY, None)
    assert loaded.offsets == live.offsets


def test_upgrade_refusals_say_why() -> None:
    g = classic_group()
    disabled = replace(CONFIG, migration_policy="disabled")
    assert "group_consumer_migration_policy=disabled" in (migration.upgrade_refusal(g, disabled)
                                                          or "")  # fmt: skip
    downgrade_only = replace(CONFIG, migration_policy="downgrade")
    assert "online upgrade" in (migration.upgrade_refusal(g, downgrade_only) or "")
    assert "max_size" in (migration.upgrade_refusal(g, replace(CONFIG, max_size=1)) or "")
    native = copy.deepcopy(g)
    native.protocol_type = "connect"
    assert "not 'consumer'" in (migration.upgrade_refusal(native, CONFIG) or "")
    bad = copy.deepcopy(g)
    bad.members["b"].protocols = [("range", b"\x00")]
    assert "malformed" in (migration.upgrade_refusal(bad, CONFIG) or "")


def mixed_group() -> ConsumerGroup:
    """A consumer group at epoch 7: classic members a (0, 1) and b (2), consumer member m (3)."""
    consumer = ConsumerGroup("g")
    topics = [{"topic_id": T, "topic_name": "t", "num_partitions": 4}]
    records = [make_record(cr.PARTITION_METADATA, "g", {"topics": topics}),
               make_record(cr.GROUP_METADATA, "g", {"epoch": 7}),
               make_record(cr.TARGET_METADATA, "g", {"assignment_epoch": 7})]  # fmt: skip
    for mid, parts, classic in (("a", {0, 1}, True), ("b", {2}, True), ("m", {3}, False)):
        member = ConsumerMember(mid, client_id=mid, subscribed_topic_names=("t",),
                                rebalance_timeout_ms=30_000)  # fmt: skip
        if classic:
            member.classic = ClassicMeta(10_000, (("range", subscription()),))
        records.append(make_record(cr.MEMBER_METADATA, "g", member.metadata_value(), mid))
        target = {"topic_partitions": {T: frozenset(parts)}}
        records.append(make_record(cr.TARGET_MEMBER, "g", target, mid))
        records.append(current_record("g", mid, Reconciled(MemberState.STABLE, 7, 6,
                                                           {T: frozenset(parts)})))  # fmt: skip
    apply_records(consumer, records, NOW, CONFIG)
    return consumer


def test_downgrade_is_due_when_only_classic_members_remain() -> None:
    consumer = mixed_group()
    assert migration.downgrade_due(consumer, "m", CONFIG, 1000)
    assert not migration.downgrade_due(consumer, "a", CONFIG, 1000)  # m speaks the consumer one
    assert not migration.downgrade_due(consumer, "m", replace(CONFIG, migration_policy="upgrade"),
                                       1000)  # fmt: skip
    assert not migration.downgrade_due(consumer, "m", CONFIG, 1)  # too big for a classic group
    alone = ConsumerGroup("g", members={"m": consumer.members["m"]})
    assert not migration.downgrade_due(alone, "m", CONFIG, 1000)  # it would be empty


def test_downgrade_writes_a_classic_group_that_replays_as_loaded() -> None:
    consumer = mixed_group()
    records, value = migration.to_classic(consumer, "m", NAMES)
    # every consumer record tombstoned, then the classic GroupMetadata
    assert all(r.value is None for r in records[:-1])
    assert {r.key.member_id for r in records[:-1] if isinstance(r.key, ConsumerKey)} == {
        "", "a", "b", "m"}  # fmt: skip
    assert records[-1].key == GroupKey("g")
    assert (value["generation"], value["strategy"], value["leader"]) == (7, "range", "a")
    got = {m["id"]: assigned_partitions(m["assignment_bytes"]) for m in value["members"]}
    assert got == {"a": [("t", 0), ("t", 1)], "b": [("t", 2)]}
    assert [m["session_timeout_ms"] for m in value["members"]] == [10_000, 10_000]
    # replayed over the consumer group's own records, it is the classic group loaded
    shard: dict[str, Group] = {"g": Group("g", consumer=copy.deepcopy(consumer))}
    replay_bytes(shard, records)
    loaded = shard["g"]
    assert loaded.consumer is None and loaded.state is State.READY
    assert (loaded.generation, loaded.strategy, loaded.leader_id) == (7, "range", "a")
    assert sorted(loaded.members) == ["a", "b"]
    assert loaded.members["b"].assignment_bytes == value["members"][1]["assignment_bytes"]


def test_a_classic_member_inside_rejoins_when_it_must() -> None:
    consumer = mixed_group()
    a = consumer.members["a"]
    assert not cic.must_rejoin(consumer, a)  # stable at the group epoch
    consumer.group_epoch = 8
    assert cic.must_rejoin(consumer, a)  # the group moved on
    consumer.group_epoch = 7
    a.assignment = replace(a.assignment, state=MemberState.UNREVOKED_PARTITIONS)
    assert cic.must_rejoin(consumer, a)  # it has partitions to give up
    # waiting for partition 3, which m still owns: no need to rejoin yet
    a.assignment = replace(a.assignment, state=MemberState.UNRELEASED_PARTITIONS)
    consumer.target["a"] = {T: frozenset({0, 1, 3})}
    assert not cic.must_rejoin(consumer, a)
    del consumer.members["m"]  # released: rejoin to get it
    assert cic.must_rejoin(consumer, a)


def test_classic_join_sync_and_heartbeat_inside_a_consumer_group() -> None:
    consumer = mixed_group()
    join = cic.ClassicJoin("", "c", "/h", 10_000, 30_000, "consumer",
                           (("range", subscription()),), True)  # fmt: skip
    asked = cic.join(consumer, join, TOPICS, NOW, CONFIG, lambda: "new")
    assert (asked.code, asked.member_id, asked.records) == (cic.MEMBER_ID_REQUIRED, "new", [])
    wrong = cic.join(consumer, replace(join, protocols=(("sticky", subscription()),)), TOPICS,
                     NOW, CONFIG, lambda: "new")  # fmt: skip
    assert wrong.code == cic.INCONSISTENT_GROUP_PROTOCOL  # no protocol every classic one has
    joined = cic.join(consumer, replace(join, member_id="new"), TOPICS, NOW, CONFIG, lambda: "x")
    assert joined.code == 0 and joined.protocol_name == "range"
    assert consumer.group_epoch == 8 and joined.generation == 8  # a new member: a new epoch
    assert consumer.members["new"].classic == ClassicMeta(10_000, (("range", subscription()),))
    # the others learn of it from their heartbeat; a stale generation is refused
    assert cic.heartbeat(consumer, "a", None, 7, NOW).code == cic.REBALANCE_IN_PROGRESS
    assert cic.heartbeat(consumer, "a", None, 6, NOW).code == 22  # ILLEGAL_GENERATION
    assert cic.sync(consumer, "a", None, 7, "consumer", "range", NAMES, NOW).code == (
        cic.REBALANCE_IN_PROGRESS)  # fmt: skip
    assert cic.heartbeat(consumer, "m", None, 7, NOW).code == 25  # not a classic member
    synced = cic.sync(consumer, "new", None, 8, "consumer", "range", NAMES, NOW)
    held = sorted(p for t, ps in consumer.members["new"].assignment.assigned.items() for p in ps)
    assert synced.code == 0 and [p for _, p in assigned_partitions(synced.assignment)] == held
    assert cic.sync(consumer, "new", None, 8, "consumer", "roundrobin", NAMES, NOW).code == (
        cic.INCONSISTENT_GROUP_PROTOCOL)  # fmt: skip


def test_a_classic_join_outside_the_session_bounds_is_refused() -> None:
    consumer = mixed_group()
    join = cic.ClassicJoin("x", "c", "/h", 50, 30_000, "consumer", (("range", subscription()),))
    refused = cic.join(consumer, join, TOPICS, NOW, CONFIG, lambda: "new")
    assert (refused.code, refused.records) == (cic.INVALID_SESSION_TIMEOUT, [])
    assert "x" not in consumer.members


def test_a_classic_member_inside_expires_at_its_own_session_timeout() -> None:
    """Its classic session (10 s here), not the group's consumer one (45 s), fences it, also
    when it was loaded by replay (which gives every member the default session)."""
    consumer = mixed_group()
    assert {m.session_deadline_ms for m in consumer.members.values()} == {NOW + 45_000}
    assert consumer_heartbeat.late_members(consumer, NOW, CONFIG) == []  # deadlines clamped
    assert consumer_heartbeat.late_members(consumer, NOW + 9_999, CONFIG) == []
    assert consumer_heartbeat.late_members(consumer, NOW + 10_000, CONFIG) == ["a", "b"]
    records = consumer_heartbeat.tick(consumer, TOPICS, NOW + 10_000, CONFIG)
    assert records and sorted(consumer.members) == ["m"]


def test_a_static_member_back_with_a_new_id_keeps_its_partitions() -> None:
    """Kafka's replaceMember: a classic JoinGroup without member id naming the instance of a
    member (here the consumer-protocol m) takes its place and partitions, with no new epoch;
    a known member id under another member's instance is fenced."""
    consumer = mixed_group()
    consumer.members["m"].instance_id = "i-m"
    join = cic.ClassicJoin("", "c", "/h", 10_000, 30_000, "consumer",
                           (("range", subscription()),), True, "i-m")  # fmt: skip
    fenced = cic.join(consumer, replace(join, member_id="a"), TOPICS, NOW, CONFIG, lambda: "x")
    assert fenced.code == cic.FENCED_INSTANCE_ID
    back = cic.join(consumer, join, TOPICS, NOW, CONFIG, lambda: "m2")
    assert (back.code, back.member_id, back.replaced_consumer) == (0, "m2", True)
    assert "m" not in consumer.members and consumer.group_epoch == 7
    m2 = consumer.members["m2"]
    assert m2.assignment.assigned == {T: frozenset({3})} and m2.epoch == 7 == back.generation
    assert m2.instance_id == "i-m" and m2.classic is not None
    assert consumer.target["m2"] == {T: frozenset({3})}
    # only classic members are left: the service downgrades the group now (Kafka's
    # validateOnlineDowngradeWithReplacedMemberId)
    assert migration.downgrade_due(consumer, "", CONFIG, 1000)
