"""Writing a decided transaction's markers: WriteTxnMarkers to every partition's leader.

After PrepareCommit / PrepareAbort is in `__transaction_state`, the coordinator must put a
COMMIT or ABORT marker into each partition of the transaction before it may write
CompleteCommit / CompleteAbort (Kafka's TransactionMarkerChannelManager). `MarkerWriter.write`
groups the partitions by their current leader (the broker's metadata), sends one
WriteTxnMarkers per leader over the native protocol (protocol/api/txn_markers.py), and retries
what did not take until every partition answered:

    answer                                     what happens
    NONE                                       done
    UNKNOWN_TOPIC_OR_PARTITION, topic gone     done: a deleted partition has nothing to end
    retriable (NOT_LEADER_OR_FOLLOWER, a       look the leader up again, retry after
    network error, a timeout, ...)             `retry_backoff_ms`
    TRANSACTION_COORDINATOR_FENCED             stop: a newer coordinator owns the id now
    anything else (a bug or a broken log)      logged, retried: a transaction never ends
                                               with some partitions unmarked

`write` returns True once every partition holds its marker, False when fenced (or the
coordinator resigned: `still_owner` turned False), so the caller writes Complete* only then.
The leader answers only once its marker is replicated (acks=all), so Complete* never precedes
a marker a new leader could lose.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from coordinator.runtime.log import ClusterView
from coordinator.runtime.peers import Peers
from coordinator.transaction.records import TP
from coordinator.transaction.txn import Marker
from protocol.api.txn_markers import (
    TxnMarker,
    TxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from protocol.errors import (
    OdradekError,
    TransactionCoordinatorFencedError,
    UnknownTopicOrPartitionError,
    for_code,
)

log = logging.getLogger("odradek.coordinator.transaction.markers")


@dataclass(slots=True)
class MarkerWriter:
    cluster: ClusterView
    peers: Peers
    retry_backoff_ms: int = 100

    async def write(
        self,
        markers: Iterable[Marker],
        coordinator_epoch: int,
        still_owner: Callable[[], bool] = lambda: True,
        between: Callable[[str, str], Awaitable[None]] | None = None,
    ) -> bool:
        """`between(step, tag)` is awaited after the first leader's markers are written
        (a fault test's hold, hold.py)."""
        pending = {(m.topic, m.partition): m for m in markers}
        first = True
        while pending:
            if not still_owner():
                return False
            by_leader, gone = self._route(pending)
            for tp in gone:
                del pending[tp]
            if first and between is not None and len(by_leader) > 1:
                first = False
                leader, ms = min(by_leader.items())
                done = await self._send(leader, ms, coordinator_epoch)
                if done is None:
                    return False
                for tp in done:
                    pending.pop(tp, None)
                await between("markers", str(ms[0].producer_id))
                continue
            first = False
            sent = [self._send(b, ms, coordinator_epoch) for b, ms in by_leader.items()]
            for done in await asyncio.gather(*sent):
                if done is None:
                    return False  # fenced
                for tp in done:
                    pending.pop(tp, None)
            if pending:
                await asyncio.sleep(self.retry_backoff_ms / 1000)
        return True

    def _route(self, pending: dict[TP, Marker]) -> tuple[dict[int, list[Marker]], list[TP]]:
        """Markers by leader id; the partitions whose topic no longer exists."""
        by_leader: dict[int, list[Marker]] = {}
        gone = []
        for tp, marker in pending.items():
            parts = self.cluster.topics.get(tp[0])
            if parts is None or tp[1] not in parts:
                gone.append(tp)
                continue
            leader = parts[tp[1]].leader
            if leader >= 0:
                by_leader.setdefault(leader, []).append(marker)
        return by_leader, gone

    async def _send(
        self, broker_id: int, markers: list[Marker], coordinator_epoch: int
    ) -> list[TP] | None:
        """The partitions that now hold their marker; None when this coordinator is fenced."""
        request = WriteTxnMarkersRequest(_group(markers, coordinator_epoch))
        try:
            response: WriteTxnMarkersResponse = await self.peers.send(broker_id, request)
        except OdradekError as exc:
            log.info("WriteTxnMarkers to broker %d failed (%s); will retry", broker_id, exc)
            return []
        done = []
        for result in response.markers:
            for topic in result.topics:
                for p in topic.partitions:
                    code = p.error_code
                    if code == TransactionCoordinatorFencedError.code:
                        return None
                    if code == 0 or (code == UnknownTopicOrPartitionError.code
                                     and topic.name not in self.cluster.topics):  # fmt: skip
                        done.append((topic.name, p.partition))
                    elif not for_code(code).retriable:
                        log.warning("marker for %s-%d of producer %d refused: %s", topic.name,
                                    p.partition, result.producer_id,
                                    for_code(code).__name__)  # fmt: skip
        return done

    async def close(self) -> None:
        await self.peers.close()


def _group(markers: list[Marker], coordinator_epoch: int) -> list[TxnMarker]:
    """One TxnMarker per (producer id, epoch, outcome), its partitions by topic."""
    grouped: dict[tuple[int, int, bool], dict[str, list[int]]] = {}
    for m in markers:
        key = (m.producer_id, m.producer_epoch, m.commit)
        grouped.setdefault(key, {}).setdefault(m.topic, []).append(m.partition)
    return [
        TxnMarker(pid, epoch, commit, coordinator_epoch,
                  [TxnMarkerTopic(t, sorted(ps)) for t, ps in sorted(topics.items())])
        for (pid, epoch, commit), topics in grouped.items()
    ]  # fmt: skip
