"""ReadShareGroupState (api key 84, KIP-932, v0), broker to broker: a partition leader loads
each share partition's state (state epoch, start offset, state batches) before it serves it.
A leader epoch above the stored one is recorded, fencing the previous leader's writes; one
below it is FENCED_LEADER_EPOCH. A share partition without state reads start offset -1. How it
runs and its refusals: broker/operations/share_state.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.share_state import PartitionState, ShareStateResult, answer, each
from broker.session import Session
from coordinator.share.records import ShareKey

API = "ReadShareGroupState"


@dataclass(frozen=True, slots=True)
class PartitionRead:
    partition: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class ReadShareGroupState:
    group_id: str
    topics: tuple[tuple[uuid.UUID | None, tuple[PartitionRead, ...]], ...]


async def run(ctx: BrokerContext, session: Session, req: ReadShareGroupState) -> ShareStateResult:
    async def one(key: ShareKey, p: PartitionRead) -> PartitionState:
        return answer(p.partition, await ctx.share_coordinator.read(key, p.leader_epoch))

    return await each(ctx, session, API, req.group_id, req.topics, lambda p: p.partition, one)
