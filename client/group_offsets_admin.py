"""Committing a group's offsets from outside the group: Kafka's Admin.alterConsumerGroupOffsets.

`alter_consumer_group_offsets(group_id, {tp: offset})` finds the group's coordinator
(FindCoordinator, key type 0) and sends one OffsetCommit with generation -1 and no member id,
the commit of a client that is not a member. The coordinator takes it while the group has no
members (Empty, or unknown: the commit makes it), as Kafka's does; a group with members
answers UNKNOWN_MEMBER_ID, raised as NonEmptyGroupError saying so. A coordinator moving or
loading is retried after a metadata refresh until `request_timeout_ms` (RetryingClient); any
other partition error is raised naming the partition.

Users: Spark's streaming source commits each finished micro-batch's end offsets this way
(spark_connector/streaming.py), so the group's lag (`odradek_coordinator_group_lag`,
`odradek groups describe`, the console) shows how far the query is behind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from client._lifecycle import RetryingClient
from client.types import TopicPartition
from protocol.api.group import (
    CommitPartition,
    CommitTopic,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
)
from protocol.errors import NonEmptyGroupError, UnknownMemberIdError, for_code

NONE = 0


def commit_request(group_id: str, offsets: Mapping[TopicPartition, int]) -> OffsetCommitRequest:
    """One OffsetCommit from outside the group, topics and partitions in order."""
    by_topic: dict[str, list[CommitPartition]] = {}
    for tp in sorted(offsets, key=lambda t: (t.topic, t.partition)):
        by_topic.setdefault(tp.topic, []).append(CommitPartition(tp.partition, offsets[tp]))
    return OffsetCommitRequest(group_id, -1, "", [CommitTopic(t, ps) for t, ps in by_topic.items()])


def raise_commit_errors(group_id: str, resp: OffsetCommitResponse) -> None:
    """The first partition's error, raised naming it; UNKNOWN_MEMBER_ID says the group has
    members (a commit from outside is refused then)."""
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code == UnknownMemberIdError.code:
                raise NonEmptyGroupError(
                    f"group {group_id!r} has members: its offsets can't be set from outside"
                )
            if p.error_code != NONE:
                raise for_code(p.error_code)(f"group {group_id!r}, {t.name}-{p.partition}")


class GroupOffsetsAdmin(RetryingClient):
    """alter_consumer_group_offsets on AsyncAdmin, its base."""

    async def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> None:
        if not offsets:
            return
        request = commit_request(group_id, offsets)

        async def once() -> None:
            found: FindCoordinatorResponse = await self._cluster.send_to_any(
                FindCoordinatorRequest(group_id), self.request_timeout_ms, read=True
            )
            if found.error_code != NONE:
                raise for_code(found.error_code)(f"coordinator of group {group_id!r}")
            if found.node_id not in self._cluster.metadata.brokers:
                await self._cluster.request_update()
            raise_commit_errors(group_id, await self._send_to(found.node_id, request))

        await self._retrying("OffsetCommit", once)


class SyncGroupOffsetsAdmin:
    """The same call on the sync Admin (client/sync.py), run on its loop."""

    _run: Callable[..., Any]

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> None:
        wanted = dict(offsets)
        self._run(lambda a: a.alter_consumer_group_offsets(group_id, wanted))
