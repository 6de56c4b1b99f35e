"""DeleteShareGroupState (api key 86, KIP-932, v0), broker to broker: forget share
partitions' state (tombstones of their ShareSnapshot and ShareUpdate keys), as a share group's
deletion or DeleteShareGroupOffsets does. Nothing stored is no error. How it runs and its
refusals: broker/operations/share_state.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.share_state import PartitionState, ShareStateResult, answer, each
from broker.session import Session
from coordinator.share.records import ShareKey

API = "DeleteShareGroupState"


@dataclass(frozen=True, slots=True)
class DeleteShareGroupState:
    group_id: str
    topics: tuple[tuple[uuid.UUID | None, tuple[int, ...]], ...]


async def run(ctx: BrokerContext, session: Session, req: DeleteShareGroupState) -> ShareStateResult:
    async def one(key: ShareKey, partition: int) -> PartitionState:
        return answer(partition, await ctx.share_coordinator.delete(key))

    return await each(ctx, session, API, req.group_id, req.topics, lambda p: p, one)
