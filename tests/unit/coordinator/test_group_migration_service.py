"""Online migration between the classic and the consumer protocol through an in-process broker
(tests/unit/broker/harness.py): a classic group upgraded by a ConsumerGroupHeartbeat, its
classic member served inside the consumer group (JoinGroup, SyncGroup, Heartbeat, commits at
its member epoch) while it revokes what the assignor gave the new member, a failover that
replays the converted group, the downgrade when the last consumer-protocol member leaves, and
a failover after it. The refusals: policy disabled, another protocol type."""

from __future__ import annotations

import asyncio
import io
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

from kio.schema.consumer_protocol_subscription.v1 import data as sub_v1
from kio.serial import entity_writer

from coordinator.group.consumer_group import GROUP_ID_NOT_FOUND
from protocol.clock import ManualClock
from protocol.kafka.consumer_protocol import assigned_partitions
from protocol.kafka.versions import CONSUMER_GROUP_DESCRIBE, DESCRIBE_GROUPS, LIST_GROUPS
from tests.unit.coordinator.test_consumer_group_service import (
    T_ID,
    assigned,
    broker,
    commit,
    heartbeat,
    settle,
)

REBALANCE_IN_PROGRESS = 27
ILLEGAL_GENERATION = 22


def subscription(owned: list[int] | None = None) -> bytes:
    """A ConsumerProtocol Subscription v1 for topic "t", owning `owned`."""
    tps = () if not owned else (sub_v1.TopicPartition(topic="t", partitions=tuple(owned)),)  # type: ignore[arg-type]
    entity = sub_v1.ConsumerProtocolSubscription(topics=("t",), owned_partitions=tps)
    buf = io.BytesIO()
    buf.write(struct.pack(">h", 1))
    entity_writer(sub_v1.ConsumerProtocolSubscription)(buf, entity)
    return buf.getvalue()


async def classic_join(groups: Any, member_id: str, owned: list[int] | None = None) -> Any:
    return await groups.join_classic(
        "g", member_id, "c", "/h", 10_000, 10_000, "consumer",
        [("range", subscription(owned))], False,
    )  # fmt: skip


def parts(assignment: bytes) -> list[int]:
    return [p for _, p in assigned_partitions(assignment)]


async def group_type(k: Any) -> list[tuple[str, str, str]]:
    listed = await k.call(LIST_GROUPS, 5, states_filter=(), types_filter=())
    return [(x.group_id, x.group_type, x.group_state) for x in listed.groups]


async def failover(h: Any) -> None:
    await h.ctx.groups.shutdown()  # gives every partition up: the next load replays the log
    h.ctx.groups.on_leadership_change()
    await settle(h)


async def test_upgrade_serve_classic_member_inside_and_downgrade(tmp_path: Path) -> None:
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        groups = h.ctx.groups
        a = await classic_join(groups, "")
        assert (a.error_code, a.generation_id) == (0, 1)
        synced = await groups.sync("g", 1, a.member_id, {a.member_id: _assignment([0, 1, 2, 3])})
        assert parts(synced.assignment) == [0, 1, 2, 3]
        assert await commit(k, "g", a.member_id, 1, 7) == 0

        # upgrade: a consumer-protocol member joins the non-empty classic group
        m1 = await heartbeat(k, "m1", 0)
        assert (m1.error_code, m1.member_epoch) == (0, 2)
        assert assigned(m1) == {}  # its target is still a's: it waits for a to revoke
        assert await group_type(k) == [("g", "consumer", "Reconciling")]

        # the classic member inside: told to rejoin; still commits at its epoch (generation 1)
        assert groups.heartbeat(_hb(a.member_id, 1)) == REBALANCE_IN_PROGRESS
        assert await commit(k, "g", a.member_id, 1, 8) == 0
        again = await classic_join(groups, a.member_id, owned=[0, 1, 2, 3])
        assert (again.error_code, again.generation_id, again.leader) == (0, 1, "")
        assert again.protocol_name == "range"
        kept = await groups.sync("g", 1, a.member_id, {})
        assert kept.error_code == 0 and len(parts(kept.assignment)) == 2  # it gives two up
        assert groups.heartbeat(_hb(a.member_id, 1)) == REBALANCE_IN_PROGRESS  # to revoke
        done = await classic_join(groups, a.member_id, owned=parts(kept.assignment))
        assert done.generation_id == 2
        assert parts((await groups.sync("g", 2, a.member_id, {})).assignment) == parts(
            kept.assignment
        )
        assert groups.heartbeat(_hb(a.member_id, 2)) == 0
        assert groups.heartbeat(_hb(a.member_id, 1)) == ILLEGAL_GENERATION
        assert await commit(k, "g", a.member_id, 1, 9) == ILLEGAL_GENERATION
        m1 = await heartbeat(k, "m1", 2)
        assert sorted(assigned(m1)[T_ID] + parts(kept.assignment)) == [0, 1, 2, 3]

        # a failover replays the converted group: both members, their epochs and partitions
        await failover(h)
        assert groups.heartbeat(_hb(a.member_id, 2)) == 0  # still a classic member, epoch 2
        desc = await k.call(
            CONSUMER_GROUP_DESCRIBE, 1, group_ids=("g",), include_authorized_operations=False
        )
        owned = {m.member_id: sorted(m.assignment.topic_partitions[0].partitions)
                 for m in desc.groups[0].members}  # fmt: skip
        assert owned == {a.member_id: parts(kept.assignment), "m1": sorted(assigned(m1)[T_ID])}
        types = {m.member_id: m.member_type for m in desc.groups[0].members}
        assert types == {a.member_id: 0, "m1": 1}  # KIP-1099: classic 0, consumer 1

        # downgrade: the last consumer-protocol member leaves; a classic group rebalances
        left = await heartbeat(k, "m1", -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        assert await group_type(k) == [("g", "classic", "PreparingRebalance")]
        dg = await k.call(DESCRIBE_GROUPS, 5, groups=("g",), include_authorized_operations=False)
        assert [m.member_id for m in dg.groups[0].members] == [a.member_id]
        assert groups.heartbeat(_hb(a.member_id, 2)) == REBALANCE_IN_PROGRESS
        rejoined = await classic_join(groups, a.member_id)
        assert (rejoined.error_code, rejoined.generation_id) == (0, 3)
        assert rejoined.leader == a.member_id
        await groups.sync("g", 3, a.member_id, {a.member_id: _assignment([0, 1, 2, 3])})
        await failover(h)
        assert await group_type(k) == [("g", "classic", "Stable")]
        assert groups.heartbeat(_hb(a.member_id, 3)) == 0
        got = groups.offsets.fetch_offsets(_fetch("g")).topics[0].partitions[0]
        assert got.offset == 8  # the offsets lived through both conversions and reloads


async def test_upgrade_refused_with_why(tmp_path: Path) -> None:
    """policy disabled (or upgrade refused by a downgrade-only policy): GROUP_ID_NOT_FOUND
    with the reason; a consumer group whose last consumer member leaves stays one when the
    policy refuses the downgrade."""
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        groups = h.ctx.groups
        configs = groups.consumer.configs
        configs.defaults = replace(configs.defaults, migration_policy="disabled")
        a = await classic_join(groups, "")
        await groups.sync("g", 1, a.member_id, {a.member_id: _assignment([0, 1, 2, 3])})
        refused = await heartbeat(k, "m1", 0)
        assert refused.error_code == GROUP_ID_NOT_FOUND
        assert "online upgrade to the consumer protocol is disabled" in refused.error_message
        assert "group_consumer_migration_policy=disabled" in refused.error_message
        configs.defaults = replace(configs.defaults, migration_policy="upgrade")
        assert (await heartbeat(k, "m1", 0)).error_code == 0
        assert (await heartbeat(k, "m1", -1)).error_code == 0  # no downgrade: upgrade only
        assert await group_type(k) == [("g", "consumer", "Reconciling")]
        assert groups.heartbeat(_hb(a.member_id, 1)) == REBALANCE_IN_PROGRESS


async def test_downgrade_at_session_expiry(tmp_path: Path) -> None:
    """The consumer-protocol member's session expires: the classic members remain, so the
    group becomes classic again (and rebalances) instead of fencing it in a consumer group."""
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        groups = h.ctx.groups
        a = await classic_join(groups, "")
        await groups.sync("g", 1, a.member_id, {a.member_id: _assignment([0, 1, 2, 3])})
        assert (await heartbeat(k, "m1", 0)).error_code == 0
        clock.advance(9_000)  # a keeps its classic session (10 s) alive; m1's is 45 s
        assert groups.heartbeat(_hb(a.member_id, 1)) == REBALANCE_IN_PROGRESS
        assert await classic_join(groups, a.member_id) is not None
        for _ in range(5):
            clock.advance(9_000)
            groups.heartbeat(_hb(a.member_id, 2))
            groups.tick()
        for _ in range(100):
            if await group_type(k) == [("g", "classic", "PreparingRebalance")]:
                break
            await asyncio.sleep(0.01)
        assert await group_type(k) == [("g", "classic", "PreparingRebalance")]


async def test_the_last_consumer_members_instance_back_as_classic_downgrades(
    tmp_path: Path,
) -> None:
    """A static consumer-protocol member (group.instance.id) restarts with the classic
    protocol: its JoinGroup without member id replaces it, and as only classic members are
    left the group goes back to classic (Kafka's validateOnlineDowngradeWithReplacedMemberId)."""
    clock = ManualClock()
    async with broker(tmp_path, clock) as (h, k):
        groups = h.ctx.groups
        a = await classic_join(groups, "")
        await groups.sync("g", 1, a.member_id, {a.member_id: _assignment([0, 1, 2, 3])})
        assert (await heartbeat(k, "m1", 0, instance_id="i1")).error_code == 0
        assert (await heartbeat(k, "m1", 2, instance_id="i1", owned={T_ID: []})).error_code == 0
        back = await groups.join_classic(
            "g", "", "c", "/h", 10_000, 10_000, "consumer", [("range", subscription())], False,
            "i1",
        )  # fmt: skip
        assert back.error_code == 0 and back.member_id != "m1"
        assert await group_type(k) == [("g", "classic", "PreparingRebalance")]
        dg = await k.call(DESCRIBE_GROUPS, 5, groups=("g",), include_authorized_operations=False)
        assert sorted(m.member_id for m in dg.groups[0].members) == sorted(
            [a.member_id, back.member_id]
        )


def _assignment(ps: list[int]) -> bytes:
    from protocol.kafka.consumer_protocol import encode_assignment

    return encode_assignment([("t", p) for p in ps])


def _hb(member_id: str, generation: int) -> Any:
    from protocol.api.group import HeartbeatRequest

    return HeartbeatRequest("g", generation, member_id)


def _fetch(group_id: str) -> Any:
    from protocol.api.group import OffsetFetchRequest

    return OffsetFetchRequest(group_id, None)
