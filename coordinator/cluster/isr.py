"""A partition leader's ISR changes in ZooKeeper, and the notification the controller watches.

`ZkIsrWriter.write_isr` (the broker's `IsrWriter`, broker/isr_changes.py) sets
`/brokers/topics/<t>/partitions/<p>/state` to the same leader and leader epoch with the new ISR,
conditionally on the znode version the leader last knew (from LeaderAndIsr, or its own last
write). On a version mismatch nothing is written; the znode is re-read and returned, so the
leader can tell whether its leadership is gone (another leader or a newer epoch: it resigns) or
only the version moved. A written change is then announced, as Kafka does, with a znode

    /isr_change_notification/isr_change_<seq>
        {"version":1,"partitions":[{"topic":"t","partition":0},...]}

which the controller watches (children of ISR_CHANGE_NOTIFICATION), reads, propagates to every
broker with UpdateMetadata, and deletes. Changes within `notify_delay_ms` are coalesced into one
notification (Kafka batches them too). `<seq>` is a ten-digit sequence number: ZkClient has no
sequential create, so the writer takes one more than the largest child present and retries on
NodeExists (numbers may be reused after the controller deleted processed ones; each node is
still read once).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import ZkBadVersion, ZkClient, ZkError, ZkNodeExists, ZkNoNode

log = logging.getLogger("odradek.coordinator.isr")


@dataclass(frozen=True, slots=True)
class IsrWriteResult:
    """The answer to a leader's conditional ISR write: the znode as it now is."""

    written: bool
    zk_version: int
    leader: int
    leader_epoch: int
    isr: list[int]


ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
SEQ_DIGITS = 10
CREATE_RETRIES = 10
MAX_PENDING_PARTITIONS = 10_000


def isr_change_path(seq: int) -> str:
    return f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}{seq:0{SEQ_DIGITS}d}"


def encode_isr_change(partitions: list[tuple[str, int]]) -> bytes:
    body = {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    return json.dumps(body, separators=(",", ":")).encode()


def decode_isr_change(data: bytes) -> list[tuple[str, int]]:
    """The partitions a notification names (for the controller); ZkDataError if malformed."""
    try:
        obj = json.loads(data)
        return [(str(e["topic"]), int(e["partition"])) for e in obj["partitions"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise paths.ZkDataError(f"bad ISR change notification: {exc}") from None


def next_sequence(children: list[str]) -> int:
    seqs = [
        int(c[len(ISR_CHANGE_PREFIX) :])
        for c in children
        if c.startswith(ISR_CHANGE_PREFIX) and c[len(ISR_CHANGE_PREFIX) :].isdigit()
    ]
    return max(seqs, default=-1) + 1


class ZkIsrWriter:
    def __init__(self, zk: ZkClient, broker_id: int, notify_delay_ms: int = 50) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.notify_delay_ms = notify_delay_ms
        self._pending: set[tuple[str, int]] = set()
        self._flush_task: asyncio.Task[None] | None = None

    async def write_isr(
        self,
        topic: str,
        partition: int,
        leader_epoch: int,
        controller_epoch: int,
        isr: list[int],
        zk_version: int,
    ) -> IsrWriteResult:
        path = paths.partition_state_path(topic, partition)
        state = paths.LeaderIsrState(self.broker_id, leader_epoch, controller_epoch, list(isr))
        try:
            version = await self.zk.set(path, state.encode(), zk_version)
        except ZkBadVersion:
            data, version = await self.zk.get(path)
            now = paths.LeaderIsrState.decode(data)
            return IsrWriteResult(False, version, now.leader, now.leader_epoch, list(now.isr))
        except ZkNoNode:  # the topic is being deleted
            return IsrWriteResult(False, -1, -1, -1, [])
        self._announce(topic, partition)
        return IsrWriteResult(True, version, self.broker_id, leader_epoch, list(isr))

    def _announce(self, topic: str, partition: int) -> None:
        if len(self._pending) < MAX_PENDING_PARTITIONS:
            self._pending.add((topic, partition))
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.create_task(self._flush_later())

    async def _flush_later(self) -> None:
        """Notify what is pending after the delay, and again for what `_announce` added while
        a notification was being written (it starts no task while this one runs: without the
        loop such a change would never be announced, and every broker's metadata would keep
        the old ISR until some later change of the same broker came along)."""
        while True:
            await asyncio.sleep(self.notify_delay_ms / 1000)
            pending, self._pending = sorted(self._pending), set()
            if not pending:
                return
            try:
                await self.notify(pending)
            except ZkError as exc:
                log.warning(
                    "ISR change notification for %d partitions failed: %s", len(pending), exc
                )

    async def notify(self, partitions: list[tuple[str, int]]) -> str:
        """Create one isr_change_<seq> node naming `partitions`; returns its path."""
        await self.zk.ensure_path(ISR_CHANGE_NOTIFICATION)
        data = encode_isr_change(partitions)
        for _ in range(CREATE_RETRIES):
            seq = next_sequence(await self.zk.get_children(ISR_CHANGE_NOTIFICATION))
            try:
                return await self.zk.create(isr_change_path(seq), data)
            except ZkNodeExists:
                continue
        raise ZkError(f"no free ISR change sequence after {CREATE_RETRIES} tries")

    async def close(self) -> None:
        """Send what is pending now (shutdown)."""
        if self._flush_task is not None and not self._flush_task.done():
            self._flush_task.cancel()
        pending, self._pending = sorted(self._pending), set()
        if pending:
            try:
                await self.notify(pending)
            except ZkError as exc:
                log.warning("ISR change notification at shutdown failed: %s", exc)
