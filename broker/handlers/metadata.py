"""Metadata: brokers, controller and partition leaders from this broker's metadata cache.

`topics` None asks for all topics. An unknown topic gets UNKNOWN_TOPIC_OR_PARTITION in its own
entry; offline partitions (no live leader) have leader -1 and LEADER_NOT_AVAILABLE. Topics are
never created by a Metadata request (allow_auto_topic_creation is ignored).
"""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.codec import Request


def handle(ctx: BrokerContext, request: Request, session: Session) -> MetadataResponse:
    req: MetadataRequest = request.body
    cache = ctx.metadata
    brokers = [cache.brokers[i] for i in cache.live_broker_ids()]
    return MetadataResponse(
        brokers, ctx.cluster_id, cache.controller_id, cache.describe(req.topics)
    )
