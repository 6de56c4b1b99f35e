"""WriteTxnMarkers, broker to broker: a transaction coordinator (odradek's own, on the native
door, coordinator/transaction/markers.py; or Kafka's) ends a transaction on partitions this
broker leads; `kafka-transactions.sh abort` sends it too, to abort a hanging transaction. Each
marker is appended as a control batch with acks=all (broker/replica_manager.py
`append_marker`; the log refuses an older producer epoch or coordinator epoch), all the
partitions of a request in parallel. A marker on a `__consumer_offsets` partition also
completes the transaction's offset commits in the group coordinator (pending offsets become the
group's on COMMIT, are dropped on ABORT).

Refusal: neither Alter on the cluster (an admin) nor ClusterAction (a broker):
CLUSTER_AUTHORIZATION_FAILED on every partition, nothing written.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from protocol.errors import ClusterAuthorizationFailedError

API = "WriteTxnMarkers"
APPEND_TIMEOUT_MS = 30_000


@dataclass(frozen=True, slots=True)
class Marker:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    topics: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class WriteTxnMarkers:
    markers: tuple[Marker, ...]


@dataclass(frozen=True, slots=True)
class MarkerWritten:
    producer_id: int
    topics: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (partition, error code)


@dataclass(frozen=True, slots=True)
class WriteTxnMarkersResult:
    markers: tuple[MarkerWritten, ...]


async def run(ctx: BrokerContext, session: Session, req: WriteTxnMarkers) -> WriteTxnMarkersResult:
    if not _allowed(ctx, session):
        code = ClusterAuthorizationFailedError.code
        return WriteTxnMarkersResult(tuple(
            MarkerWritten(m.producer_id, tuple((t, tuple((p, code) for p in ps))
                                               for t, ps in m.topics))
            for m in req.markers
        ))  # fmt: skip
    return WriteTxnMarkersResult(tuple(await asyncio.gather(*(_write(ctx, m)
                                                              for m in req.markers))))  # fmt: skip


def _allowed(ctx: BrokerContext, session: Session) -> bool:
    return rules.allows(
        ctx, session, rules.ALTER, rules.CLUSTER, api=API, log_denied=False
    ) or rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=API)


async def _write(ctx: BrokerContext, m: Marker) -> MarkerWritten:
    async def one(topic: str, partition: int) -> tuple[int, int]:
        code = await ctx.replicas.append_marker(
            topic, partition, m.producer_id, m.producer_epoch, m.coordinator_epoch, m.commit,
            APPEND_TIMEOUT_MS,
        )  # fmt: skip
        if code == 0 and topic == OFFSETS_TOPIC:
            ctx.groups.offsets.complete_txn(partition, m.producer_id, m.commit)
        return partition, code

    async def topic(
        name: str, partitions: tuple[int, ...]
    ) -> tuple[str, tuple[tuple[int, int], ...]]:
        return name, tuple(await asyncio.gather(*(one(name, p) for p in partitions)))

    topics = await asyncio.gather(*(topic(t, ps) for t, ps in m.topics))
    return MarkerWritten(m.producer_id, tuple(topics))
