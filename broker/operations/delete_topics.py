"""DeleteTopics: mark each topic for deletion in ZooKeeper, wait until the controller has
removed it from the metadata (UpdateMetadata with the topic among deleted_topics), within
`timeout_ms` (REQUEST_TIMED_OUT otherwise; the deletion still goes on). Topics are answered in
the order asked, each with its id as it was before the delete.

A topic is named by name or (Kafka v6, KIP-516) by id: an id is looked up in the metadata cache,
and one no topic has is UNKNOWN_TOPIC_ID. ACLs: Delete on each topic (else
TOPIC_AUTHORIZATION_FAILED); a topic named by id that the principal may not Describe is answered
TOPIC_AUTHORIZATION_FAILED without its name (Kafka), and is not deleted.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import (
    OdradekError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
)
from protocol.topic_ids import encode_topic_id

API = "DeleteTopics"
log = logging.getLogger("odradek.broker.admin")


@dataclass(frozen=True, slots=True)
class TopicRef:
    name: str | None  # None: named by id
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class DeleteTopics:
    topics: tuple[TopicRef, ...]
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class TopicDeleted:
    name: str | None  # None: an unknown id, or one the principal may not Describe
    topic_id: uuid.UUID | None
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteTopicsResult:
    responses: tuple[TopicDeleted, ...]  # in the order asked


async def run(ctx: BrokerContext, session: Session, req: DeleteTopics) -> DeleteTopicsResult:
    names = [_name(ctx, t) for t in req.topics]
    by_id = [n for t, n in zip(req.topics, names, strict=True) if t.name is None and n]
    nameless = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, by_id, api=API,
                            log_denied=False)  # fmt: skip
    asked = [n for n in names if n is not None and n not in nameless]
    refused = rules.denied(ctx, session, rules.DELETE, rules.TOPIC, asked, api=API)
    ids = {n: ctx.metadata.topic_id(n) for n in asked}  # before they are gone
    todo = list(dict.fromkeys(n for n in asked if n not in refused))
    done = dict(zip(todo, await asyncio.gather(*(_delete(ctx, n, req.timeout_ms) for n in todo)),
                    strict=True))  # fmt: skip
    out = []
    for ref, name in zip(req.topics, names, strict=True):
        if name is None:
            text = "null" if ref.topic_id is None else encode_topic_id(ref.topic_id)
            out.append(TopicDeleted(None, ref.topic_id, UnknownTopicIdError.code,
                                    f"no topic has the id {text}"))  # fmt: skip
        elif name in nameless:
            out.append(TopicDeleted(None, ref.topic_id, TopicAuthorizationFailedError.code,
                                    "Topic authorization failed."))  # fmt: skip
        elif name in refused:
            refusal = rules.refusal(session, rules.DELETE, rules.TOPIC, name)
            out.append(TopicDeleted(name, ids[name], refusal.code, refusal.message))
        else:
            out.append(TopicDeleted(name, ids[name], *done[name]))
    return DeleteTopicsResult(tuple(out))


def _name(ctx: BrokerContext, ref: TopicRef) -> str | None:
    if ref.name is not None:
        return ref.name
    return None if ref.topic_id is None else ctx.metadata.topic_by_id(ref.topic_id)


async def _delete(ctx: BrokerContext, name: str, timeout_ms: int) -> tuple[int, str | None]:
    try:
        await ctx.topics.delete_topic(name)
        if not await ctx.metadata.wait_until(lambda: not ctx.metadata.has_topic(name), timeout_ms):
            raise RequestTimedOutError(f"topic {name} is not gone after {timeout_ms} ms")
    except OdradekError as exc:
        return exc.code, exc.message
    log.info("deleted topic %s", name)
    return 0, None
