"""WriteShareGroupState (api key 85, KIP-932, v0-v1), broker to broker: a partition leader
writes what acknowledgements and deliveries changed in a share partition (state batches over
the stored ones, a new start offset or -1, v1's delivery complete count of KIP-1226). It is
answered once the record is replicated (acks=all). A leader or state epoch below the stored
one is FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH. How it runs and its refusals:
broker/operations/share_state.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.share_state import PartitionState, ShareStateResult, answer, each
from broker.session import Session
from coordinator.share.records import NO_COUNT, ShareKey, StateBatch

API = "WriteShareGroupState"


@dataclass(frozen=True, slots=True)
class PartitionWrite:
    partition: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = NO_COUNT


@dataclass(frozen=True, slots=True)
class WriteShareGroupState:
    group_id: str
    topics: tuple[tuple[uuid.UUID | None, tuple[PartitionWrite, ...]], ...]


async def run(ctx: BrokerContext, session: Session, req: WriteShareGroupState) -> ShareStateResult:
    async def one(key: ShareKey, p: PartitionWrite) -> PartitionState:
        got = await ctx.share_coordinator.write(
            key, p.state_epoch, p.leader_epoch, p.start_offset, p.state_batches,
            p.delivery_complete_count,
        )  # fmt: skip
        return answer(p.partition, got)

    return await each(ctx, session, API, req.group_id, req.topics, lambda p: p.partition, one)
