"""Metadata: brokers, controller and partition leaders from this broker's metadata cache.

`topics` None asks for all topics. An unknown topic gets UNKNOWN_TOPIC_OR_PARTITION in its own
entry; offline partitions (no live leader) have leader -1 and LEADER_NOT_AVAILABLE. Topics are
never created by a Metadata request (allow_auto_topic_creation is ignored). Brokers are given
at their native listener of the name the request came in on (`as_seen_on`).

ACLs (broker/security/rules.py): all topics means those the principal may Describe (the others
are left out, their denials not logged); a named topic it may not Describe is
TOPIC_AUTHORIZATION_FAILED, whether or not it exists.
"""

from __future__ import annotations

import dataclasses

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.metadata import (
    NATIVE_DOOR,
    BrokerInfo,
    MetadataRequest,
    MetadataResponse,
    TopicMetadata,
)
from protocol.codec import Request
from protocol.errors import TopicAuthorizationFailedError


def handle(ctx: BrokerContext, request: Request, session: Session) -> MetadataResponse:
    req: MetadataRequest = request.body
    cache = ctx.metadata
    brokers = [as_seen_on(cache.brokers[i], session.listener) for i in cache.live_broker_ids()]
    return MetadataResponse(
        brokers, ctx.cluster_id, cache.controller_id, describe(ctx, session, req.topics)
    )


def as_seen_on(broker: BrokerInfo, listener: str) -> BrokerInfo:
    """The broker with `host`/`port` of its native listener named `listener`, the one the
    client came in on (Kafka's rule), so that a client on a SASL or TLS listener is sent to the
    same kind of listener on every broker, not to the inter-broker one. A broker without that
    listener keeps its inter-broker address."""
    endpoint = broker.endpoint(NATIVE_DOOR, listener)
    if endpoint is None or endpoint == (broker.host, broker.port):
        return broker
    return dataclasses.replace(broker, host=endpoint[0], port=endpoint[1])


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
