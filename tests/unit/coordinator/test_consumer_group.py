"""KIP-848 consumer group operations, pure: joins, epochs, incremental reconciliation,
leaves, expiry, regex subscriptions, static members, validation, replay after a failover."""

from __future__ import annotations

import itertools
import uuid

from coordinator.group import consumer_group as cg
from coordinator.group import consumer_heartbeat as hb
from coordinator.group import consumer_replay
from coordinator.group.consumer_group import (
    ConsumerConfig,
    ConsumerGroup,
    HeartbeatIn,
    Topics,
)
from coordinator.group.consumer_records import ConsumerKey, decode_value, encode_value
from coordinator.group.consumer_states import GroupState, MemberState

A = uuid.UUID(int=1)
B = uuid.UUID(int=2)
TOPICS = Topics({"a": (A, 4), "b": (B, 2), "__consumer_offsets": (uuid.UUID(int=9), 50)})
CONFIG = ConsumerConfig()
_ids = itertools.count()


def new_id() -> str:
    return f"m{next(_ids)}"


def join(group: ConsumerGroup, member: str, topics=("a",), now: int = 0, **kw) -> hb.Outcome:
    req = HeartbeatIn("g", member, 0, rebalance_timeout_ms=1000,
                      subscribed_topic_names=tuple(topics), owned={}, **kw)  # fmt: skip
    return hb.heartbeat(group, req, TOPICS, now, CONFIG, new_id)


def beat(group: ConsumerGroup, member: str, epoch: int, owned=None, now: int = 0) -> hb.Outcome:
    return hb.heartbeat(group, HeartbeatIn("g", member, epoch, owned=owned), TOPICS, now,
                        CONFIG, new_id)  # fmt: skip


def settle(group: ConsumerGroup, now: int = 0) -> None:
    """Heartbeat every member, owning what it was given, until the group is Stable."""
    for _ in range(20):
        for mid, m in list(group.members.items()):
            out = beat(group, mid, m.epoch, dict(m.assignment.assigned), now)
            assert out.response.error_code == 0
        if group.state is GroupState.STABLE:
            return
    raise AssertionError(f"not stable: {group}")


def count(group: ConsumerGroup, mid: str) -> int:
    return sum(len(ps) for ps in group.members[mid].assignment.assigned.values())


def test_first_member_gets_everything_at_epoch_one() -> None:
    group = ConsumerGroup("g")
    out = join(group, "m1", ("a", "b"))
    r = out.response
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "m1", 1)
    assert r.heartbeat_interval_ms == 5000
    assert r.assignment == {A: frozenset(range(4)), B: frozenset(range(2))}
    assert group.state is GroupState.STABLE
    assert group.group_epoch == group.target_epoch == 1
    kinds = [r.key.record_type for r in out.records if isinstance(r.key, ConsumerKey)]
    assert kinds == [5, 4, 3, 7, 6, 8]  # member, partitions, epoch, target, target epoch, current


def test_member_id_generated_when_absent() -> None:
    group = ConsumerGroup("g")
    out = join(group, "")
    assert out.response.member_id and out.response.member_id in group.members


def test_second_member_waits_for_revocation() -> None:
    """The newcomer gets nothing the first member still owns; it gets them once revoked."""
    group = ConsumerGroup("g")
    join(group, "m1")
    out = join(group, "m2")
    assert out.response.member_epoch == 2
    assert out.response.assignment == {}  # all of its target is still owned by m1
    assert group.members["m2"].assignment.state is MemberState.UNRELEASED_PARTITIONS
    assert group.state is GroupState.RECONCILING
    # m1 heartbeats at epoch 1, still owning all: it is asked to revoke two partitions
    m1 = beat(group, "m1", 1, {A: frozenset(range(4))})
    assert m1.response.member_epoch == 1
    kept = m1.response.assignment[A]
    assert len(kept) == 2
    assert group.members["m1"].assignment.state is MemberState.UNREVOKED_PARTITIONS
    # m2 still gets nothing: the partitions are pending revocation
    assert beat(group, "m2", 2).response.assignment is None
    assert count(group, "m2") == 0
    # m1 revokes: it moves to epoch 2; then m2 gets the freed partitions
    m1 = beat(group, "m1", 1, {A: kept})
    assert m1.response.member_epoch == 2
    m2 = beat(group, "m2", 2)
    assert m2.response.assignment == {A: frozenset(range(4)) - kept}
    assert group.state is GroupState.STABLE


def test_leave_frees_partitions_and_bumps_epoch() -> None:
    group = ConsumerGroup("g")
    join(group, "m1")
    join(group, "m2")
    settle(group)
    epoch = group.group_epoch
    out = beat(group, "m2", group.members["m2"].epoch)
    out = hb.heartbeat(group, HeartbeatIn("g", "m2", -1), TOPICS, 0, CONFIG, new_id)
    assert out.response.member_epoch == -1
    assert "m2" not in group.members and group.group_epoch == epoch + 1
    tombstones = [(r.key.record_type, r.key.member_id) for r in out.records if r.value is None]
    assert tombstones == [(8, "m2"), (7, "m2"), (5, "m2")]
    settle(group)
    assert count(group, "m1") == 4


def test_fenced_epochs() -> None:
    group = ConsumerGroup("g")
    join(group, "m1")
    ahead = beat(group, "m1", 5).response
    assert ahead.error_code == cg.FENCED_MEMBER_EPOCH and "greater member epoch (5)" in (
        ahead.error_message or ""
    )
    join(group, "m2")
    settle(group)
    epoch = group.members["m1"].epoch
    behind = beat(group, "m1", epoch - 1, {A: frozenset(range(4))}).response
    assert behind.error_code == cg.FENCED_MEMBER_EPOCH
    assert "smaller member epoch" in (behind.error_message or "")


def test_previous_epoch_accepted_when_response_was_lost() -> None:
    group = ConsumerGroup("g")
    join(group, "m1")
    join(group, "m2")
    settle(group)
    m1 = group.members["m1"]
    prev, owned = m1.assignment.previous_member_epoch, dict(m1.assignment.assigned)
    assert beat(group, "m1", prev, owned).response.error_code == 0


def test_unknown_member_and_validation_messages() -> None:
    group = ConsumerGroup("g")
    r = beat(group, "ghost", 3).response
    assert r.error_code == cg.UNKNOWN_MEMBER_ID and "ghost" in (r.error_message or "")
    bad = hb.heartbeat(group, HeartbeatIn("g", "m", 0, owned={}), TOPICS, 0, CONFIG, new_id)
    assert bad.response.error_code == cg.INVALID_REQUEST
    assert bad.response.error_message == "RebalanceTimeoutMs must be provided in first request."
    r = join(group, "m", server_assignor="sticky").response
    assert r.error_code == cg.UNSUPPORTED_ASSIGNOR
    assert (
        r.error_message
        == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    )
    r = hb.heartbeat(group, HeartbeatIn("g", "m", -3), TOPICS, 0, CONFIG, new_id).response
    assert (r.error_code, r.error_message) == (cg.INVALID_REQUEST, "MemberEpoch is invalid.")
    r = join(group, "m", (), subscribed_topic_regex="(").response
    assert r.error_code == cg.INVALID_REGULAR_EXPRESSION
    # RE2 syntax, as Kafka's RE2/J: no backreferences, and the message gives RE2's reason
    r = join(group, "m", (), subscribed_topic_regex=r"(t)\1").response
    assert (r.error_code, r.error_message) == (
        cg.INVALID_REGULAR_EXPRESSION,
        r"SubscribedTopicRegex `(t)\1` is not a valid regular expression: invalid escape"
        r" sequence: \1.",
    )
    assert not group.members


def test_max_size() -> None:
    group = ConsumerGroup("g")
    small = ConsumerConfig(max_size=1)
    req = HeartbeatIn("g", "m1", 0, rebalance_timeout_ms=1, subscribed_topic_names=("a",),
                      owned={})  # fmt: skip
    assert hb.heartbeat(group, req, TOPICS, 0, small, new_id).response.error_code == 0
    req2 = HeartbeatIn("g", "m2", 0, rebalance_timeout_ms=1, subscribed_topic_names=("a",),
                       owned={})  # fmt: skip
    r = hb.heartbeat(group, req2, TOPICS, 0, small, new_id).response
    assert r.error_code == cg.GROUP_MAX_SIZE_REACHED and "capacity of 1" in (r.error_message or "")


def test_regex_subscription_full_match_excludes_internal() -> None:
    group = ConsumerGroup("g")
    r = join(group, "m1", (), subscribed_topic_regex="[ab]|__.*").response
    assert r.assignment == {A: frozenset(range(4)), B: frozenset(range(2))}
    group2 = ConsumerGroup("g")
    r = join(group2, "m1", (), subscribed_topic_regex="a.").response  # "a" does not full-match
    assert r.assignment == {}


def test_new_partitions_bump_the_epoch() -> None:
    group = ConsumerGroup("g")
    join(group, "m1")
    grown = Topics({"a": (A, 6)})
    r = hb.heartbeat(group, HeartbeatIn("g", "m1", 1), grown, 0, CONFIG, new_id).response
    assert r.member_epoch == 2 and r.assignment == {A: frozenset(range(6))}


def test_session_expiry_fences() -> None:
    group = ConsumerGroup("g")
    join(group, "m1", now=0)
    join(group, "m2", now=0)
    settle(group, now=40_000)  # both heartbeat at 40 s
    beat(group, "m1", group.members["m1"].epoch, now=80_000)
    records = hb.tick(group, TOPICS, 85_000, CONFIG)  # m2 silent since 40 s: 45 s passed
    assert "m2" not in group.members and records
    assert hb.tick(group, TOPICS, 85_000, CONFIG) == []


def test_revocation_timeout_fences() -> None:
    group = ConsumerGroup("g")
    join(group, "m1", now=0)
    join(group, "m2", now=0)
    beat(group, "m1", 1, {A: frozenset(range(4))}, now=10)  # asked to revoke, deadline 1010
    assert group.members["m1"].assignment.state is MemberState.UNREVOKED_PARTITIONS
    assert hb.tick(group, TOPICS, 1009, CONFIG) == []
    hb.tick(group, TOPICS, 1010, CONFIG)
    assert "m1" not in group.members
    settle(group, now=1010)
    assert count(group, "m2") == 4


def test_static_member_leaves_and_rejoins_with_its_partitions() -> None:
    group = ConsumerGroup("g")
    join(group, "s1", instance_id="i1")
    join(group, "m2")
    settle(group)
    before = dict(group.members["s1"].assignment.assigned)
    epoch = group.group_epoch
    r = hb.heartbeat(group, HeartbeatIn("g", "s1", -2, instance_id="i1"), TOPICS, 0, CONFIG,
                     new_id).response  # fmt: skip
    assert r.member_epoch == -2 and group.group_epoch == epoch  # no rebalance
    taken = join(group, "other", instance_id="i1")
    assert taken.response.error_code == 0
    assert group.group_epoch == epoch  # the instance takes its place back: no rebalance
    assert "s1" not in group.members
    assert group.members["other"].assignment.assigned == before
    assert taken.response.assignment == before


def test_static_instance_in_use_is_refused() -> None:
    group = ConsumerGroup("g")
    join(group, "s1", instance_id="i1")
    r = join(group, "s2", instance_id="i1").response
    assert r.error_code == cg.UNRELEASED_INSTANCE_ID and "i1" in (r.error_message or "")


def test_commit_checks() -> None:
    group = ConsumerGroup("g")
    assert cg.check_commit(group, "", -1) == (0, None)  # admin into an empty group
    assert cg.check_commit(group, "own-id", -1) == (0, None)  # a consumer that assign()s
    join(group, "m1")
    assert cg.check_commit(group, "", -1)[0] == cg.UNKNOWN_MEMBER_ID
    assert cg.check_commit(group, "own-id", -1)[0] == cg.UNKNOWN_MEMBER_ID
    assert cg.check_commit(group, "m1", 1) == (0, None)
    assert cg.check_commit(group, "m1", 0)[0] == cg.STALE_MEMBER_EPOCH


def test_replay_rebuilds_the_group() -> None:
    """A failover: the records, encoded and decoded, rebuild epochs and assignments."""
    group = ConsumerGroup("g")
    log = []
    log += join(group, "m1", ("a", "b"), instance_id="i").records
    log += join(group, "m2", ("a",)).records
    log += beat(group, "m1", 1, {A: frozenset(range(4)), B: frozenset(range(2))}).records
    log += join(group, "m3", ("b",)).records
    log += hb.heartbeat(group, HeartbeatIn("g", "m3", -1), TOPICS, 0, CONFIG, new_id).records
    loaded = ConsumerGroup("g")
    for rec in log:
        assert isinstance(rec.key, ConsumerKey)
        value = decode_value(rec.key.record_type, encode_value(rec.key.record_type, rec.value))
        consumer_replay.replay(loaded, rec.key, value, 0)
    assert (loaded.group_epoch, loaded.target_epoch) == (group.group_epoch, group.target_epoch)
    assert loaded.target == group.target and loaded.subscription == group.subscription
    assert loaded.members.keys() == group.members.keys()
    for mid, m in group.members.items():
        assert loaded.members[mid].assignment == m.assignment
        assert loaded.members[mid].metadata_value() == m.metadata_value()
    assert loaded.state is group.state


def test_delete_tombstones_everything() -> None:
    group = ConsumerGroup("g")
    join(group, "m1")
    hb.heartbeat(group, HeartbeatIn("g", "m1", -1), TOPICS, 0, CONFIG, new_id)
    records = consumer_replay.delete_records(group)
    assert all(r.value is None for r in records)
    for r in records:
        assert isinstance(r.key, ConsumerKey)
        consumer_replay.replay(group, r.key, r.value, 0)
    assert group.state is GroupState.DEAD


def test_a_loaded_member_gets_the_configured_session() -> None:
    """Replay gives loaded members the default 45 s session; a shorter configured one wins."""
    group = ConsumerGroup("g")
    log = join(group, "m1").records
    loaded = ConsumerGroup("g")
    for rec in log:
        assert isinstance(rec.key, ConsumerKey)
        consumer_replay.replay(loaded, rec.key, rec.value, 1000)
    short = ConsumerConfig(session_timeout_ms=6000)
    assert hb.tick(loaded, TOPICS, 1000, short) == []
    assert hb.tick(loaded, TOPICS, 7000, short)
    assert "m1" not in loaded.members


def test_expired_offsets_take_an_empty_consumer_group_with_them() -> None:
    """KIP-211 expiry of an empty consumer group's last offsets tombstones its KIP-848 records
    too, so once compaction has dropped the tombstones a reload does not bring it back."""
    from coordinator.group import offsets as offset_ops
    from coordinator.group.consumer_service import with_group_deleted
    from coordinator.group.records import offset_record
    from coordinator.group.service import _replay

    log = [offset_record("g", "a", 0, 5, None, 0)]
    consumer = ConsumerGroup("g")
    log += join(consumer, "m1").records
    log += hb.heartbeat(consumer, HeartbeatIn("g", "m1", -1), TOPICS, 0, CONFIG, new_id).records
    groups: dict = {}
    for rec in log:
        _replay(groups, rec, 0)
    group = groups["g"]
    assert group.consumer is not None and not group.consumer.members
    expired = offset_ops.expire_offsets(group, 10 * 86_400_000, 86_400_000, 0).records
    records = with_group_deleted(group, expired)
    assert len(records) > len(expired)
    # compaction keeps each key's last record and, in time, drops the tombstones
    latest = {rec.key: rec for rec in log + records}
    reloaded: dict = {}
    for rec in latest.values():
        if rec.value is not None:
            _replay(reloaded, rec, 0)
    assert "g" not in reloaded
