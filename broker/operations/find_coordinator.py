"""FindCoordinator: where a group's coordinator is (key type 0: the leader of the group's
`__consumer_offsets` partition, the topic created here on first use) or a transactional id's
(key type 1: the leader of its `__transaction_state` partition) or a share partition's share
coordinator (key type 2, "groupId:topicId:partition": the leader of its `__share_group_state`
partition; KIP-932, asked by partition leaders). Any broker answers. Kafka v4
asks for several keys at once; the other versions and the native door for one.

The coordinator is given at its listener of the name the client came in on, on the client's
door (`door`: the codec says which; Kafka's rule, so a SASL client is not sent to a PLAINTEXT
listener). On the native door a coordinator without that listener is given at its
inter-broker address (the native Metadata's rule); on the Kafka door it is
COORDINATOR_NOT_AVAILABLE, as Kafka answers.

Refusals, per key: no Describe on the group or transactional id is GROUP_AUTHORIZATION_FAILED or
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, no ClusterAction on the cluster for key type 2 (only
brokers ask it, as in Kafka) CLUSTER_AUTHORIZATION_FAILED; another key type INVALID_REQUEST;
no coordinator service on this broker COORDINATOR_NOT_AVAILABLE. A refused key's coordinator is
node -1 at "":-1 (Kafka's Node.noNode).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import GROUP_KEY_TYPE, SHARE_KEY_TYPE, TRANSACTION_KEY_TYPE
from protocol.api.metadata import NATIVE_DOOR
from protocol.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    InvalidRequestError,
)

API = "FindCoordinator"
RESOURCE = {GROUP_KEY_TYPE: rules.GROUP, TRANSACTION_KEY_TYPE: rules.TXN_ID}


@dataclass(frozen=True, slots=True)
class FindCoordinator:
    keys: tuple[str, ...]  # group ids or transactional ids
    key_type: int = GROUP_KEY_TYPE
    door: str = NATIVE_DOOR  # the door whose listener the coordinator is given at


@dataclass(frozen=True, slots=True)
class Coordinator:
    key: str
    error_code: int
    error_message: str | None = None
    node_id: int = -1
    host: str = ""
    port: int = -1


@dataclass(frozen=True, slots=True)
class FindCoordinatorResult:
    coordinators: tuple[Coordinator, ...]  # in the order asked


async def run(ctx: BrokerContext, session: Session, req: FindCoordinator) -> FindCoordinatorResult:
    if req.key_type == SHARE_KEY_TYPE and not rules.allows(
        ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=API
    ):
        code, why = ClusterAuthorizationFailedError.code, "ClusterAction on the cluster is needed"
        return FindCoordinatorResult(tuple(Coordinator(k, code, why) for k in req.keys))
    rtype = RESOURCE.get(req.key_type)
    refused = rules.NOTHING
    if rtype is not None:
        refused = rules.denied(ctx, session, rules.DESCRIBE, rtype, req.keys, api=API)
    out = []
    for key in req.keys:
        if rtype is not None and key in refused:
            denial = rules.refusal(session, rules.DESCRIBE, rtype, key)
            out.append(Coordinator(key, denial.code, denial.message))
        else:
            out.append(await _find(ctx, session, req, key))
    return FindCoordinatorResult(tuple(out))


async def _find(
    ctx: BrokerContext, session: Session, req: FindCoordinator, key: str
) -> Coordinator:
    if req.key_type == GROUP_KEY_TYPE:
        group = await ctx.groups.find_coordinator(key)
        code, message, node_id = group.error_code, group.error_message, group.node_id
    elif req.key_type == TRANSACTION_KEY_TYPE:
        txn = await ctx.transactions.find_coordinator(key)
        code, message, node_id = txn.error_code, txn.message, txn.node_id
    elif req.key_type == SHARE_KEY_TYPE:
        share = await ctx.share_coordinator.find_coordinator(key)
        code, message, node_id = share.error_code, share.message, share.node_id
    else:
        why = f"unknown coordinator key type {req.key_type}"
        return Coordinator(key, InvalidRequestError.code, why)
    if code:
        return Coordinator(key, code, message)
    broker = ctx.metadata.brokers.get(node_id)
    endpoint = None if broker is None else broker.endpoint(req.door, session.listener)
    if broker is not None and endpoint is None and req.door == NATIVE_DOOR:
        endpoint = (broker.host, broker.port)
    if endpoint is None:
        why = f"the coordinator, broker {node_id}, has no {req.door} listener {session.listener}"
        return Coordinator(key, CoordinatorNotAvailableError.code, why)
    return Coordinator(key, 0, None, node_id, endpoint[0], endpoint[1])
