"""The transactional producer's side of KIP-98, as Kafka's TransactionManager: its states as a
table, the calls each state allows, and the requests to the coordinators.

A producer with a `transactional_id` first calls `init_transactions()`: FindCoordinator (key
type 1) finds the id's transaction coordinator, InitProducerId there gives the id's producer id
at a new epoch, which fences every older producer of the id and aborts its open transaction.
Then, per transaction: `begin_transaction()` (local), sends (the producer's sender adds each new
partition with AddPartitionsToTxn before it drains a batch to it, client/sender.py),
optionally `send_offsets_to_transaction()` (AddOffsetsToTxn at the transaction coordinator,
then TxnOffsetCommit at the group's coordinator), then `commit_transaction()` (flush, then
EndTxn commit) or `abort_transaction()` (queued batches dropped, then EndTxn abort).

Two-phase commit (KIP-939), for a transaction whose outcome another system decides: a producer
made with `enable_2pc=True` initialises its id with no transaction timeout, so an open
transaction outlives the producer. `prepare_transaction()` flushes and returns the transaction's
`PreparedTxnState` (producer id and epoch): the transaction is left open (Ongoing at the
coordinator), to be recorded by the deciding system. Later, any process with the same
transactional id calls `init_transactions(keep_prepared_txn=True)`: the open transaction is
kept (not aborted) and this producer takes it over (PreparedTransaction), with
`ongoing_transaction` saying which it is; `complete_transaction(state)` commits it when it is the
one `state` names and aborts it otherwise (or `commit_transaction()` / `abort_transaction()`).
A plain `init_transactions()` aborts it, as for any transactional id.

Errors: a call the state does not allow is a UsageError at once. PRODUCER_FENCED (or
INVALID_PRODUCER_EPOCH from a leader) means a newer producer took the id over: the producer
is Fenced for good, and every later call raises ProducerFencedError naming the id. A batch that
failed for good puts the transaction in AbortableError: commit raises, abort works. Retriable
coordinator errors (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
CONCURRENT_TRANSACTIONS, a lost connection) are retried after `retry_backoff_ms`, finding the
coordinator again, until `max_block_ms` has passed: then RequestTimedOutError, and the call may
be made again (a commit or abort that timed out is retried by calling it again).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from client.cluster import Cluster
from client.types import TopicPartition
from protocol.api.group import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from protocol.api.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.api.txn import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    TxnOffsetCommitPartition,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitTopic,
    TxnTopic,
)
from protocol.clock import Clock
from protocol.errors import (
    InvalidProducerEpochError,
    NetworkError,
    OdradekError,
    ProducerFencedError,
    RequestTimedOutError,
    UsageError,
    for_code,
)

NONE = 0


class TxnState(enum.Enum):
    """Kafka's TransactionManager states; where each may go is TRANSITIONS."""

    UNINITIALIZED = "Uninitialized"  # no producer id yet: init_transactions()
    INITIALIZING = "Initializing"  # InitProducerId under way -> Ready (or back, on a timeout)
    READY = "Ready"  # between transactions: begin_transaction()
    IN_TRANSACTION = "InTransaction"  # sends, offsets; then commit or abort
    COMMITTING = "Committing"  # flushing, then EndTxn commit -> Ready
    ABORTING = "Aborting"  # queued batches dropped, EndTxn abort -> Ready
    PREPARED_TRANSACTION = "PreparedTransaction"  # KIP-939: flushed and left open; decide it
    ABORTABLE_ERROR = "AbortableError"  # a batch failed for good: only abort is possible
    FENCED = "Fenced"  # a newer producer took the id over: terminal
    FATAL_ERROR = "FatalError"  # a refusal nothing can mend: terminal


S = TxnState
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    S.UNINITIALIZED: frozenset({S.INITIALIZING}),
    S.INITIALIZING: frozenset(
        {S.READY, S.PREPARED_TRANSACTION, S.UNINITIALIZED, S.FENCED, S.FATAL_ERROR}
    ),
    S.READY: frozenset({S.IN_TRANSACTION, S.INITIALIZING}),  # (re-init: an epoch bump)
    S.IN_TRANSACTION: frozenset(
        {S.COMMITTING, S.ABORTING, S.PREPARED_TRANSACTION, S.ABORTABLE_ERROR, S.FENCED}
        | {S.FATAL_ERROR}
    ),
    S.PREPARED_TRANSACTION: frozenset(
        {S.COMMITTING, S.ABORTING, S.ABORTABLE_ERROR, S.FENCED, S.FATAL_ERROR}
    ),
    S.COMMITTING: frozenset({S.READY, S.ABORTABLE_ERROR, S.FENCED, S.FATAL_ERROR}),
    S.ABORTING: frozenset({S.READY, S.INITIALIZING, S.FENCED, S.FATAL_ERROR}),
    S.ABORTABLE_ERROR: frozenset({S.ABORTING, S.FENCED, S.FATAL_ERROR}),
    S.FENCED: frozenset(),
    S.FATAL_ERROR: frozenset(),
}

# the states each call may be made in (a commit or abort that timed out is called again)
ALLOWED: dict[str, frozenset[TxnState]] = {
    "init_transactions": frozenset({S.UNINITIALIZED}),
    "begin_transaction": frozenset({S.READY}),
    "send": frozenset({S.IN_TRANSACTION}),
    "send_offsets_to_transaction": frozenset({S.IN_TRANSACTION}),
    "prepare_transaction": frozenset({S.IN_TRANSACTION}),
    "complete_transaction": frozenset({S.PREPARED_TRANSACTION}),
    "commit_transaction": frozenset({S.IN_TRANSACTION, S.PREPARED_TRANSACTION, S.COMMITTING}),
    "abort_transaction": frozenset(
        {S.IN_TRANSACTION, S.PREPARED_TRANSACTION, S.ABORTING, S.ABORTABLE_ERROR}
    ),
}

_HINT: dict[TxnState, str] = {
    S.UNINITIALIZED: "call init_transactions() first",
    S.INITIALIZING: "init_transactions() has not finished",
    S.READY: "call begin_transaction() first",
    S.IN_TRANSACTION: "a transaction is open: commit or abort it first",
    S.COMMITTING: "the transaction is being committed",
    S.ABORTING: "the transaction is being aborted",
    S.PREPARED_TRANSACTION: "the transaction is prepared: commit, abort or complete it",
    S.ABORTABLE_ERROR: "the transaction failed: call abort_transaction()",
    S.FENCED: "a newer producer took the id over: close this one",
    S.FATAL_ERROR: "the producer failed for good: close it",
}


class TransactionAbortedError(OdradekError):
    """A record's batch was dropped unsent because its transaction was aborted."""

    name = "TRANSACTION_ABORTED"
    default_message = "The transaction was aborted before this record was sent."


@dataclass(frozen=True, slots=True)
class PreparedTxnState:
    """KIP-939: which prepared transaction this is (its producer id and epoch), to be kept by
    the system that decides it and handed back to `complete_transaction`."""

    producer_id: int
    epoch: int


class TransactionStateError(UsageError):
    """A transactional call made in a state that does not allow it (e.g. send before begin)."""


def check_transition(old: TxnState, new: TxnState) -> None:
    if new not in TRANSITIONS[old]:
        raise AssertionError(f"transaction state {old.value} cannot go to {new.value}")


def check_call(state: TxnState, call: str, tid: str, cause: OdradekError | None = None) -> None:
    """Raise unless `call` is allowed in `state`: the fenced or fatal cause again, else a
    TransactionStateError saying what to do (a commit in AbortableError raises its cause)."""
    if state in ALLOWED[call]:
        return
    if state in (S.FENCED, S.FATAL_ERROR) and cause is not None:
        raise cause
    if state is S.ABORTABLE_ERROR and call == "commit_transaction" and cause is not None:
        raise type(cause)(f"{cause.message}; the transaction can only be aborted")
    raise TransactionStateError(
        f"transactional id {tid!r}: {call}() in state {state.value}: {_HINT[state]}"
    )


def fenced_error(tid: str, producer_id: int, epoch: int) -> ProducerFencedError:
    return ProducerFencedError(
        f"transactional id {tid!r}: a newer producer with the same transactional id took it "
        f"over (this one, producer id {producer_id} epoch {epoch}, is fenced); close it"
    )


class TransactionManager:
    """One transactional producer's state and its coordinator requests (see the module
    docstring). `clock` and `sleep` are injected (tests run the retries on a manual clock)."""

    def __init__(
        self, cluster: Cluster, transactional_id: str, transaction_timeout_ms: int,
        clock: Clock, max_block_ms: int, request_timeout_ms: int, retry_backoff_ms: int,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep, enable_2pc: bool = False,
    ) -> None:  # fmt: skip
        if not transactional_id:
            raise UsageError("transactional_id must be a non-empty string")
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.clock = clock
        self.max_block_ms = max_block_ms
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.sleep = sleep
        self.enable_2pc = enable_2pc
        self.state = S.UNINITIALIZED
        self.cause: OdradekError | None = None  # why AbortableError, Fenced or FatalError
        self.producer_id = -1
        self.producer_epoch = -1
        self.added: set[TopicPartition] = set()  # partitions of the open transaction
        self.offsets_added = False  # AddOffsetsToTxn was sent in this transaction
        self.ongoing: PreparedTxnState | None = None  # KIP-939: the transaction kept on init
        self._coordinators: dict[tuple[int, str], int] = {}  # (key type, key) -> node

    # ----- state --------------------------------------------------------------------------------

    def move(self, new: TxnState) -> None:
        check_transition(self.state, new)
        self.state = new

    def check(self, call: str) -> None:
        check_call(self.state, call, self.transactional_id, self.cause)

    def fail(self, error: OdradekError) -> OdradekError:
        """An error met in a transaction: Fenced for a fencing one, FatalError for one that
        is not retriable outside a transaction, else AbortableError. Returns what to raise."""
        if isinstance(error, ProducerFencedError | InvalidProducerEpochError):
            error = fenced_error(self.transactional_id, self.producer_id, self.producer_epoch)
            new = S.FENCED
        elif self.state in (S.INITIALIZING, S.ABORTING) and not error.retriable:
            new = S.FATAL_ERROR
        else:
            new = S.ABORTABLE_ERROR
        if self.state not in (S.FENCED, S.FATAL_ERROR) and new in TRANSITIONS[self.state]:
            self.state, self.cause = new, error
        return error

    def begin(self) -> None:
        self.check("begin_transaction")
        self.move(S.IN_TRANSACTION)
        self.added.clear()  # (the accumulator holds this set: cleared, never replaced)
        self.offsets_added = False

    # ----- requests -----------------------------------------------------------------------------

    async def init_producer_id(self, keep_prepared_txn: bool = False) -> tuple[int, int]:
        """InitProducerId at the coordinator: (producer id, epoch). A first init asks for the
        id's current producer at a new epoch; a later one (after an abort that lost a sequence)
        bumps our own epoch (KIP-360). `keep_prepared_txn` (KIP-939, a first init with
        enable_2pc): an open transaction is kept, and named in `ongoing`."""
        if keep_prepared_txn and not self.enable_2pc:
            raise UsageError("keep_prepared_txn needs a producer made with enable_2pc=True")
        request = InitProducerIdRequest(
            self.transactional_id, self.transaction_timeout_ms, self.producer_id,
            self.producer_epoch, self.enable_2pc, keep_prepared_txn,
        )  # fmt: skip
        resp: InitProducerIdResponse = await self._call(
            TRANSACTION_KEY_TYPE, self.transactional_id, lambda: request, lambda r: r.error_code
        )
        self.producer_id, self.producer_epoch = resp.producer_id, resp.producer_epoch
        self.ongoing = None
        if keep_prepared_txn and resp.ongoing_txn_producer_id >= 0:
            self.ongoing = PreparedTxnState(
                resp.ongoing_txn_producer_id, resp.ongoing_txn_producer_epoch
            )
        return resp.producer_id, resp.producer_epoch

    async def add_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """AddPartitionsToTxn for partitions new in the transaction; they join `added`."""
        wanted = sorted(set(tps) - self.added)
        if not wanted:
            return
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = AddPartitionsToTxnRequest(
            self.transactional_id, self.producer_id, self.producer_epoch,
            [TxnTopic(t, ps) for t, ps in by_topic.items()],
        )  # fmt: skip

        def code(resp: AddPartitionsToTxnResponse) -> int:
            codes = [p.error_code for t in resp.topics for p in t.partitions]
            return next((c for c in codes if c != NONE), NONE)

        await self._call(TRANSACTION_KEY_TYPE, self.transactional_id, lambda: request, code)
        self.added.update(wanted)

    async def add_offsets(
        self, offsets: dict[TopicPartition, int], group_id: str, generation_id: int = -1,
        member_id: str = "",
    ) -> None:  # fmt: skip
        """AddOffsetsToTxn at the transaction coordinator, then TxnOffsetCommit at the group's
        coordinator: the offsets count for the group only once the transaction commits."""
        tid, pid, epoch = self.transactional_id, self.producer_id, self.producer_epoch
        add = AddOffsetsToTxnRequest(tid, pid, epoch, group_id)
        await self._call(TRANSACTION_KEY_TYPE, tid, lambda: add, lambda r: r.error_code)
        self.offsets_added = True
        by_topic: dict[str, list[TxnOffsetCommitPartition]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(TxnOffsetCommitPartition(tp.partition, offset))
        commit = TxnOffsetCommitRequest(
            tid, group_id, pid, epoch, [TxnOffsetCommitTopic(t, ps) for t, ps in by_topic.items()],
            generation_id, member_id,
        )  # fmt: skip

        def code(resp: TxnOffsetCommitResponse) -> int:
            codes = [p.error_code for t in resp.topics for p in t.partitions]
            return next((c for c in codes if c != NONE), NONE)

        await self._call(GROUP_KEY_TYPE, group_id, lambda: commit, code)

    async def end_txn(self, commit: bool) -> None:
        """EndTxn, when the transaction wrote anything or is a kept one (else there is nothing
        to end)."""
        if self.added or self.offsets_added or self.ongoing is not None:
            request = EndTxnRequest(self.transactional_id, self.producer_id,
                                    self.producer_epoch, commit)  # fmt: skip
            await self._call(TRANSACTION_KEY_TYPE, self.transactional_id, lambda: request,
                             lambda r: r.error_code)  # fmt: skip
        self.added.clear()
        self.offsets_added = False
        self.ongoing = None

    # ----- the coordinator call, retried --------------------------------------------------------

    async def _call(
        self, key_type: int, key: str, build: Callable[[], Any], code_of: Callable[[Any], int]
    ) -> Any:
        """Send to the coordinator of `key`, finding it first; retriable failures are retried
        after retry_backoff_ms (finding it again) until max_block_ms has passed."""
        api = type(build()).__name__.removesuffix("Request")
        deadline = self.clock.monotonic_ms() + self.max_block_ms
        while True:
            try:
                node = await self._coordinator(key_type, key)
                conn = await self.cluster.connection(node)
                resp = await conn.send(build(), self.request_timeout_ms)
                code, error = code_of(resp), None
            except OdradekError as exc:
                if not exc.retriable and not isinstance(exc, NetworkError):
                    raise
                resp, code, error = None, exc.code, exc
            if code == NONE:
                return resp
            cls = for_code(code)
            if error is None and not cls.retriable:
                raise cls(f"{api} for transactional id {self.transactional_id!r} refused")
            self._coordinators.pop((key_type, key), None)  # find it again
            if self.clock.monotonic_ms() + self.retry_backoff_ms >= deadline:
                last = error or cls()
                raise RequestTimedOutError(
                    f"{api} for transactional id {self.transactional_id!r} did not succeed "
                    f"within max_block_ms={self.max_block_ms} (last error: {last})"
                )
            await self.sleep(self.retry_backoff_ms / 1000)

    async def _coordinator(self, key_type: int, key: str) -> int:
        node = self._coordinators.get((key_type, key))
        if node is not None and node in self.cluster.metadata.brokers:
            return node
        resp: FindCoordinatorResponse = await self.cluster.send_to_any(
            FindCoordinatorRequest(key, key_type), self.request_timeout_ms, read=True
        )
        if resp.error_code != NONE:
            raise for_code(resp.error_code)(resp.error_message or f"no coordinator for {key!r}")
        if resp.node_id not in self.cluster.metadata.brokers:
            await self.cluster.request_update()
        self._coordinators[(key_type, key)] = resp.node_id
        return resp.node_id
