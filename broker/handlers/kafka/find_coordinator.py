"""FindCoordinator (10), v0-v4: a group's coordinator (key type 0, from the same service as
the native FindCoordinator, which creates `__consumer_offsets` on first use) or a
transactional id's (key type 1, `__transaction_state`), at its Kafka endpoint. v4 asks for
many keys at once. Any other key type is INVALID_REQUEST, as Kafka answers."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.find_coordinator import refusal
from broker.session import Session
from protocol.errors import (
    CoordinatorNotAvailableError,
    InvalidRequestError,
    ListenerNotFoundError,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import FIND_COORDINATOR

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    key_type = getattr(req, "key_type", GROUP_KEY_TYPE)
    cls = response_class(FIND_COORDINATOR, version)
    if version >= 4:
        found = [(k, *await _allowed(ctx, session, k, key_type))
                 for k in req.coordinator_keys]  # fmt: skip
        coordinator_cls = nested(cls, "Coordinator")
        coordinators = tuple(
            make(coordinator_cls, key=k, node_id=n, host=h, port=p, error_code=c, error_message=m)
            for k, c, m, n, h, p in found
        )
        return make(cls, throttle_time=0, coordinators=coordinators)
    code, message, node, host, port = await _allowed(ctx, session, req.key, key_type)
    return make(cls, throttle_time=0, error_code=code, error_message=message, node_id=node,
                host=host, port=port)  # fmt: skip


async def _allowed(
    ctx: BrokerContext, session: Session, key: str, key_type: int
) -> tuple[int, str | None, int, str, int]:
    """_find, for a principal allowed to Describe the group or transactional id (ACLs)."""
    denied = refusal(ctx, session, key_type, key)
    if denied is not None:
        return denied.code, denied.message, -1, "", -1
    return await _find(ctx, key, key_type, session.listener)


async def _find(
    ctx: BrokerContext, key: str, key_type: int, listener: str
) -> tuple[int, str | None, int, str, int]:
    """(error code, message, node id, host, port) at the coordinator's Kafka listener."""
    if key_type == TRANSACTION_KEY_TYPE:
        if ctx.transactions is None:
            return CoordinatorNotAvailableError.code, "no transaction coordinator", -1, "", -1
        txn = await ctx.transactions.find_coordinator(key)
        code, message, node_id = txn.error_code, txn.message, txn.node_id
    elif key_type == GROUP_KEY_TYPE:
        if ctx.groups is None:
            return CoordinatorNotAvailableError.code, None, -1, "", -1
        group = await ctx.groups.find_coordinator(key)
        code, message, node_id = group.error_code, group.error_message, group.node_id
    else:
        return InvalidRequestError.code, f"unknown coordinator key type {key_type}", -1, "", -1
    if code:
        return code, message, -1, "", -1
    endpoint = ctx.metadata.kafka_endpoint(node_id, listener)
    if endpoint is None:
        why = f"the coordinator has no Kafka listener {listener}"
        return ListenerNotFoundError.code, why, -1, "", -1
    return 0, None, node_id, endpoint[0], endpoint[1]
