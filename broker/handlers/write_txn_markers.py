"""WriteTxnMarkers (27), broker to broker: a transaction coordinator ends a transaction on the
partitions this broker leads (protocol/api/txn_markers.py). Each marker is appended as a
control batch with acks=all (broker/replica_manager.py `append_marker`; the log refuses an older
producer epoch or coordinator epoch), the partitions of one request in parallel. A marker on a
`__consumer_offsets` partition also completes the transaction's offset commits in the group
coordinator (pending offsets become the group's on COMMIT, are dropped on ABORT)."""

from __future__ import annotations

import asyncio

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from protocol.api.txn_markers import (
    TxnMarker,
    TxnMarkerPartitionResult,
    TxnMarkerResult,
    TxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from protocol.codec import Request
from protocol.errors import ClusterAuthorizationFailedError

APPEND_TIMEOUT_MS = 30_000


async def handle(ctx: BrokerContext, request: Request, session: Session) -> WriteTxnMarkersResponse:
    req: WriteTxnMarkersRequest = request.body
    if not may_write_markers(ctx, session):
        return WriteTxnMarkersResponse([refused_marker(m) for m in req.markers])
    return WriteTxnMarkersResponse(list(await asyncio.gather(*map(
        lambda m: write_marker(ctx, m), req.markers))))  # fmt: skip


def may_write_markers(ctx: BrokerContext, session: Session) -> bool:
    """ACLs (both doors): Alter on the cluster (an admin aborting a hanging transaction), or
    else ClusterAction (a transaction coordinator), as Kafka."""
    return rules.allows(
        ctx, session, rules.ALTER, rules.CLUSTER, api="WriteTxnMarkers", log_denied=False
    ) or rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api="WriteTxnMarkers")


def refused_marker(m: TxnMarker) -> TxnMarkerResult:
    code = ClusterAuthorizationFailedError.code
    return TxnMarkerResult(m.producer_id, [
        TxnMarkerTopicResult(t.name, [TxnMarkerPartitionResult(p, code) for p in t.partitions])
        for t in m.topics
    ])  # fmt: skip


async def write_marker(ctx: BrokerContext, m: TxnMarker) -> TxnMarkerResult:
    """One marker on each of its partitions (both doors' WriteTxnMarkers)."""

    async def one(topic: str, partition: int) -> TxnMarkerPartitionResult:
        code = await ctx.replicas.append_marker(
            topic, partition, m.producer_id, m.producer_epoch, m.coordinator_epoch, m.commit,
            APPEND_TIMEOUT_MS,
        )  # fmt: skip
        if code == 0 and topic == OFFSETS_TOPIC and ctx.groups is not None:
            ctx.groups.complete_txn(partition, m.producer_id, m.commit)
        return TxnMarkerPartitionResult(partition, code)

    topics = []
    for t in m.topics:
        results = await asyncio.gather(*(one(t.name, p) for p in t.partitions))
        topics.append(TxnMarkerTopicResult(t.name, list(results)))
    return TxnMarkerResult(m.producer_id, topics)
