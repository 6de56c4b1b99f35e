"""InitializeShareGroupState (api key 83, KIP-932, v0), broker to broker: a fresh state for
each share partition at a state epoch and start offset (-1: the leader resolves it by
`share.auto.offset.reset` when it first reads), written as a ShareSnapshot. A state epoch
below the stored one is FENCED_STATE_EPOCH. How it runs and its refusals:
broker/operations/share_state.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.share_state import PartitionState, ShareStateResult, answer, each
from broker.session import Session
from coordinator.share.records import ShareKey

API = "InitializeShareGroupState"


@dataclass(frozen=True, slots=True)
class PartitionInit:
    partition: int
    state_epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class InitializeShareGroupState:
    group_id: str
    topics: tuple[tuple[uuid.UUID | None, tuple[PartitionInit, ...]], ...]


async def run(
    ctx: BrokerContext, session: Session, req: InitializeShareGroupState
) -> ShareStateResult:
    async def one(key: ShareKey, p: PartitionInit) -> PartitionState:
        got = await ctx.share_coordinator.initialize(key, p.state_epoch, p.start_offset)
        return answer(p.partition, got)

    return await each(ctx, session, API, req.group_id, req.topics, lambda p: p.partition, one)
