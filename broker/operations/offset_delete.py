"""OffsetDelete (Kafka only): delete a group's committed offsets for some partitions. A
partition of a topic the group's members subscribe to is GROUP_SUBSCRIBED_TO_TOPIC (read from
their metadata, coordinator/group/offsets.py `subscribed_or_refused`); a group of another
protocol type than "consumer" with members is NON_EMPTY_GROUP, an unknown group
GROUP_ID_NOT_FOUND. Partitions are answered, in the order asked, only when the whole request's
code is NONE.

Refusals, in Kafka's order: no Delete on the group is GROUP_AUTHORIZATION_FAILED for the whole
request; then each topic without Read is TOPIC_AUTHORIZATION_FAILED for its partitions (the
others are deleted); no group coordinator on this broker COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.offsets import subscribed_or_refused
from protocol.errors import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)

API = "OffsetDelete"
Partitions = tuple[tuple[str, tuple[int, ...]], ...]  # (topic, partitions)


@dataclass(frozen=True, slots=True)
class OffsetDelete:
    group_id: str
    topics: Partitions


@dataclass(frozen=True, slots=True)
class TopicDeleted:
    name: str
    partitions: tuple[tuple[int, int], ...]  # (partition, error code)


@dataclass(frozen=True, slots=True)
class OffsetDeleteResult:
    error_code: int
    topics: tuple[TopicDeleted, ...] = ()  # in the order asked; () unless error_code is 0


async def run(ctx: BrokerContext, session: Session, req: OffsetDelete) -> OffsetDeleteResult:
    if not rules.allows(ctx, session, rules.DELETE, rules.GROUP, req.group_id, api=API):
        return OffsetDeleteResult(GroupAuthorizationFailedError.code)
    refused = rules.denied(ctx, session, rules.READ, rules.TOPIC,
                           (t for t, _ in req.topics), api=API)  # fmt: skip
    code, subscribed = subscribed_or_refused(ctx.groups.group_view(req.group_id)[1])
    if code:
        return OffsetDeleteResult(code)
    wanted = [(t, p) for t, ps in req.topics if t not in refused for p in ps]
    code, deleted = await ctx.groups.offsets.delete_offsets(req.group_id, wanted, subscribed)
    if code:
        return OffsetDeleteResult(code)
    denied = TopicAuthorizationFailedError.code
    return OffsetDeleteResult(0, tuple(
        TopicDeleted(t, tuple((p, denied if t in refused else deleted.get((t, p), 0))
                              for p in ps))
        for t, ps in req.topics
    ))  # fmt: skip
