"""Static members (KIP-345) through the group coordinator service on an in-process broker
(tests/unit/broker/harness.py): a native static member's rejoin after a coordinator failover
(the group record's instance ids replayed) keeps its place with no rebalance, and a replaced
Kafka member's waiting SyncGroup is answered FENCED_INSTANCE_ID, not REBALANCE_IN_PROGRESS."""

from __future__ import annotations

import asyncio
from pathlib import Path

from coordinator.group.group import ClassicJoinAnswer
from coordinator.group.records import OFFSETS_TOPIC
from coordinator.group.states import State
from protocol.api.group import HeartbeatRequest, JoinGroupRequest
from protocol.clock import ManualClock
from protocol.errors import FencedInstanceIdError
from tests.unit.broker.harness import running_broker
from tests.unit.coordinator.group.test_service import settle

FENCED = FencedInstanceIdError.code
PROTOCOLS = [("range", b"meta")]


async def test_native_static_rejoin_after_failover_keeps_its_place(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as h:
        groups = h.ctx.groups
        await h.lead("t", 3)
        await h.lead(OFFSETS_TOPIC, 1)
        await settle(groups)
        join = JoinGroupRequest("g", 3000, ["t"], "", "range", 5000, "c1", None, "pod-0")
        first = await groups.join(join)
        assert first.error_code == 0 and first.generation_id == 1
        assert groups.heartbeat(HeartbeatRequest("g", 1, first.member_id, "pod-0")) == 0

        await groups.shutdown()  # failover: the partition given up, then replayed from the log
        again = h.ctx.groups
        again.on_leadership_change()
        await settle(again)
        back = await again.join(join)  # the restarted process: no member id, same instance
        assert (back.error_code, back.generation_id) == (0, 1)  # no rebalance
        assert back.member_id != first.member_id
        assert back.partitions_to_own == first.partitions_to_own
        assert again.heartbeat(HeartbeatRequest("g", 1, first.member_id, "pod-0")) == FENCED
        assert again.heartbeat(HeartbeatRequest("g", 1, back.member_id, "pod-0")) == 0
        (desc,) = again.describe(["g"]).groups
        assert desc.state == State.READY.value and desc.generation_id == 1
        assert [m.group_instance_id for m in desc.members] == ["pod-0"]
        await again.shutdown()


async def test_replaced_member_waiting_for_its_sync_is_fenced(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as h:
        groups = h.ctx.groups
        await h.lead(OFFSETS_TOPIC, 1)
        await settle(groups)

        def join(member: str, instance: str) -> asyncio.Task[ClassicJoinAnswer]:
            return asyncio.ensure_future(groups.join_classic(
                "k", member, "cli", "/127.0.0.1", 10_000, 10_000, "consumer", PROTOCOLS, True,
                instance,
            ))  # fmt: skip

        a = await join("", "ia")
        assert a.error_code == 0 and a.leader == a.member_id
        leader = a.member_id
        b_task = join("", "ib")
        await asyncio.sleep(0.05)
        again = await join(leader, "ia")  # the leader rejoins: generation 2 for both
        b = await b_task
        assert again.generation_id == b.generation_id == 2
        follower = b.member_id
        waiting = asyncio.ensure_future(groups.sync("k", 2, follower, {}, instance_id="ib"))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # a follower waits for the leader's assignment
        restarted = join("", "ib")  # ib comes back while the leader is still assigning
        answer = await asyncio.wait_for(waiting, 5)
        assert answer.error_code == FENCED
        restarted.cancel()
        await groups.shutdown()
