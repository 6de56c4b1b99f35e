"""UpdateMetadata (controller -> broker): refresh the metadata cache (live brokers, controller,
partition states, deleted topics). A stale controller epoch is refused and changes nothing.
ACLs: the sender needs ClusterAction on the cluster (CLUSTER_AUTHORIZATION_FAILED)."""

from __future__ import annotations

import logging

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.controller import UpdateMetadataRequest, UpdateMetadataResponse
from protocol.codec import Request
from protocol.errors import ClusterAuthorizationFailedError, StaleControllerEpochError

log = logging.getLogger("odradek.broker.controller_requests")


def handle(ctx: BrokerContext, request: Request, session: Session) -> UpdateMetadataResponse:
    req: UpdateMetadataRequest = request.body
    if not rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api="UpdateMetadata"):
        return UpdateMetadataResponse(ClusterAuthorizationFailedError.code)
    if not ctx.controller_epoch.admit(req.controller_epoch):
        log.warning(
            "UpdateMetadata from controller %d refused: epoch %d < %d",
            req.controller_id,
            req.controller_epoch,
            ctx.controller_epoch.current,
        )
        return UpdateMetadataResponse(StaleControllerEpochError.code)
    ctx.metadata.apply(req)
    return UpdateMetadataResponse(0)
