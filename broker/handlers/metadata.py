"""Metadata: brokers, controller and partition leaders from this broker's metadata cache.

`topics` None asks for all topics. An unknown topic gets UNKNOWN_TOPIC_OR_PARTITION in its own
entry; offline partitions (no live leader) have leader -1 and LEADER_NOT_AVAILABLE. Topics are
never created by a Metadata request (allow_auto_topic_creation is ignored).

ACLs (broker/security/rules.py): all topics means those the principal may Describe (the others
are left out, their denials not logged); a named topic it may not Describe is
TOPIC_AUTHORIZATION_FAILED, whether or not it exists.
"""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.metadata import MetadataRequest, MetadataResponse, TopicMetadata
from protocol.codec import Request
from protocol.errors import TopicAuthorizationFailedError


def handle(ctx: BrokerContext, request: Request, session: Session) -> MetadataResponse:
    req: MetadataRequest = request.body
    cache = ctx.metadata
    brokers = [cache.brokers[i] for i in cache.live_broker_ids()]
    return MetadataResponse(
        brokers, ctx.cluster_id, cache.controller_id, describe(ctx, session, req.topics)
    )


def describe(ctx: BrokerContext, session: Session, names: list[str] | None) -> list[TopicMetadata]:
    """The cache's answer for `names` (None: all topics) within the principal's rights."""
    if ctx.authorizer is None:
        return ctx.metadata.describe(names)
    if names is None:
        topics = ctx.metadata.describe(None)
        hidden = rules.denied(
            ctx,
            session,
            rules.DESCRIBE,
            rules.TOPIC,
            (t.name for t in topics),
            api="Metadata",
            log_denied=False,
        )
        return [t for t in topics if t.name not in hidden]
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names, api="Metadata")
    if not refused:
        return ctx.metadata.describe(names)
    code = TopicAuthorizationFailedError.code
    return ctx.metadata.describe([n for n in names if n not in refused]) + [
        TopicMetadata(code, n, False, []) for n in names if n in refused
    ]
