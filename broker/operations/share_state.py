"""What the five share-state operations share (KIP-932; Initialize, Read, Write,
DeleteShareGroupState and ReadShareGroupStateSummary, broker/operations/*_share_group_state*.py):
the answer's shape and how a request runs.

Each request names one share group and, by topic id, its partitions; each partition is one
share partition ("groupId:topicId:partition"), answered by the share coordinator
(coordinator/share/service.py) on its own: the partitions of one request may have different
coordinators, and one this broker does not coordinate gets NOT_COORDINATOR alone. The
partitions run concurrently; the answer keeps the request's order.

Refusals, as Kafka's: these are broker-to-broker APIs, so without ClusterAction on the cluster
every partition is CLUSTER_AUTHORIZATION_FAILED; an empty group id or a missing topic id is
INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.share.records import NO_COUNT, ShareKey, StateBatch
from coordinator.share.service import Answered
from protocol.errors import ClusterAuthorizationFailedError, InvalidRequestError

P = TypeVar("P")  # one partition's part of a request


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's answer; the state fields are the read APIs' (-1 / empty otherwise)."""

    partition: int
    error_code: int = 0
    error_message: str | None = None
    state_epoch: int = -1
    leader_epoch: int = -1
    start_offset: int = -1
    delivery_complete_count: int = NO_COUNT
    state_batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicState:
    topic_id: uuid.UUID | None
    partitions: tuple[PartitionState, ...]


@dataclass(frozen=True, slots=True)
class ShareStateResult:
    topics: tuple[TopicState, ...]


def answer(partition: int, got: Answered) -> PartitionState:
    s = got.state
    if s is None:
        return PartitionState(partition, got.error_code, got.error_message)
    return PartitionState(partition, got.error_code, got.error_message, s.state_epoch,
                          s.leader_epoch, s.start_offset, s.delivery_complete_count,
                          s.batches)  # fmt: skip


async def each(
    ctx: BrokerContext, session: Session, api: str, group_id: str,
    topics: Sequence[tuple[uuid.UUID | None, Sequence[P]]],
    index: Callable[[P], int], run: Callable[[ShareKey, P], Awaitable[PartitionState]],
) -> ShareStateResult:  # fmt: skip
    """Authorize once, then run each partition (`index` names its partition number)."""
    if not rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=api):
        code, why = ClusterAuthorizationFailedError.code, "ClusterAction on the cluster is needed"
        return _all(topics, index, code, why)
    if not group_id:
        return _all(topics, index, InvalidRequestError.code, "the group id is empty")

    async def topic(topic_id: uuid.UUID | None, parts: Sequence[P]) -> TopicState:
        if topic_id is None or topic_id.int == 0:
            why = "a topic id is needed"
            return TopicState(
                topic_id,
                tuple(PartitionState(index(p), InvalidRequestError.code, why) for p in parts),
            )
        answers = await asyncio.gather(
            *(run(ShareKey(group_id, topic_id, index(p)), p) for p in parts)
        )
        return TopicState(topic_id, tuple(answers))

    return ShareStateResult(tuple(await asyncio.gather(*(topic(t, ps) for t, ps in topics))))


def _all(
    topics: Sequence[tuple[uuid.UUID | None, Sequence[P]]], index: Callable[[P], int],
    code: int, why: str,
) -> ShareStateResult:  # fmt: skip
    return ShareStateResult(tuple(
        TopicState(t, tuple(PartitionState(index(p), code, why) for p in ps)) for t, ps in topics
    ))  # fmt: skip
