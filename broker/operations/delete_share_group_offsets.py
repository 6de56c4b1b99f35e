"""DeleteShareGroupOffsets (api key 92, KIP-932, v0): forget an Empty share group's state on
the topics named: each share partition's state is deleted (DeleteShareGroupState through
`ctx.share_persister`), and the topic leaves the group's topics with state; a member that
subscribes to it again starts at `share.auto.offset.reset`, as in Kafka.

Refusals, Kafka's: no Delete on the group is GROUP_AUTHORIZATION_FAILED for the whole request;
not its coordinator NOT_COORDINATOR (or loading); no share group by the id GROUP_ID_NOT_FOUND;
a group with members GROUP_NOT_EMPTY. Per topic: no Read on it TOPIC_AUTHORIZATION_FAILED, an
unknown topic UNKNOWN_TOPIC_OR_PARTITION, else the share coordinator's first error, if any.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations import share_offsets
from broker.security import rules
from broker.session import Session

API = "DeleteShareGroupOffsets"
NONE = 0


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsets:
    group_id: str
    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TopicDeleted:
    topic: str
    error_code: int = NONE
    error_message: str | None = None
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsetsResult:
    error_code: int = NONE
    error_message: str | None = None
    topics: tuple[TopicDeleted, ...] = ()


async def run(
    ctx: BrokerContext, session: Session, req: DeleteShareGroupOffsets
) -> DeleteShareGroupOffsetsResult:
    gid = req.group_id
    if not rules.allows(ctx, session, rules.DELETE, rules.GROUP, gid, api=API):
        err = rules.refusal(session, rules.DELETE, rules.GROUP, gid)
        return DeleteShareGroupOffsetsResult(err.code, err.message)
    found = share_offsets.must_be_empty(await share_offsets.find(ctx, gid), gid)
    if found.error_code != NONE or found.group is None:
        return DeleteShareGroupOffsetsResult(found.error_code, found.error_message)
    refused = rules.denied(ctx, session, rules.READ, rules.TOPIC, req.topics, api=API)
    out = []
    for topic in req.topics:
        if topic in refused:
            err = rules.refusal(session, rules.READ, rules.TOPIC, topic)
            out.append(TopicDeleted(topic, err.code, err.message, ctx.metadata.topic_id(topic)))
            continue
        deleted = await delete_topic_state(ctx, gid, topic)
        if deleted.error_code == NONE:
            await ctx.groups.share.set_state_topic(gid, topic, False)  # written
        out.append(deleted)
    return DeleteShareGroupOffsetsResult(NONE, None, tuple(out))


async def delete_topic_state(ctx: BrokerContext, gid: str, topic: str) -> TopicDeleted:
    """Delete the share state of each of the topic's partitions (DeleteGroups does it too)."""
    parts = share_offsets.partitions(ctx, topic)
    if parts is None:
        return TopicDeleted(topic, share_offsets.UNKNOWN_TOPIC_OR_PARTITION,
                            f"Topic {topic} not found.")  # fmt: skip
    first = NONE
    for p in parts:
        code = await ctx.share_persister.delete(gid, topic, p)
        if code == NONE:
            share_offsets.forget(ctx, gid, topic, p)
        first = first or code
    return TopicDeleted(topic, first, None, ctx.metadata.topic_id(topic))
