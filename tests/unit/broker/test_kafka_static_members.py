"""Static membership (KIP-345) through the Kafka door of an in-process broker: JoinGroup v9
(flexible, skip_assignment for a static leader's restart) and v5 (the restarted leader is told
its old id, so it syncs as a follower), Heartbeat v4 fencing the old id, DescribeGroups v5
showing the instance id, LeaveGroup v5 removing by instance id with per-member codes."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from coordinator.group.records import OFFSETS_TOPIC
from protocol.clock import ManualClock
from protocol.kafka.codec import nested, request_class
from protocol.kafka.versions import DESCRIBE_GROUPS, HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP
from tests.unit.broker.harness import running_broker
from tests.unit.broker.test_kafka_door import KafkaRaw
from tests.unit.coordinator.group.test_service import settle

FENCED_INSTANCE_ID = 82
UNKNOWN_MEMBER_ID = 25
SESSION = datetime.timedelta(seconds=10)


async def _call(c: KafkaRaw, key: int, version: int, **fields: Any) -> Any:
    c.send(key, version, 7, **fields)
    _, resp = await c.read(key, version)
    return resp


async def _join(c: KafkaRaw, version: int, group: str, member: str, instance: str) -> Any:
    protocol = nested(request_class(JOIN_GROUP, version), "JoinGroupRequestProtocol")(
        name="range", metadata=b"sub"
    )
    return await _call(c, JOIN_GROUP, version, group_id=group, session_timeout=SESSION,
                       rebalance_timeout=SESSION, member_id=member, group_instance_id=instance,
                       protocol_type="consumer", protocols=(protocol,), reason=None)  # fmt: skip


async def _sync(c: KafkaRaw, group: str, generation: int, member: str, instance: str,
                assignments: dict[str, bytes]) -> Any:  # fmt: skip
    cls = nested(request_class(SYNC_GROUP, 5), "SyncGroupRequestAssignment")
    return await _call(c, SYNC_GROUP, 5, group_id=group, generation_id=generation,
                       member_id=member, group_instance_id=instance, protocol_type="consumer",
                       protocol_name="range",
                       assignments=tuple(cls(member_id=m, assignment=a)
                                         for m, a in assignments.items()))  # fmt: skip


async def test_static_members_through_the_kafka_door(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as h:
        groups = h.ctx.groups
        await h.lead(OFFSETS_TOPIC, 1)
        await settle(groups)
        c = await KafkaRaw.connect(h.kafka_port)
        first = await _join(c, 9, "g9", "", "ia")  # static: no MEMBER_ID_REQUIRED round trip
        assert first.error_code.value == 0 and first.generation_id == 1
        old = first.member_id
        assert first.leader == old and [(m.member_id, m.group_instance_id)
                                        for m in first.members] == [(old, "ia")]  # fmt: skip
        synced = await _sync(c, "g9", 1, old, "ia", {old: b"mine"})
        assert synced.error_code.value == 0 and synced.assignment == b"mine"

        back = await _join(c, 9, "g9", "", "ia")  # the leader restarted
        assert back.error_code.value == 0 and back.generation_id == 1  # no rebalance
        new = back.member_id
        assert new != old and back.leader == new and back.skip_assignment
        assert [(m.member_id, m.group_instance_id) for m in back.members] == [(new, "ia")]
        hb = await _call(c, HEARTBEAT, 4, group_id="g9", generation_id=1, member_id=old,
                         group_instance_id="ia")  # fmt: skip
        assert hb.error_code.value == FENCED_INSTANCE_ID
        synced = await _sync(c, "g9", 1, new, "ia", {})
        assert synced.error_code.value == 0 and synced.assignment == b"mine"
        described = await _call(c, DESCRIBE_GROUPS, 5, groups=("g9",),
                                include_authorized_operations=False)  # fmt: skip
        assert [(m.member_id, m.group_instance_id) for m in described.groups[0].members] == [
            (new, "ia")]  # fmt: skip

        # v5 (before KIP-814): the restarted leader is told the old leader, so it only syncs
        v5 = await _join(c, 5, "g5", "", "ib")
        await _sync(c, "g5", 1, v5.member_id, "ib", {v5.member_id: b"x"})
        again = await _join(c, 5, "g5", "", "ib")
        assert again.error_code.value == 0 and again.generation_id == 1
        assert again.leader == v5.member_id != again.member_id and not again.members

        who = nested(request_class(LEAVE_GROUP, 5), "MemberIdentity")
        left = await _call(c, LEAVE_GROUP, 5, group_id="g9", members=(
            who(member_id="", group_instance_id="ia", reason="admin"),
            who(member_id="", group_instance_id="zz", reason=None),
        ))  # fmt: skip
        assert left.error_code.value == 0
        assert [(m.group_instance_id, m.error_code.value) for m in left.members] == [
            ("ia", 0), ("zz", UNKNOWN_MEMBER_ID)]  # fmt: skip
        c.close()
        await groups.shutdown()
