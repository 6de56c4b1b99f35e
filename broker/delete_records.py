"""DeleteRecords on the leader: Kafka's deleteRecordsOnLocalLog and DelayedDeleteRecords.

`delete_on_leader` raises one partition's log start offset on its leader: -1 means the high
watermark; an offset below 0 or above the high watermark is OFFSET_OUT_OF_RANGE; one at or below
the log start changes nothing and succeeds. The bound is the high watermark, not the last stable
offset, as in Kafka (UnifiedLog.maybeIncrementLogStartOffset): right after a commit the
transaction's records are below the high watermark while its marker is still being written, and
deleting up to the end then succeeds. Records of a transaction still open may go; its first
unstable offset then moves up to the new log start. Retention, which no client asks for, keeps
its last-stable-offset bound (Log.delete_retained_segments). The log deletes the closed segments
wholly below the new start at once (Log.advance_log_start_offset, with retention's deferred
delete) and writes its log-start checkpoint, so the records stay gone across a restart. Followers
raise their own log start to the leader's when a fetch answer gives it
(broker/replica_fetcher.py) and report it in their next fetch
(Partition.record_follower_log_start).

`await_low_watermarks` then waits, within the request's timeout, until each partition's low
watermark (Partition.low_watermark: the smallest log start over the leader and its live
followers) reaches the offset asked for. A partition still short of it when the time is up is
answered REQUEST_TIMED_OUT with the low watermark it has; one this broker no longer leads,
NOT_LEADER_FOR_PARTITION. The wait runs on the event loop's clock, as the delayed fetch does:
this is the edge that owns real time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping

from broker.replica_manager import ReplicaManager
from protocol.api.delete_records import DELETE_TO_HIGH_WATERMARK
from protocol.errors import NotLeaderForPartitionError, OffsetOutOfRangeError, RequestTimedOutError

NONE = 0
UNKNOWN_LOW_WATERMARK = -1
Key = tuple[str, int]
Outcome = tuple[int, int]  # (error code, low watermark)
log = logging.getLogger("odradek.broker.delete_records")


def delete_target(requested: int, high_watermark: int) -> int:
    """The new log start offset for a request's `offset` (raises OffsetOutOfRangeError):
    -1 is the high watermark; below 0 or above the high watermark is out of range."""
    target = high_watermark if requested == DELETE_TO_HIGH_WATERMARK else requested
    if target < 0:
        raise OffsetOutOfRangeError(f"the offset {requested} is not valid")
    if target > high_watermark:
        raise OffsetOutOfRangeError(
            f"cannot move the log start offset to {target}: it is above the high watermark "
            f"{high_watermark}"
        )
    return target


def delete_on_leader(replicas: ReplicaManager, topic: str, partition: int, offset: int) -> int:
    """Raise the partition's log start offset on this leader; the offset it must reach."""
    p = replicas.leader(topic, partition)
    target = delete_target(offset, p.high_watermark)
    if p.log.advance_log_start_offset(target):
        log.info("%s-%d: records before offset %d deleted", topic, partition, target)
    return target


def low_watermark_outcome(
    replicas: ReplicaManager, key: Key, required: int, alive: Collection[int]
) -> Outcome | None:
    """The answer for `key` now, or None while its low watermark is below `required`."""
    p = replicas.partitions.get(key)
    if p is None or not p.is_leader:
        return NotLeaderForPartitionError.code, UNKNOWN_LOW_WATERMARK
    low = p.low_watermark(alive)
    return (NONE, low) if low >= required else None


async def await_low_watermarks(
    replicas: ReplicaManager,
    required: Mapping[Key, int],
    alive: Callable[[], Collection[int]],
    timeout_ms: int,
) -> dict[Key, Outcome]:
    """Wait until each partition's low watermark reaches its offset, or `timeout_ms` passes."""
    done: dict[Key, Outcome] = {}

    def settle() -> list[Key]:
        live = alive()
        for key, offset in required.items():
            if key not in done:
                outcome = low_watermark_outcome(replicas, key, offset, live)
                if outcome is not None:
                    done[key] = outcome
        return [key for key in required if key not in done]

    pending = settle()
    try:
        async with asyncio.timeout(max(0, timeout_ms) / 1000):
            while pending:
                await _wait_for_change(replicas, pending)
                pending = settle()
    except TimeoutError:
        pending = settle()
    live = alive()
    for key in pending:
        p = replicas.partitions.get(key)
        low = UNKNOWN_LOW_WATERMARK if p is None else p.low_watermark(live)
        done[key] = RequestTimedOutError.code, low
    return done


async def _wait_for_change(replicas: ReplicaManager, keys: list[Key]) -> None:
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    for key in keys:
        p = replicas.partitions.get(key)
        if p is None:
            return  # settled as NOT_LEADER_FOR_PARTITION by the caller's next look
        p.add_log_start_waiter(waiter)
    try:
        await waiter
    finally:
        if not waiter.done():
            waiter.cancel()  # partitions drop cancelled waiters on their next notify
