"""StopReplica (controller -> broker): stop hosting partitions, deleting their logs when
`delete_partitions` is set (topic deletion). A stale controller epoch changes nothing. ACLs:
the sender needs ClusterAction on the cluster (CLUSTER_AUTHORIZATION_FAILED)."""

from __future__ import annotations

import logging

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.controller import PartitionError, StopReplicaRequest, StopReplicaResponse
from protocol.codec import Request
from protocol.errors import ClusterAuthorizationFailedError, StaleControllerEpochError

log = logging.getLogger("odradek.broker.controller_requests")


def handle(ctx: BrokerContext, request: Request, session: Session) -> StopReplicaResponse:
    req: StopReplicaRequest = request.body
    if not rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api="StopReplica"):
        return StopReplicaResponse(ClusterAuthorizationFailedError.code, [])
    if not ctx.controller_epoch.admit(req.controller_epoch):
        log.warning(
            "StopReplica from controller %d refused: epoch %d < %d",
            req.controller_id,
            req.controller_epoch,
            ctx.controller_epoch.current,
        )
        return StopReplicaResponse(StaleControllerEpochError.code, [])
    errors = [
        PartitionError(
            tp.topic,
            tp.partition,
            ctx.replicas.roles.stop_replica(tp.topic, tp.partition, req.delete_partitions),
        )
        for tp in req.partitions
    ]
    return StopReplicaResponse(0, errors)
