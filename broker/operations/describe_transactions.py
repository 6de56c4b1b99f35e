"""DescribeTransactions: the coordinator's state of each transactional id (state, timeout,
start time, producer id and epoch, partitions), as kafka-transactions.sh describe shows it.

Each id is answered in the order asked, as Kafka does: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
without Describe on it; NOT_COORDINATOR when another broker coordinates it (or
COORDINATOR_LOAD_IN_PROGRESS while this one loads it); TRANSACTIONAL_ID_NOT_FOUND for an
unknown one. A described transaction leaves out the topics the principal may not Describe
(Kafka hides them; those denials are not logged).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.transaction.txn import TxnDescription, error_code
from protocol.errors import TransactionalIdAuthorizationFailedError

API = "DescribeTransactions"


@dataclass(frozen=True, slots=True)
class DescribeTransactions:
    transactional_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TransactionState:
    error_code: int
    transactional_id: str
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = -1  # -1: no open transaction (or an error)
    producer_id: int = -1
    producer_epoch: int = -1
    topics: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeTransactionsResult:
    transaction_states: tuple[TransactionState, ...]


def run(
    ctx: BrokerContext, session: Session, req: DescribeTransactions
) -> DescribeTransactionsResult:
    ids = req.transactional_ids
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TXN_ID, ids, api=API)
    asked = [tid for tid in ids if tid not in refused]
    described: dict[str, TransactionState] = {}
    if asked:
        for row in ctx.transactions.describe(asked):
            state = _state(row) if not isinstance(row, tuple) else TransactionState(row[1], row[0])
            described[state.transactional_id] = state
    denied = TransactionalIdAuthorizationFailedError.code
    states = [described.get(tid) or TransactionState(denied, tid) for tid in ids]
    return DescribeTransactionsResult(tuple(_visible(ctx, session, s) for s in states))


def _state(row: TxnDescription) -> TransactionState:
    return TransactionState(
        error_code(row.error), row.transactional_id, row.state, row.timeout_ms, row.start_ms,
        row.producer_id, row.producer_epoch, tuple((t, tuple(ps)) for t, ps in row.topics),
    )  # fmt: skip


def _visible(ctx: BrokerContext, session: Session, state: TransactionState) -> TransactionState:
    """`state` without the topics the principal may not Describe."""
    if ctx.authorizer is None or not state.topics:
        return state
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, _names(state.topics),
                          api=API, log_denied=False)  # fmt: skip
    if not hidden:
        return state
    return replace(state, topics=tuple((t, ps) for t, ps in state.topics if t not in hidden))


def _names(topics: Iterable[tuple[str, tuple[int, ...]]]) -> list[str]:
    return [t for t, _ in topics]
