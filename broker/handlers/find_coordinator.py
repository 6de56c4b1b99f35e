"""FindCoordinator (seed 000's ConsumerMetadataRequest): Key, KeyType -> ErrorCode, Coordinator.

Any broker answers. Key type 0: a group's coordinator, the leader of its `__consumer_offsets`
partition, created here on first use (coordinator/group/service.py). Key type 1: a
transactional id's, the leader of its `__transaction_state` partition
(coordinator/transaction/service.py). Any other key type is INVALID_REQUEST."""

from __future__ import annotations

import dataclasses

from broker.context import BrokerContext
from broker.operations.metadata import as_seen_on
from broker.security import rules
from broker.session import Session
from protocol.api.group import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError, InvalidRequestError, OdradekError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> FindCoordinatorResponse:
    req: FindCoordinatorRequest = request.body
    denied = refusal(ctx, session, req.key_type, req.group_id)
    if denied is not None:
        return FindCoordinatorResponse(denied.code, denied.message, -1, "", 0)
    if req.key_type == TRANSACTION_KEY_TYPE:
        return on_listener(ctx, session, await _transaction(ctx, req.group_id))
    if req.key_type != GROUP_KEY_TYPE:
        message = f"unknown coordinator key type {req.key_type}"
        return FindCoordinatorResponse(InvalidRequestError.code, message, -1, "", 0)
    if ctx.groups is None:
        return FindCoordinatorResponse(CoordinatorNotAvailableError.code, None, -1, "", 0)
    return on_listener(ctx, session, await ctx.groups.find_coordinator(req.group_id))


def on_listener(
    ctx: BrokerContext, session: Session, found: FindCoordinatorResponse
) -> FindCoordinatorResponse:
    """The coordinator at its native listener of the name the client came in on (Metadata's
    rule, broker/operations/metadata.py `as_seen_on`)."""
    broker = ctx.metadata.brokers.get(found.node_id) if found.error_code == 0 else None
    if broker is None:
        return found
    seen = as_seen_on(broker, session.listener)
    return dataclasses.replace(found, host=seen.host, port=seen.port)


def refusal(ctx: BrokerContext, session: Session, key_type: int, key: str) -> OdradekError | None:
    """ACLs (both doors): Describe on the group, or on the transactional id, the key names."""
    rtype = {GROUP_KEY_TYPE: rules.GROUP, TRANSACTION_KEY_TYPE: rules.TXN_ID}.get(key_type)
    if rtype is None or rules.allows(ctx, session, rules.DESCRIBE, rtype, key,
                                     api="FindCoordinator"):  # fmt: skip
        return None
    return rules.refusal(session, rules.DESCRIBE, rtype, key)


async def _transaction(ctx: BrokerContext, tid: str) -> FindCoordinatorResponse:
    if ctx.transactions is None:
        message = "this broker runs no transaction coordinator"
        return FindCoordinatorResponse(CoordinatorNotAvailableError.code, message, -1, "", 0)
    found = await ctx.transactions.find_coordinator(tid)
    if found.error_code:
        return FindCoordinatorResponse(found.error_code, found.message, -1, "", 0)
    broker = ctx.metadata.brokers.get(found.node_id)
    if broker is None:
        message = f"the coordinator, broker {found.node_id}, is not in this broker's metadata"
        return FindCoordinatorResponse(CoordinatorNotAvailableError.code, message, -1, "", 0)
    return FindCoordinatorResponse(0, None, broker.node_id, broker.host, broker.port)
