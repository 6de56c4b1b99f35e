"""Where to read from: one job, asking partition leaders for offsets with ListOffsets.

`list_offsets(node, {tp: timestamp})` sends one ListOffsetsRequest to one leader (timestamp
-2 earliest, -1 latest) carrying the consumer's isolation level, so with read_committed LATEST
is the last stable offset (KIP-98); a partition answered with an error that means stale
metadata asks for a metadata refresh and is left out of the result. `reset_positions()` finds
offsets for the subscription's partitions without a position, with one request per leader
node, by their reset strategy. `log_bounds(tp)` gives (log start offset, high watermark) of one
partition (the Spark range reader's check on OFFSET_OUT_OF_RANGE).

The consumer (client/consumer.py) and the range reader (spark_connector/fetch.py) each hold one
beside their Fetcher (client/fetcher.py), sharing its cluster, subscription and metadata
refresh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from client.cluster import Cluster
from client.subscription import EARLIEST, SubscriptionState
from client.types import TopicPartition, partition_words
from protocol.api.fetch import CONSUMER_REPLICA_ID
from protocol.api.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.errors import LeaderNotAvailableError, for_code


class OffsetLookup:
    def __init__(
        self,
        cluster: Cluster,
        subscription: SubscriptionState,
        isolation_level: int,
        request_timeout_ms: int,
        refresh_metadata: Callable[[], None],
    ) -> None:
        """`refresh_metadata`: asks for a metadata update in the background (the Fetcher's,
        which wakes its waiters when the update lands)."""
        self._cluster = cluster
        self._subs = subscription
        self._isolation_level = isolation_level
        self._request_timeout_ms = request_timeout_ms
        self.refresh_metadata = refresh_metadata

    async def reset_positions(self) -> None:
        """Look up offsets for partitions with no position (one ListOffsets per leader)."""
        todo = self._subs.needs_position()
        if not todo:
            return
        meta = self._cluster.metadata
        by_node: dict[int, dict[TopicPartition, int]] = {}
        for tp in todo:
            leader = meta.leader_for(tp.topic, tp.partition)
            if leader < 0 or leader not in meta.brokers:
                self.refresh_metadata()
                continue
            strategy = self._subs.reset_strategy(tp)
            ts = EARLIEST_TIMESTAMP if strategy == EARLIEST else LATEST_TIMESTAMP
            by_node.setdefault(leader, {})[tp] = ts
        results = await asyncio.gather(
            *[self.list_offsets(node, q) for node, q in by_node.items()], return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                self.refresh_metadata()
                continue
            for tp, offset in result.items():
                if self._subs.is_assigned(tp) and self._subs.position(tp) is None:
                    self._subs.seek(tp, offset)

    async def list_offsets(
        self, node: int, query: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """{tp: timestamp (-1 latest, -2 earliest)} -> {tp: offset} from one leader node."""
        by_topic: dict[str, list[ListOffsetsPartition]] = {}
        for tp, ts in query.items():
            by_topic.setdefault(tp.topic, []).append(ListOffsetsPartition(tp.partition, ts))
        request = ListOffsetsRequest(
            CONSUMER_REPLICA_ID,
            [ListOffsetsTopic(t, ps) for t, ps in by_topic.items()],
            self._isolation_level,  # read_committed: LATEST is the last stable offset
        )
        conn = await self._cluster.connection(node)
        resp: ListOffsetsResponse = await conn.send(request, self._request_timeout_ms)
        out: dict[TopicPartition, int] = {}
        for topic in resp.topics:
            for p in topic.partitions:
                if p.error_code != 0:
                    error = for_code(p.error_code)
                    if error.invalid_metadata:
                        self.refresh_metadata()
                    continue
                out[TopicPartition(topic.name, p.partition)] = p.offset
        return out

    async def log_bounds(self, tp: TopicPartition) -> tuple[int, int]:
        """(log start offset, high watermark) of `tp` from its leader; raises OdradekError."""
        meta = self._cluster.metadata
        leader = meta.leader_for(tp.topic, tp.partition)
        if leader < 0 or leader not in meta.brokers:
            meta = await self._cluster.request_update()
            leader = meta.leader_for(tp.topic, tp.partition)
        if leader < 0 or leader not in meta.brokers:
            raise LeaderNotAvailableError(f"{partition_words(tp)} has no leader")
        start = await self.list_offsets(leader, {tp: EARLIEST_TIMESTAMP})
        end = await self.list_offsets(leader, {tp: LATEST_TIMESTAMP})
        if tp not in start or tp not in end:
            raise LeaderNotAvailableError(
                f"{partition_words(tp)}: its leader did not list its offsets"
            )
        return start[tp], end[tp]
