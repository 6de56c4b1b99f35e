"""ListTransactions: the transactional ids this broker coordinates, filtered by state names
(Kafka's, e.g. "Ongoing"; the unknown ones are answered back), producer ids and a minimum open
duration (KIP-994). An admin client asks every broker and merges the answers
(kafka-transactions.sh list). Only the ids the principal may Describe are listed (Kafka hides
the others; those denials are not logged). No transaction coordinator here:
COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session

API = "ListTransactions"


@dataclass(frozen=True, slots=True)
class ListTransactions:
    states: tuple[str, ...] = ()
    producer_ids: tuple[int, ...] = ()
    duration_ms: int = -1  # >= 0: only transactions open longer than it


@dataclass(frozen=True, slots=True)
class Listed:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ListTransactionsResult:
    error_code: int
    unknown_states: tuple[str, ...] = ()
    transactions: tuple[Listed, ...] = ()


def run(ctx: BrokerContext, session: Session, req: ListTransactions) -> ListTransactionsResult:
    rows, unknown = ctx.transactions.list_transactions(
        req.states, req.producer_ids, req.duration_ms
    )
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TXN_ID,
                          (r.transactional_id for r in rows), api=API,
                          log_denied=False)  # fmt: skip
    return ListTransactionsResult(0, tuple(unknown), tuple(
        Listed(r.transactional_id, r.producer_id, r.state)
        for r in rows if r.transactional_id not in hidden
    ))  # fmt: skip
