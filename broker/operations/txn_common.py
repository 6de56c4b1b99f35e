"""What the transaction operations share (init_producer_id.py, add_partitions_to_txn.py,
add_offsets_to_txn.py, end_txn.py, txn_offset_commit.py): the transaction coordinator they
call, its answers (an error name of coordinator/transaction/txn.py, or a coordinator error code)
as wire codes, the ACL checks they make in Kafka's order, and the number of
`__consumer_offsets` partitions AddOffsetsToTxn needs to name a group's partition.

Codes are the newest versions' (PRODUCER_FENCED, 90); the Kafka codec writes
INVALID_PRODUCER_EPOCH for the request versions older than KIP-588.
"""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from coordinator.transaction import txn as ops
from protocol.errors import (
    GroupAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

NONE = 0


def code_of(answer: str | int) -> int:
    """A service answer (an error name, or a coordinator error code) as a wire code."""
    return answer if isinstance(answer, int) else ops.error_code(answer)


def offsets_partitions(ctx: BrokerContext) -> int:
    """How many partitions `__consumer_offsets` has (or will have, once created)."""
    parts = ctx.metadata.topics.get(OFFSETS_TOPIC)
    if parts:
        return len(parts)
    return ctx.groups.runtime.partition_count()


def txn_refusal(ctx: BrokerContext, session: Session, transactional_id: str, api: str) -> int:
    """Write on the transactional id: 0, or TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
    if rules.allows(ctx, session, rules.WRITE, rules.TXN_ID, transactional_id, api=api):
        return NONE
    return TransactionalIdAuthorizationFailedError.code


def txn_group_refusal(
    ctx: BrokerContext, session: Session, transactional_id: str, group_id: str, api: str
) -> int:
    """AddOffsetsToTxn / TxnOffsetCommit: Write on the transactional id, then Read on the
    group (GROUP_AUTHORIZATION_FAILED); 0 when both are allowed."""
    code = txn_refusal(ctx, session, transactional_id, api)
    if code or rules.allows(ctx, session, rules.READ, rules.GROUP, group_id, api=api):
        return code
    return GroupAuthorizationFailedError.code
