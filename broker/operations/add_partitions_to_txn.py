"""AddPartitionsToTxn: a transactional producer names the partitions its open transaction
writes to before it produces to them (KIP-98), so that the coordinator knows where to write
the markers; a partition leader asks whether a partition is in the ongoing transaction before
it accepts a transactional batch (`verify_only`, KIP-890: odradek's broker/txn_verifier.py on
the native door, Kafka's v4 from other brokers). One error code per partition.

A request holds one transaction (native, Kafka v0-v3) or several (Kafka v4, which only brokers
send: `from_broker`). Refusals, in Kafka's order: `from_broker` without ClusterAction on the
cluster is CLUSTER_AUTHORIZATION_FAILED for the whole request; a `verify_only` transaction
without it, CLUSTER_AUTHORIZATION_FAILED on its partitions; a producer's without Write on the
transactional id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED on its partitions; then Write on each
topic: refused topics answer TOPIC_AUTHORIZATION_FAILED and the others
OPERATION_NOT_ATTEMPTED. No transaction coordinator here: COORDINATOR_NOT_AVAILABLE.

Transaction version 2 (KIP-890 part 2: Kafka v5, `txn_version` 2) is a partition leader adding
the partition of a Produce v12+ to the producer's transaction (opening it if none is open)
instead of only asking: it needs ClusterAction, as `verify_only` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.txn_common import NONE, code_of, txn_refusal
from broker.security import rules
from broker.session import Session
from coordinator.transaction import txn as ops
from protocol.errors import (
    ClusterAuthorizationFailedError,
    OdradekError,
    OperationNotAttemptedError,
    TopicAuthorizationFailedError,
)

API = "AddPartitionsToTxn"
TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TxnPartitions:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[tuple[str, tuple[int, ...]], ...]
    verify_only: bool = False  # only ask whether they are in the transaction
    txn_version: int = 0  # 2: a leader adds them for a TV2 producer (Produce v12+)


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxn:
    transactions: tuple[TxnPartitions, ...]
    from_broker: bool = False  # Kafka v4+: ClusterAction once, for the whole request


@dataclass(frozen=True, slots=True)
class TxnPartitionsAdded:
    transactional_id: str
    topics: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (partition, error code)


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResult:
    error_code: int  # the whole request's (from_broker without ClusterAction)
    transactions: tuple[TxnPartitionsAdded, ...]


async def run(
    ctx: BrokerContext, session: Session, req: AddPartitionsToTxn
) -> AddPartitionsToTxnResult:
    if req.from_broker and not rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER,
                                            api=API):  # fmt: skip
        return AddPartitionsToTxnResult(ClusterAuthorizationFailedError.code, ())
    return AddPartitionsToTxnResult(
        NONE, tuple([await _one(ctx, session, t, req.from_broker) for t in req.transactions])
    )


async def _one(
    ctx: BrokerContext, session: Session, t: TxnPartitions, from_broker: bool
) -> TxnPartitionsAdded:
    wanted = [(topic, p) for topic, ps in t.topics for p in ps]
    answer: dict[TP, str] | dict[TP, int] | int
    try:
        answer = {} if from_broker else _refusals(ctx, session, t, wanted)
        if not answer:
            answer = await ctx.transactions.add_partitions(
                t.transactional_id,
                t.producer_id,
                t.producer_epoch,
                wanted,
                t.verify_only,
                t.txn_version,
            )
    except OdradekError as exc:
        answer = exc.code
    return TxnPartitionsAdded(t.transactional_id, tuple(
        (topic, tuple((p, code_of(answer if isinstance(answer, int) else answer[(topic, p)]))
                      for p in ps))
        for topic, ps in t.topics
    ))  # fmt: skip


def _refusals(
    ctx: BrokerContext, session: Session, t: TxnPartitions, wanted: list[TP]
) -> dict[TP, int]:
    """The partitions' codes when ACLs refuse the transaction, else {}."""
    if ctx.authorizer is None:
        return {}
    if t.verify_only or t.txn_version >= ops.TV2:
        if rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=API):
            return {}
        return dict.fromkeys(wanted, ClusterAuthorizationFailedError.code)
    code = txn_refusal(ctx, session, t.transactional_id, API)
    if code:
        return dict.fromkeys(wanted, code)
    refused = rules.denied(ctx, session, rules.WRITE, rules.TOPIC, {tp for tp, _ in wanted},
                           api=API)  # fmt: skip
    if not refused:
        return {}
    return {(tp, p): TopicAuthorizationFailedError.code if tp in refused
            else OperationNotAttemptedError.code for tp, p in wanted}  # fmt: skip
