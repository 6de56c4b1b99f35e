"""A group coordinator's committed offsets (what GroupCoordinator, service.py, keeps as
`offsets`): OffsetCommit, TxnOffsetCommit and its markers, OffsetFetch and OffsetDelete.

Each call finds the offsets partition leading the group (`locate`: NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS otherwise), runs offsets.py's pure checks over its Group and
writes the records they return through the coordinator runtime (acks=all), answering once they
are replicated. A consumer group's (KIP-848) commits are checked against its members' epochs
(consumer_service.py), a classic group's against its generation. A transaction's offsets are
appended inside the producer's transaction and stay pending until its marker (`complete_txn`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from coordinator.group import consumer_service
from coordinator.group import offsets as offset_ops
from coordinator.group.consumer_service import ConsumerGroups
from coordinator.group.group import Group
from coordinator.group.records import CoordinatorRecord, OffsetKey
from coordinator.group.shard import GroupShard
from coordinator.runtime.runtime import CoordinatorRuntime, Owned
from protocol.api.group import (
    FetchedOffset,
    FetchedTopic,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    TopicResult,
)
from protocol.errors import (
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    UnstableOffsetCommitError,
)

if TYPE_CHECKING:
    from protocol.clock import Clock

NONE = 0
Groups = GroupShard


class OffsetHost(Protocol):
    """What GroupOffsets uses of the GroupCoordinator (service.py), which makes it."""

    @property
    def clock(self) -> Clock: ...

    @property
    def runtime(self) -> CoordinatorRuntime[Groups, CoordinatorRecord]: ...

    @property
    def owned(self) -> dict[int, Owned[Groups]]: ...

    @property
    def consumer(self) -> ConsumerGroups: ...

    def locate(self, group_id: str) -> tuple[Owned[Groups] | None, int]: ...


class GroupOffsets:
    def __init__(self, host: OffsetHost) -> None:
        self.host = host

    async def commit(self, req: OffsetCommitRequest) -> OffsetCommitResponse:
        if self.host.consumer.is_consumer_group(req.group_id):  # KIP-848: member epoch checks
            return await self.host.consumer.commit(req)
        owned, code = self.host.locate(req.group_id)
        offsets: list[offset_ops.Commit] = [
            (t.name, p.partition, p.offset, p.metadata, p.leader_epoch)
            for t in req.topics
            for p in t.partitions
        ]
        if owned is not None:
            group = owned.shard.setdefault(req.group_id, Group(req.group_id))
            result = offset_ops.commit(group, req.generation_id, req.member_id, offsets,
                                self.host.clock.monotonic_ms(), self.host.clock.time_ms(),
                                req.group_instance_id)  # fmt: skip
            code = int(result.response)
            if code == NONE and result.records:
                code = await self.host.runtime.write(owned, result.records)
        return OffsetCommitResponse([
            TopicResult(t.name, [PartitionResult(p.partition, code) for p in t.partitions])
            for t in req.topics
        ])  # fmt: skip

    async def txn_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation: int,
        member_id: str,
        offsets: list[offset_ops.Commit],
        instance_id: str | None = None,
    ) -> int:
        """TxnOffsetCommit (KIP-98, KIP-447): the offsets are appended inside the producer's
        transaction and stay pending until its marker; one error code for all of them. The
        transaction coordinator has added this partition to the transaction (AddOffsetsToTxn),
        which the log checks like any transactional write."""
        owned, code = self.host.locate(group_id)
        if owned is None:
            return code
        group = owned.shard.setdefault(group_id, Group(group_id))
        checked = consumer_service.check_txn_commit(group, member_id, generation)
        if checked is not None:  # a consumer group: member epochs, checked
            if checked != NONE:
                return checked
            member_id, generation, instance_id = "", -1, None
        now = self.host.clock.time_ms()
        result = offset_ops.txn_commit(group, generation, member_id, offsets, now, instance_id)
        code = int(result.response)
        if code != NONE or not result.records:
            return code
        code = await self.host.runtime.append(owned, result.records, (producer_id, producer_epoch))
        if code == NONE and self.host.owned.get(owned.index) is owned:
            now = self.host.clock.monotonic_ms()
            for record in result.records:
                offset_ops.replay_txn(owned.shard, producer_id, record, now)
        return code

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None:
        """A marker was written to offsets partition `partition` (WriteTxnMarkers)."""
        owned = self.host.owned.get(partition)
        if owned is not None:
            offset_ops.complete_txn(owned.shard, producer_id, commit)

    def fetch_offsets(
        self, req: OffsetFetchRequest, require_stable: bool = False
    ) -> OffsetFetchResponse:
        """`require_stable` (KIP-447, OffsetFetch v7+): a partition whose offset an open
        transaction is committing answers UNSTABLE_OFFSET_COMMIT (the consumer retries), so a
        new member never starts from an offset the transaction is about to move."""
        owned, code = self.host.locate(req.group_id)
        if owned is None:
            return OffsetFetchResponse(code, [])
        group = owned.shard.get(req.group_id)
        committed = group.offsets if group is not None else {}
        wanted: dict[str, list[int]] = {}
        if req.topics is None:
            for t, p in sorted(committed):
                wanted.setdefault(t, []).append(p)
        else:
            wanted = {t.topic: list(t.partitions) for t in req.topics}
        topics = []
        for topic, partitions in wanted.items():
            found = []
            for p in partitions:
                if (
                    require_stable
                    and group is not None
                    and offset_ops.has_pending_txn(group, topic, p)
                ):
                    found.append(FetchedOffset(p, -1, None, UnstableOffsetCommitError.code))
                    continue
                entry = committed.get((topic, p))
                if entry is None:
                    found.append(FetchedOffset(p, -1, None, NONE))
                else:
                    found.append(FetchedOffset(p, entry.offset, entry.metadata, NONE,
                                               entry.leader_epoch))  # fmt: skip
            topics.append(FetchedTopic(topic, found))
        return OffsetFetchResponse(NONE, topics)

    async def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]], subscribed: set[str]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete: tombstones for the partitions of topics the group is not subscribed to
        (`subscribed`: the members' topics, worked out by the caller from their metadata)."""
        owned, code = self.host.locate(group_id)
        group = owned.shard.get(group_id) if owned is not None else None
        if owned is None or group is None:
            return (code if owned is None else GroupIdNotFoundError.code), {}
        codes = {tp: NONE for tp in partitions}
        records = []
        for tp in partitions:
            if tp[0] in subscribed:
                codes[tp] = GroupSubscribedToTopicError.code
            elif tp in group.offsets:
                records.append(CoordinatorRecord(OffsetKey(group_id, tp[0], tp[1]), None))
        if records:
            code = await self.host.runtime.write(owned, records)
            if code != NONE:
                return code, {}
        return NONE, codes
