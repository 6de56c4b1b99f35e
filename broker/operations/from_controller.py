"""What the controller's requests to a broker share (LeaderAndIsr, StopReplica, UpdateMetadata,
each an operation here): the sender needs ClusterAction on the cluster (these are
inter-broker requests, as in Kafka), and a request from an older controller epoch than one
already seen (`ctx.controller_epoch`, a controller deposed since) is STALE_CONTROLLER_EPOCH
and changes nothing. `refusal` makes both checks, in that order, and gives the whole-request
error code to answer, or None to go on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import ClusterAuthorizationFailedError, StaleControllerEpochError

log = logging.getLogger("odradek.broker.controller_requests")


@dataclass(frozen=True, slots=True)
class PartitionResult:
    topic: str
    partition: int
    error_code: int


def refusal(
    ctx: BrokerContext, session: Session, api: str, controller_id: int, controller_epoch: int
) -> int | None:
    """CLUSTER_AUTHORIZATION_FAILED or STALE_CONTROLLER_EPOCH for the whole request, else None
    (and the epoch is remembered as the newest seen)."""
    if not rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=api):
        return ClusterAuthorizationFailedError.code
    if not ctx.controller_epoch.admit(controller_epoch):
        log.warning("%s from controller %d refused: epoch %d < %d", api, controller_id,
                    controller_epoch, ctx.controller_epoch.current)  # fmt: skip
        return StaleControllerEpochError.code
    return None
