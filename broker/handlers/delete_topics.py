"""DeleteTopics: mark each topic for deletion in ZooKeeper, wait until the controller has
removed it from the metadata (UpdateMetadata with the topic among deleted_topics), within
`timeout_ms` (REQUEST_TIMED_OUT otherwise; the deletion still goes on)."""

from __future__ import annotations

import asyncio
import logging

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.admin import DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse
from protocol.codec import Request
from protocol.errors import OdradekError, RequestTimedOutError

log = logging.getLogger("odradek.broker.admin")


async def handle(ctx: BrokerContext, request: Request, session: Session) -> DeleteTopicsResponse:
    req: DeleteTopicsRequest = request.body
    names = req.topic_names
    refused = rules.denied(ctx, session, rules.DELETE, rules.TOPIC, names, api="DeleteTopics")
    deleted = iter(await asyncio.gather(
        *(_delete(ctx, n, req.timeout_ms) for n in names if n not in refused)
    ))  # fmt: skip
    return DeleteTopicsResponse([_refusal(session, n) if n in refused else next(deleted)
                                 for n in names])  # fmt: skip


def _refusal(session: Session, name: str) -> DeletableTopicResult:
    err = rules.refusal(session, rules.DELETE, rules.TOPIC, name)
    return DeletableTopicResult(name, err.code, err.message)


async def _delete(ctx: BrokerContext, name: str, timeout_ms: int) -> DeletableTopicResult:
    try:
        await ctx.topics.delete_topic(name)
        if not await ctx.metadata.wait_until(lambda: not ctx.metadata.has_topic(name), timeout_ms):
            raise RequestTimedOutError(f"topic {name} is not gone after {timeout_ms} ms")
    except OdradekError as exc:
        return DeletableTopicResult(name, exc.code, exc.message)
    log.info("deleted topic %s", name)
    return DeletableTopicResult(name, 0, None)
