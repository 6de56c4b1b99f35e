"""ListTransactions: the transactional ids this broker coordinates, filtered by state names
(Kafka's, e.g. "Ongoing"; the unknown ones are answered back), producer ids, a minimum open
duration (KIP-994) and a regular expression the whole id must match (KIP-1152, Kafka 4.1: "" or
None lists all; one that does not compile is INVALID_REGULAR_EXPRESSION). An admin client asks
every broker and merges the answers (kafka-transactions.sh list). Only the ids the principal may
Describe are listed (Kafka hides the others; those denials are not logged). No transaction
coordinator here: COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import InvalidRegularExpressionError
from protocol.patterns import PatternError, compile_pattern

API = "ListTransactions"


@dataclass(frozen=True, slots=True)
class ListTransactions:
    states: tuple[str, ...] = ()
    producer_ids: tuple[int, ...] = ()
    duration_ms: int = -1  # >= 0: only transactions open longer than it
    id_pattern: str | None = None  # only the ids it matches whole ("" or None: all)


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
    pattern = None
    if req.id_pattern:
        try:
            pattern = compile_pattern(req.id_pattern)
        except PatternError:
            return ListTransactionsResult(InvalidRegularExpressionError.code)
    rows, unknown = ctx.transactions.list_transactions(
        req.states, req.producer_ids, req.duration_ms
    )
    if pattern is not None:
        rows = [r for r in rows if pattern.fullmatch(r.transactional_id)]
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TXN_ID,
                          (r.transactional_id for r in rows), api=API,
                          log_denied=False)  # fmt: skip
    return ListTransactionsResult(0, tuple(unknown), tuple(
        Listed(r.transactional_id, r.producer_id, r.state)
        for r in rows if r.transactional_id not in hidden
    ))  # fmt: skip
