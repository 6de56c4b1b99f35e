"""The group coordinator inside an in-process broker (tests/unit/broker/harness.py): requests
over the wire, records in a real log, loading by replay, leadership changes, a manual clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

from coordinator.group.records import OFFSETS_TOPIC
from coordinator.group.service import GroupCoordinator
from coordinator.group.states import State
from coordinator.runtime.states import PartitionState
from protocol.api.group import (
    CommitPartition,
    CommitTopic,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TopicPartitions,
)
from protocol.batch import build_batch
from protocol.clock import ManualClock
from protocol.errors import (
    CoordinatorLoadInProgressError,
    IllegalGenerationError,
    NotCoordinatorError,
    UnknownMemberIdError,
)
from tests.unit.broker.harness import running_broker


async def settle(groups: GroupCoordinator) -> None:
    for _ in range(100):
        if all(o.state is PartitionState.READY for o in groups.owned.values()):
            return
        await asyncio.sleep(0.01)


async def test_join_commit_failover_expiry_and_resign(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as h:
        groups = h.ctx.groups
        await h.lead("t", 3)
        await h.lead(OFFSETS_TOPIC, 1)  # LeaderAndIsr: this broker becomes coordinator
        await settle(groups)
        conn = await h.connect()
        found = await conn.send(FindCoordinatorRequest("g"))
        assert (found.error_code, found.node_id, found.port) == (0, 1, h.port)
        joined = await conn.send(JoinGroupRequest("g", 3000, ["t"], "", "range", 5000, "c1"))
        assert joined.error_code == 0 and joined.generation_id == 1
        assert joined.partitions_to_own == [TopicPartitions("t", [0, 1, 2])]
        member = joined.member_id
        assert member.startswith("c1-")
        commit = OffsetCommitRequest("g", 1, member, [CommitTopic("t", [CommitPartition(1, 42)])])
        resp = await conn.send(commit)
        assert resp.topics[0].partitions[0].error_code == 0
        stale = OffsetCommitRequest("g", 0, member, [CommitTopic("t", [CommitPartition(1, 1)])])
        resp = await conn.send(stale)
        assert resp.topics[0].partitions[0].error_code == IllegalGenerationError.code
        fetched = await conn.send(OffsetFetchRequest("g", [TopicPartitions("t", [1, 2])]))
        assert [(p.partition, p.offset) for p in fetched.topics[0].partitions] == [(1, 42), (2, -1)]

        # failover: the coordinator gives the partition up and loads the group again by
        # replaying the log (a record that is not the coordinator's, e.g. a client's write,
        # is skipped)
        junk = build_batch([(b"junk", b"\x01", None, 0)])
        assert h.ctx.replicas.append(OFFSETS_TOPIC, 0, junk).error_code == 0
        await groups.shutdown()
        again = h.ctx.groups
        again.on_leadership_change()
        hb = HeartbeatRequest("g", 1, member)
        assert again.heartbeat(hb) == CoordinatorLoadInProgressError.code  # Catch up
        await settle(again)
        assert again.heartbeat(hb) == 0
        fetched = await conn.send(OffsetFetchRequest("g", None))
        assert [(p.partition, p.offset) for p in fetched.topics[0].partitions] == [(1, 42)]

        # session expiry on the manual clock: the member is removed, the group is empty
        clock.advance(3001)
        again.tick()
        await asyncio.sleep(0.05)
        assert again.heartbeat(hb) == UnknownMemberIdError.code
        assert again.describe(["g"]).groups[0].state == State.EMPTY.value

        # another broker leads the offsets partition now: Down
        await h.lead(OFFSETS_TOPIC, 1, leader=2)
        assert again.heartbeat(hb) == NotCoordinatorError.code
        await again.shutdown()


async def test_a_resigned_leadership_answers_not_coordinator_at_once(tmp_path: Path) -> None:
    """The ZooKeeper fence resigns partitions without a LeaderAndIsr or a coordinator tick: the
    very next group request must not be answered from the dropped leadership's cache."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as h:
        groups = h.ctx.groups
        await h.lead("t", 1)
        await h.lead(OFFSETS_TOPIC, 1)
        await settle(groups)
        conn = await h.connect()
        commit = OffsetCommitRequest("g", -1, "", [CommitTopic("t", [CommitPartition(0, 7)])])
        assert (await conn.send(commit)).topics[0].partitions[0].error_code == 0
        wanted = OffsetFetchRequest("g", [TopicPartitions("t", [0])])
        assert (await conn.send(wanted)).topics[0].partitions[0].offset == 7

        h.ctx.replicas.partitions[(OFFSETS_TOPIC, 0)].resign()  # as broker/zk_fence.py does
        fetched = await conn.send(wanted)
        assert (fetched.error_code, fetched.topics) == (NotCoordinatorError.code, [])
        assert groups.owned == {}, "the coordinator gave the partition up"
        await groups.shutdown()
