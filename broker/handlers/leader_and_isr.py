"""LeaderAndIsr (controller -> broker): become leader or follower for the partitions named.

A request from an older controller epoch than one already seen is refused with
STALE_CONTROLLER_EPOCH and changes nothing. Each partition state that lists this broker among
its replicas opens (or creates) the partition's log with the topic's config (defaults plus its
ZooKeeper overrides, looked up through ctx.topics) and takes the role the state gives it: a
follower starts fetching from its leader (after truncating by OffsetsForLeaderEpoch), a leader
stops fetching (broker/replica_fetcher.py; `live_leaders` gives the leaders' addresses).
ACLs: the sender needs ClusterAction on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.controller import LeaderAndIsrRequest, LeaderAndIsrResponse, PartitionError
from protocol.codec import Request
from protocol.errors import ClusterAuthorizationFailedError, StaleControllerEpochError

log = logging.getLogger("odradek.broker.controller_requests")


def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> LeaderAndIsrResponse | Awaitable[LeaderAndIsrResponse]:
    req: LeaderAndIsrRequest = request.body
    if not rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api="LeaderAndIsr"):
        return LeaderAndIsrResponse(ClusterAuthorizationFailedError.code, [])
    if not ctx.controller_epoch.admit(req.controller_epoch):
        log.warning(
            "LeaderAndIsr from controller %d refused: epoch %d < %d",
            req.controller_id,
            req.controller_epoch,
            ctx.controller_epoch.current,
        )
        return LeaderAndIsrResponse(StaleControllerEpochError.code, [])
    return _apply(ctx, req)


async def _apply(ctx: BrokerContext, req: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
    results = await ctx.replicas.roles.apply_leader_and_isr(
        req.partition_states, ctx.topics.read_topic_config, req.live_leaders
    )
    if ctx.groups is not None:
        ctx.groups.on_leadership_change()  # become / stop being a group coordinator
    if ctx.transactions is not None:
        ctx.transactions.runtime.on_leadership_change()  # ... a transaction coordinator
    return LeaderAndIsrResponse(0, [PartitionError(t, p, code) for t, p, code in results])
