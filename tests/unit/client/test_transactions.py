"""The transactional producer's state machine (client/transactions.py) as tables: which call
each state allows, where each state may go, how errors move it; and the coordinator calls'
retries on a manual clock, with a fake cluster (no sockets)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from client.transactions import (
    ALLOWED,
    TRANSITIONS,
    TransactionManager,
    TransactionStateError,
    TxnState,
    check_call,
)
from client.types import TopicPartition
from protocol.api.group import FindCoordinatorResponse
from protocol.api.producer_ids import InitProducerIdResponse
from protocol.api.txn import EndTxnResponse
from protocol.clock import ManualClock
from protocol.errors import (
    ConcurrentTransactionsError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NotCoordinatorError,
    ProducerFencedError,
    RequestTimedOutError,
)

S = TxnState
CALLS = list(ALLOWED)
# the states in which each call goes ahead; anything else raises at once
TABLE: dict[str, set[TxnState]] = {
    "init_transactions": {S.UNINITIALIZED},
    "begin_transaction": {S.READY},
    "send": {S.IN_TRANSACTION},
    "send_offsets_to_transaction": {S.IN_TRANSACTION},
    "prepare_transaction": {S.IN_TRANSACTION},  # KIP-939
    "complete_transaction": {S.PREPARED_TRANSACTION},
    "commit_transaction": {S.IN_TRANSACTION, S.PREPARED_TRANSACTION, S.COMMITTING},
    "abort_transaction": {S.IN_TRANSACTION, S.PREPARED_TRANSACTION, S.ABORTING, S.ABORTABLE_ERROR},
}


@pytest.mark.parametrize("state", list(TxnState))
@pytest.mark.parametrize("call", CALLS)
def test_each_call_is_allowed_only_in_its_states(state: TxnState, call: str) -> None:
    if state in TABLE[call]:
        check_call(state, call, "tid")
        return
    with pytest.raises(TransactionStateError, match=f"{call}\\(\\) in state {state.value}"):
        check_call(state, call, "tid")


def test_send_before_begin_and_commit_without_begin_say_what_to_do() -> None:
    with pytest.raises(TransactionStateError, match=r"'orders'.*begin_transaction"):
        check_call(S.READY, "send", "orders")
    with pytest.raises(TransactionStateError, match="init_transactions"):
        check_call(S.UNINITIALIZED, "commit_transaction", "orders")


def test_the_transitions_table() -> None:
    assert set(TRANSITIONS) == set(TxnState)
    assert TRANSITIONS[S.FENCED] == TRANSITIONS[S.FATAL_ERROR] == frozenset()
    reached, todo = {S.UNINITIALIZED}, [S.UNINITIALIZED]
    while todo:
        for nxt in TRANSITIONS[todo.pop()] - reached:
            reached.add(nxt)
            todo.append(nxt)
    assert reached == set(TxnState)
    # the happy paths
    for path in (
        [S.READY, S.IN_TRANSACTION, S.COMMITTING, S.READY],
        [S.READY, S.IN_TRANSACTION, S.ABORTING, S.READY],
        [S.IN_TRANSACTION, S.ABORTABLE_ERROR, S.ABORTING, S.INITIALIZING, S.READY],
    ):
        for a, b in itertools.pairwise(path):
            assert b in TRANSITIONS[a], (a, b)


# ----- the manager, with a fake cluster ---------------------------------------------------


@dataclass
class FakeConn:
    answers: list[Any]
    seen: list[Any] = field(default_factory=list)

    async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
        self.seen.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@dataclass
class FakeMeta:
    brokers: dict[int, Any] = field(default_factory=lambda: {1: object()})


class FakeCluster:
    def __init__(self, answers: list[Any]) -> None:
        self.conn = FakeConn(answers)
        self.metadata = FakeMeta()
        self.finds = 0

    async def send_to_any(self, request: Any, timeout_ms: Any = None, *, read: bool = False) -> Any:
        self.finds += 1
        return FindCoordinatorResponse(0, None, 1, "127.0.0.1", 1)

    async def connection(self, node: int) -> FakeConn:
        return self.conn

    async def request_update(self) -> Any:
        return self.metadata


def manager(answers: list[Any], max_block_ms: int = 1000) -> tuple[TransactionManager, Any]:
    clock = ManualClock()
    cluster = FakeCluster(answers)

    async def sleep(seconds: float) -> None:
        clock.advance(int(seconds * 1000))

    fake: Any = cluster  # the few Cluster members the manager uses
    txn = TransactionManager(fake, "orders", 60_000, clock, max_block_ms, 500, 100, sleep)
    return txn, cluster


async def test_retriable_coordinator_errors_are_retried_and_the_coordinator_found_again() -> None:
    txn, cluster = manager([
        InitProducerIdResponse(ConcurrentTransactionsError.code, -1, -1),
        InitProducerIdResponse(NotCoordinatorError.code, -1, -1),
        InitProducerIdResponse(0, 42, 3),
    ])  # fmt: skip
    assert await txn.init_producer_id() == (42, 3)
    assert cluster.finds == 3 and len(cluster.conn.seen) == 3


async def test_retries_stop_at_max_block_ms() -> None:
    busy = InitProducerIdResponse(ConcurrentTransactionsError.code, -1, -1)
    txn, cluster = manager([busy] * 50, max_block_ms=1000)
    with pytest.raises(RequestTimedOutError, match=r"max_block_ms=1000.*CONCURRENT"):
        await txn.init_producer_id()
    assert 5 <= len(cluster.conn.seen) <= 11  # every 100 ms for 1000 ms, never forever


async def test_fenced_names_the_id_and_is_final() -> None:
    txn, _ = manager([EndTxnResponse(ProducerFencedError.code)])
    txn.state, txn.producer_id, txn.producer_epoch = S.IN_TRANSACTION, 42, 3
    txn.added.add(TopicPartition("t", 0))
    txn.move(S.COMMITTING)
    with pytest.raises(ProducerFencedError) as raised:
        await txn.end_txn(commit=True)
    error = txn.fail(raised.value)
    assert txn.state is S.FENCED
    assert "'orders'" in str(error) and "newer producer" in str(error)
    for call in CALLS:
        with pytest.raises(ProducerFencedError, match="'orders'"):
            txn.check(call)


def test_errors_move_the_state_by_kind() -> None:
    txn, _ = manager([])
    txn.state = S.IN_TRANSACTION
    txn.fail(InvalidTxnStateError("refused"))
    assert txn.state is S.ABORTABLE_ERROR
    with pytest.raises(InvalidTxnStateError, match="can only be aborted"):
        txn.check("commit_transaction")
    txn.check("abort_transaction")
    txn.fail(InvalidProducerEpochError("an older epoch"))  # a leader saw a newer producer
    assert txn.state is S.FENCED
    txn2, _ = manager([])
    txn2.state = S.INITIALIZING
    txn2.fail(InvalidTxnStateError("refused"))
    assert txn2.state is S.FATAL_ERROR
