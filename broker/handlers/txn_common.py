"""What both doors' transaction handlers share (native broker/handlers/*txn*.py and the Kafka
door's broker/handlers/kafka/): the transaction coordinator they call, error names of
coordinator/transaction/txn.py turned into wire codes, and the number of `__consumer_offsets`
partitions AddOffsetsToTxn needs to name a group's partition.

The native protocol always knows PRODUCER_FENCED (90); the Kafka door maps it to
INVALID_PRODUCER_EPOCH for request versions older than KIP-588 (kafka/_txn.py).
"""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from coordinator.transaction import txn as ops
from coordinator.transaction.service import TransactionCoordinator
from protocol.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    OperationNotAttemptedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

NONE = 0


def coordinator(ctx: BrokerContext) -> TransactionCoordinator:
    if ctx.transactions is None:
        raise CoordinatorNotAvailableError("this broker runs no transaction coordinator")
    return ctx.transactions


def code_of(answer: str | int, knows_producer_fenced: bool = True) -> int:
    """A service answer (an error name, or a coordinator error code) as a wire code."""
    if isinstance(answer, int):
        return answer
    return ops.error_code(answer, knows_producer_fenced)


def offsets_partitions(ctx: BrokerContext) -> int:
    """How many partitions `__consumer_offsets` has (or will have, once created)."""
    parts = ctx.metadata.topics.get(OFFSETS_TOPIC)
    if parts:
        return len(parts)
    return ctx.groups.runtime.partition_count() if ctx.groups else 0


# ACL checks both doors' transaction handlers make (broker/security/rules.py, Kafka's order).


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


def add_partitions_refusals(
    ctx: BrokerContext, session: Session, transactional_id: str,
    wanted: list[tuple[str, int]], verify_only: bool, api: str = "AddPartitionsToTxn",
) -> dict[tuple[str, int], int]:  # fmt: skip
    """AddPartitionsToTxn's codes when ACLs refuse it, else {}: a broker's verification
    (verify_only, Kafka's v4+) needs ClusterAction on the cluster; a producer's, Write on the
    transactional id, then Write on each topic: refused topics answer
    TOPIC_AUTHORIZATION_FAILED and the other partitions OPERATION_NOT_ATTEMPTED."""
    if ctx.authorizer is None:
        return {}
    if verify_only:
        if rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=api):
            return {}
        return dict.fromkeys(wanted, ClusterAuthorizationFailedError.code)
    code = txn_refusal(ctx, session, transactional_id, api)
    if code:
        return dict.fromkeys(wanted, code)
    refused = rules.denied(ctx, session, rules.WRITE, rules.TOPIC, {t for t, _ in wanted},
                           api=api)  # fmt: skip
    if not refused:
        return {}
    return {(t, p): TopicAuthorizationFailedError.code if t in refused
            else OperationNotAttemptedError.code for t, p in wanted}  # fmt: skip


def producer_id_refusal(ctx: BrokerContext, session: Session, transactional_id: str | None) -> int:
    """InitProducerId: Write on the transactional id; without one (an idempotent producer),
    IdempotentWrite on the cluster or Write on some topic (KIP-679), else
    CLUSTER_AUTHORIZATION_FAILED. 0 when allowed."""
    api = "InitProducerId"
    if transactional_id is not None:
        return txn_refusal(ctx, session, transactional_id, api)
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.IDEMPOTENT_WRITE, rules.CLUSTER, api=api, log_denied=False
    ) or rules.allows_any(ctx, session, rules.WRITE, rules.TOPIC, api=api):  # fmt: skip
        return NONE
    return ClusterAuthorizationFailedError.code
