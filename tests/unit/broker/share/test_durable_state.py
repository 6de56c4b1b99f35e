"""Durable share state on a leader (broker/share/manager.py with broker/share/persister.py):
on an in-process broker (tests/unit/broker/harness.py) with the real share coordinator, a
share partition is initialized and loaded through it, acknowledgements are written before
they are answered, and a new leader epoch loads the state again: what was accepted is not
delivered again, a released record and the records in flight come back with their delivery
counts carried over. The pure window <-> batches mapping is tested first.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

from broker.operations import share_fetch
from broker.operations.share_requests import AckBatch, PartitionIn
from broker.share.manager import SharePartitionManager
from broker.share.settings import share_settings
from broker.share.share_partition import (
    Acquired,
    ShareLimits,
    SharePartition,
    from_state,
    state_batches,
)
from protocol.api.controller import UpdateMetadataRequest
from protocol.topic_ids import encode_topic_id
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.operations.test_group_operations import give_id, run
from tests.unit.broker.operations.test_share_operations import produced
from tests.unit.broker.operations.test_share_state_operations import coordinate_shares

ACCEPT, RELEASE = 1, 2
LIMITS = ShareLimits()


def test_the_window_is_persisted_whole_and_loads_back() -> None:
    sp = SharePartition(10)
    sp.acquire("m", [(10, 14), (16, 17)], 100, LIMITS, 0, scanned_to=18)  # 15: no record
    assert sp.acknowledge("m", 10, 10, [ACCEPT], LIMITS, 0) == 0  # SPSO moves to 11
    assert sp.acknowledge("m", 12, 12, [RELEASE], LIMITS, 0) == 0
    ranges, done = state_batches(sp)
    # acquired records are persisted Available with their count; 15 (no record) Archived
    assert ranges == [(11, 14, 0, 1), (15, 15, 4, 0), (16, 17, 0, 1)]
    assert done == 1
    loaded = from_state(sp.start_offset, ranges)
    assert (loaded.start_offset, loaded.end_offset) == (11, 18)
    # every in-flight record is Available again, with its count
    assert loaded.acquire("n", [(11, 17)], 100, LIMITS, 0) == [Acquired(11, 14, 2),
                                                               Acquired(16, 17, 2)]  # fmt: skip
    # a window that begins with done offsets starts after them
    assert from_state(0, [(0, 4, 2, 1), (5, 5, 0, 3)]).start_offset == 5


def _fetch(member: str, epoch: int, topic_id: uuid.UUID, *acks: AckBatch) -> share_fetch.ShareFetch:
    return share_fetch.ShareFetch(
        "s", member, epoch, 5_000, 1, 1 << 20, 100, (PartitionIn(topic_id, 0, acks),)
    )


async def _new_leader_epoch(b: BrokerHarness, topic_id: uuid.UUID) -> None:
    """The controller moves "t" to a new leader epoch (here, on the same broker)."""
    b.leader_epochs[("t", 0)] = b.leader_epochs.get(("t", 0), 0) + 1
    await b.lead("t")
    state = dataclasses.replace(b.state("t", 0), topic_id=encode_topic_id(topic_id))
    conn = await b.connect()
    req = UpdateMetadataRequest(0, b.controller_epoch, [state], [b.broker_info()], [])
    assert (await conn.send(req)).error_code == 0


async def test_a_new_leader_epoch_loads_what_was_acknowledged(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        ctx = b.ctx
        ctx.share = SharePartitionManager(
            ctx.replicas, ctx.clock,
            share_settings(lambda: ctx.config, ctx.groups.configs.overrides),
            persister=ctx.share_persister,  # the daemon's: this broker's share coordinator
        )  # fmt: skip
        await b.lead("t")
        topic_id = await give_id(b, "t")
        await coordinate_shares(b)
        await produced(b, 5)
        ctx.groups.configs.apply("s", {"share.auto.offset.reset": "earliest"})

        first = await run(share_fetch.run, b, _fetch("m1", 0, topic_id))
        assert first.partitions[0].acquired == (Acquired(0, 4, 1),)
        # accept 0-1, release 2; 3 and 4 stay in flight. Answered once written.
        acked = await run(
            share_fetch.run,
            b,
            _fetch("m1", 1, topic_id, AckBatch(0, 1, (ACCEPT,)), AckBatch(2, 2, (RELEASE,))),
        )
        assert acked.partitions[0].acknowledge_error_code == 0
        assert acked.partitions[0].acquired == (Acquired(2, 2, 2),)  # m1 takes it back
        stored = ctx.share_coordinator.runtime.owned[0].shard.states
        [(key, state)] = stored.items()
        assert (key.topic_id, state.start_offset) == (topic_id, 2)

        await _new_leader_epoch(b, topic_id)
        again = await run(share_fetch.run, b, _fetch("m2", 0, topic_id))
        # 0 and 1 were accepted: never again; 2 was released (count 1 written), 3 and 4 were
        # in flight (written Available, count 1): all delivered again with their counts + 1
        assert again.partitions[0].acquired == (Acquired(2, 4, 2),)
        shard = ctx.share_coordinator.runtime.owned[0].shard
        assert shard.states[key].leader_epoch == 1  # the new leader's read fences the old

        # the group side's way in (share-group admin): the summary, then the state deleted
        summary = await ctx.share_persister.summary("s", "t", 0)
        assert (summary.error_code, summary.leader_epoch, summary.start_offset) == (0, 1, 2)
        assert await ctx.share_persister.delete("s", "t", 0) == 0
        assert (await ctx.share_persister.summary("s", "t", 0)).start_offset == -1
