"""ReadShareGroupStateSummary (api key 87, KIP-932, v0-v1), broker to broker: each share
partition's state epoch, leader epoch, start offset and (v1, KIP-1226) delivery complete
count, without its batches and without fencing any leader: what DescribeShareGroupOffsets
shows. A share partition without state reads start offset -1. How it runs and its refusals:
broker/operations/share_state.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.read_share_group_state import PartitionRead
from broker.operations.share_state import PartitionState, ShareStateResult, answer, each
from broker.session import Session
from coordinator.share.records import ShareKey

API = "ReadShareGroupStateSummary"


@dataclass(frozen=True, slots=True)
class ReadShareGroupStateSummary:
    group_id: str
    topics: tuple[tuple[uuid.UUID | None, tuple[PartitionRead, ...]], ...]


async def run(
    ctx: BrokerContext, session: Session, req: ReadShareGroupStateSummary
) -> ShareStateResult:
    async def one(key: ShareKey, p: PartitionRead) -> PartitionState:
        return answer(p.partition, await ctx.share_coordinator.summary(key))

    return await each(ctx, session, API, req.group_id, req.topics, lambda p: p.partition, one)
