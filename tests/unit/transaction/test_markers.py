"""MarkerWriter against a scripted cluster: markers grouped by leader, NOT_LEADER retried at
the new leader, a deleted topic's partitions counted done, and a fenced coordinator stopping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator.transaction.markers import MarkerWriter
from coordinator.transaction.txn import Marker
from protocol.api.txn_markers import (
    TxnMarkerPartitionResult,
    TxnMarkerResult,
    TxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from protocol.errors import NotLeaderForPartitionError, TransactionCoordinatorFencedError


@dataclass
class Leader:
    leader: int


@dataclass
class Cluster:
    topics: dict[str, dict[int, Leader]]
    brokers: dict[int, Any] = field(default_factory=dict)


@dataclass
class ScriptedPeers:
    """Answers each partition with the next code scripted for it (then NONE)."""

    cluster: Cluster
    script: dict[tuple[str, int], list[int]]
    sent: list[tuple[int, WriteTxnMarkersRequest]] = field(default_factory=list)

    async def send(self, broker_id: int, request: WriteTxnMarkersRequest) -> Any:
        self.sent.append((broker_id, request))
        out = []
        for m in request.markers:
            topics = []
            for t in m.topics:
                results = []
                for p in t.partitions:
                    codes = self.script.get((t.name, p), [])
                    code = codes.pop(0) if codes else 0
                    if code == NotLeaderForPartitionError.code:  # the controller moves it
                        self.cluster.topics[t.name][p] = Leader(3)
                    results.append(TxnMarkerPartitionResult(p, code))
                topics.append(TxnMarkerTopicResult(t.name, results))
            out.append(TxnMarkerResult(m.producer_id, topics))
        return WriteTxnMarkersResponse(out)

    async def close(self) -> None:
        pass


def markers(*tps: tuple[str, int]) -> list[Marker]:
    return [Marker(t, p, 7, 2, True) for t, p in tps]


async def test_grouped_by_leader_and_retried_at_the_new_one() -> None:
    cluster = Cluster({"a": {0: Leader(1), 1: Leader(2)}, "b": {0: Leader(1)}})
    peers = ScriptedPeers(cluster, {("a", 1): [NotLeaderForPartitionError.code]})
    writer = MarkerWriter(cluster, peers, retry_backoff_ms=0)  # type: ignore[arg-type]

    held: list[str] = []

    async def between(step: str, tag: str) -> None:
        held.append(step)  # the test hook runs once the first leader has its markers

    assert await writer.write(markers(("a", 0), ("a", 1), ("b", 0)), 5, between=between)
    assert held == ["markers"]
    first = peers.sent[0]
    assert first[0] == 1 and {t.name for t in first[1].markers[0].topics} == {"a", "b"}
    assert first[1].markers[0].coordinator_epoch == 5
    assert [b for b, _ in peers.sent] == [1, 2, 3], "the refused marker went to the new leader"


async def test_a_deleted_topic_is_done_and_a_fenced_coordinator_stops() -> None:
    cluster = Cluster({"a": {0: Leader(1)}})
    peers = ScriptedPeers(cluster, {})
    writer = MarkerWriter(cluster, peers, retry_backoff_ms=0)  # type: ignore[arg-type]
    assert await writer.write(markers(("gone", 0), ("a", 0)), 1)
    assert [b for b, _ in peers.sent] == [1]
    fenced = ScriptedPeers(cluster, {("a", 0): [TransactionCoordinatorFencedError.code]})
    writer = MarkerWriter(cluster, fenced, retry_backoff_ms=0)  # type: ignore[arg-type]
    assert not await writer.write(markers(("a", 0)), 1)
    assert not await MarkerWriter(cluster, peers).write(  # type: ignore[arg-type]
        markers(("a", 0)), 1, still_owner=lambda: False
    )
