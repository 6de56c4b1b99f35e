"""One transactional id's state and the pure operations of Kafka's transaction coordinator.

Each operation takes the id's `TxnMetadata` (None when the coordinator has none), the request's
fields and `now_ms`, and returns a `Result`: the records to append to `__transaction_state`,
the response, the state to mark the id `pending` with while they are appended, and whether
transaction markers must then be written. Operations change nothing: the service appends the
records, then `replay`s them (which is also how a coordinator loads its partition), then
answers. While an append is in flight the service sets `txn.pending` (Kafka's pendingState) and
every request for that id gets CONCURRENT_TRANSACTIONS; replay clears it.

A transaction (KIP-98): InitProducerId gives the producer an id and a bumped epoch (Empty);
AddPartitionsToTxn / AddOffsetsToTxn record the partitions it writes to (Ongoing); EndTxn
decides (PrepareCommit / PrepareAbort); the service writes a marker to each partition
(`markers_for`), then `complete` records CompleteCommit / CompleteAbort. A new producer's
InitProducerId, or the timeout (`expire`), fences an Ongoing transaction: its epoch is bumped
(PrepareEpochFence, never written on its own) and it is aborted with the bumped epoch.

KIP-360: InitProducerId may carry the producer's id and epoch to resume after an error; it is
fenced unless they are the current ones, or the last ones (a retry), or the previous id with
an exhausted epoch (a retry of a rotation). An epoch at 32766 rotates to a new producer id.

KIP-939 (two-phase commit), as modelled here: InitProducerId(enable_2pc) gives the id no
transaction timeout, written as a timeout of INT32_MAX as Kafka does, so a transaction outlives
its producer. A later InitProducerId(enable_2pc, keep_prepared_txn) does not abort an Ongoing
transaction: it keeps the transaction's producer id and epoch and records the new producer's
identity in NextProducerId / NextProducerEpoch (a bumped epoch, or a new id at exhaustion); the
answer carries both, so the client compares the ongoing ones with what its external store
kept, then commits or aborts with EndTxn under the new identity. A kept transaction takes no
new partitions. `complete` then moves the id to the new identity. There is no coordinator state
for "prepared": prepareTransaction is the client flushing, the coordinator sees Ongoing.

KIP-890: part 1's check (AddPartitionsToTxn v4 from a broker, `verify_only`) is here; part 2,
transaction version 2 (EndTxn v5: the epoch is bumped at every commit and abort), is in
end_v2.py. `end_txn` below is transaction version 1 (EndTxn v0-v4), where the epoch stays. A
transaction records the version of the client that opened or ended it (`client_txn_version`,
written in the log value), so that `complete` knows whether a TV2 end rotated the producer id.

Errors are Kafka's names (ERROR_CODES); the adapter turns a name into the code its request
version knows (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before InitProducerId v4 and
AddPartitionsToTxn/EndTxn v2, `error_code`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from coordinator.group.records import OFFSETS_TOPIC
from coordinator.group.records import partition_for as group_partition_for
from coordinator.transaction.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TP,
    TxnLogValue,
    TxnRecord,
)
from coordinator.transaction.states import TABLE, State, check_transition, kafka_name
from protocol.errors import (
    InvalidProducerEpochError,
    InvalidRequestError,
    TransactionalIdAuthorizationFailedError,
)

INT32_MAX = (1 << 31) - 1
TV2 = 2  # transaction.version 2 (KIP-890 part 2): EndTxn bumps the epoch
EPOCH_MAX = (1 << 15) - 1
TWO_PC_TIMEOUT_MS = INT32_MAX  # Kafka's mark of a 2PC id: no transaction timeout
TRANSACTIONAL_ID_EXPIRATION_MS = 7 * 24 * 3600 * 1000  # transactional.id.expiration.ms
MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms

# Kafka's codes; those protocol/errors.py lacks are written here as integers for now.
ERROR_CODES: dict[str, int] = {
    "NONE": 0,
    "INVALID_REQUEST": InvalidRequestError.code,
    "INVALID_PRODUCER_EPOCH": InvalidProducerEpochError.code,
    "INVALID_TXN_STATE": 48,
    "INVALID_PRODUCER_ID_MAPPING": 49,
    "INVALID_TRANSACTION_TIMEOUT": 50,
    "CONCURRENT_TRANSACTIONS": 51,
    "TRANSACTION_COORDINATOR_FENCED": 52,
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": TransactionalIdAuthorizationFailedError.code,
    "PRODUCER_FENCED": 90,
    "TRANSACTIONAL_ID_NOT_FOUND": 105,
}
NONE = "NONE"
CONCURRENT = "CONCURRENT_TRANSACTIONS"
FENCED = "PRODUCER_FENCED"
BAD_MAPPING = "INVALID_PRODUCER_ID_MAPPING"
BAD_STATE = "INVALID_TXN_STATE"


def error_code(name: str, knows_producer_fenced: bool = True) -> int:
    """The wire code for an error name; old request versions get INVALID_PRODUCER_EPOCH."""
    if name == FENCED and not knows_producer_fenced:
        name = "INVALID_PRODUCER_EPOCH"
    return ERROR_CODES[name]


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH  # KIP-360: the epoch before the last bump
    previous_producer_id: int = NO_PRODUCER_ID  # the id before the last change (a rotation)
    next_producer_id: int = NO_PRODUCER_ID  # KIP-939: the identity of the producer that
    next_producer_epoch: int = NO_PRODUCER_EPOCH  # kept this prepared transaction, or -1
    timeout_ms: int = 60_000
    state: State = State.EMPTY
    partitions: frozenset[TP] = frozenset()
    start_ms: int = -1
    last_update_ms: int = 0
    pending: State | None = None  # set by the service while this id's records are appended
    client_txn_version: int = 0  # transaction.version of the client's last add or end

    @property
    def enable_2pc(self) -> bool:
        """Initialised with enable_2pc (KIP-939): its transactions never time out."""
        return self.timeout_ms == TWO_PC_TIMEOUT_MS

    @property
    def kept(self) -> bool:
        """An Ongoing transaction kept by InitProducerId(keep_prepared_txn), awaiting EndTxn."""
        return self.next_producer_epoch != NO_PRODUCER_EPOCH

    @property
    def client_identity(self) -> tuple[int, int]:
        """The producer id and epoch the current producer holds."""
        if self.kept:
            return self.next_producer_id, self.next_producer_epoch
        return self.producer_id, self.producer_epoch


@dataclass(frozen=True, slots=True)
class InitAnswer:
    error: str
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    ongoing_txn_producer_id: int = NO_PRODUCER_ID  # KIP-939: the kept transaction's
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class EndAnswer:
    """EndTxn's answer; TV2 (EndTxn v5+) answers the producer's next id and epoch with NONE."""

    error: str
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class Marker:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    commit: bool


@dataclass(slots=True)
class Result:
    records: list[TxnRecord] = field(default_factory=list)
    response: Any = None
    pending: State | None = None  # mark the id with this while `records` are appended
    write_markers: bool = False  # after replay: write markers_for(txn), then complete()
    transactional_id: str = ""


# ----- records and replay ------------------------------------------------------------------


def to_record(target: TxnMetadata) -> TxnRecord:
    value = TxnLogValue(
        target.producer_id, target.producer_epoch, target.timeout_ms, target.state,
        target.partitions, target.last_update_ms, target.start_ms,
        target.previous_producer_id, target.next_producer_id, target.client_txn_version,
        target.next_producer_epoch,
    )  # fmt: skip
    return TxnRecord(target.transactional_id, value, target.last_producer_epoch)


def _move(txn: TxnMetadata, state: State, now_ms: int, **changes: Any) -> TxnRecord:
    """The record of `txn` moving to `state` (checked against the table) with `changes`."""
    check_transition(txn.state, state)
    changes.setdefault("previous_producer_id", txn.producer_id)
    target = replace(txn, state=state, last_update_ms=now_ms, pending=None, **changes)
    return to_record(target)


def replay(txns: dict[str, TxnMetadata], record: TxnRecord, loading: bool = False) -> None:
    """Apply an appended record. Live, every move must be in the table; `loading` a partition
    from its log skips the check (compaction may have removed the records in between)."""
    tid, value, old = record.transactional_id, record.value, txns.get(record.transactional_id)
    if value is None:
        if old is not None and not loading:
            check_transition(old.state, State.DEAD)
        txns.pop(tid, None)
        return
    if old is not None and not loading:
        check_transition(old.state, value.state)
    txns[tid] = TxnMetadata(
        tid, value.producer_id, value.producer_epoch, record.last_producer_epoch,
        value.previous_producer_id, value.next_producer_id, value.next_producer_epoch,
        value.timeout_ms, value.state, value.partitions, value.start_ms, value.last_update_ms,
        client_txn_version=value.client_txn_version,
    )  # fmt: skip


# ----- InitProducerId ----------------------------------------------------------------------


def _exhausted(epoch: int) -> bool:
    """Kafka never hands out epoch 32767, so a producer can always be fenced."""
    return epoch >= EPOCH_MAX - 1


NO_NEW_PRODUCER_ID = -1


def needs_new_producer_id(txn: TxnMetadata) -> bool:
    """Would InitProducerId for this id hand out a new producer id (an exhausted epoch)? The
    service allocates one beforehand only then (allocation may wait for ZooKeeper)."""
    return _exhausted(max(txn.producer_epoch, txn.next_producer_epoch))


def _allocate(new_producer_id: Callable[[], int] | int) -> int:
    return new_producer_id() if callable(new_producer_id) else new_producer_id


def _init_error(error: str) -> Result:
    return Result(response=InitAnswer(error))


def _init_refusal(
    txn: TxnMetadata | None, transactional_id: str, timeout_ms: int, expected: tuple[int, int],
    max_timeout_ms: int, enable_2pc: bool, keep_prepared_txn: bool, allow_2pc: bool,
) -> str | None:  # fmt: skip
    if not transactional_id or (expected[0] == NO_PRODUCER_ID) != (expected[1] < 0):
        return "INVALID_REQUEST"
    if enable_2pc and not allow_2pc:
        return "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    if keep_prepared_txn and (not enable_2pc or expected[0] != NO_PRODUCER_ID):
        return "INVALID_REQUEST"
    if not enable_2pc and not 0 < timeout_ms <= max_timeout_ms:
        return "INVALID_TRANSACTION_TIMEOUT"
    if txn is not None and txn.pending is not None:
        return CONCURRENT
    if txn is not None and expected[0] != NO_PRODUCER_ID and not _valid_expected(txn, *expected):
        return FENCED
    return None


def _valid_expected(txn: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360: a fresh id, the current id, or the previous id after an exhausted epoch."""
    return (
        txn.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == txn.producer_id
        or (producer_id == txn.previous_producer_id and _exhausted(epoch))
    )


def init_producer_id(
    txn: TxnMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    expected_producer_id: int,
    expected_epoch: int,
    new_producer_id: Callable[[], int] | int,
    now_ms: int,
    max_timeout_ms: int = MAX_TIMEOUT_MS,
    enable_2pc: bool = False,
    keep_prepared_txn: bool = False,
    allow_2pc: bool = True,
) -> Result:
    """InitProducerId with a transactional id. `new_producer_id` is called (or used) only when
    a new producer id is needed: a new transactional id, or an exhausted epoch."""
    expected = (expected_producer_id, expected_epoch)
    refusal = _init_refusal(txn, transactional_id, timeout_ms, expected, max_timeout_ms,
                            enable_2pc, keep_prepared_txn, allow_2pc)  # fmt: skip
    if refusal is not None:
        return _init_error(refusal)
    timeout_ms = TWO_PC_TIMEOUT_MS if enable_2pc else timeout_ms
    if txn is None:  # a new id is an Empty one with no epoch yet
        txn = TxnMetadata(transactional_id, _allocate(new_producer_id), last_update_ms=now_ms)
        expected = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    if txn.state in (State.PREPARE_COMMIT, State.PREPARE_ABORT):
        return _init_error(CONCURRENT)
    if txn.state is State.ONGOING:
        if keep_prepared_txn:
            return _keep_prepared(txn, new_producer_id, now_ms)
        result = fence(txn, now_ms)
        result.response = InitAnswer(CONCURRENT)  # the client retries once it is aborted
        return result
    assert TABLE[txn.state].expirable, txn.state  # Empty or Complete*: never Dead or fencing
    has_expected = expected[0] != NO_PRODUCER_ID
    if _exhausted(txn.producer_epoch) and (not has_expected or expected[1] == txn.producer_epoch):
        return _rotate(txn, _allocate(new_producer_id), timeout_ms, has_expected, now_ms)
    return _bump(txn, timeout_ms, expected[1] if has_expected else None, now_ms)


def _answer(record: TxnRecord, pending: State) -> Result:
    assert record.value is not None
    answer = InitAnswer(NONE, record.value.producer_id, record.value.producer_epoch)
    return Result([record], answer, pending, transactional_id=record.transactional_id)


def _bump(txn: TxnMetadata, timeout_ms: int, expected_epoch: int | None, now_ms: int) -> Result:
    """Kafka's prepareIncrementProducerEpoch: a bump, or a retry of the last one, or fenced."""
    epoch, last = txn.producer_epoch, txn.last_producer_epoch
    if expected_epoch is None:
        new_epoch, new_last = epoch + 1, NO_PRODUCER_EPOCH
    elif epoch == NO_PRODUCER_EPOCH or expected_epoch == epoch:
        new_epoch, new_last = epoch + 1, epoch
    elif expected_epoch == last:
        new_epoch, new_last = epoch, last  # a retry: the producer missed the answer
    else:
        return _init_error(FENCED)
    assert new_epoch < EPOCH_MAX, new_epoch
    record = _move(txn, State.EMPTY, now_ms, producer_epoch=new_epoch, last_producer_epoch=new_last,
                   timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1)  # fmt: skip
    return _answer(record, State.EMPTY)


def _rotate(txn: TxnMetadata, producer_id: int, timeout_ms: int, keep_last: bool,
            now_ms: int) -> Result:  # fmt: skip
    """Kafka's prepareProducerIdRotation: the epoch is exhausted, start a new id at epoch 0."""
    last = txn.producer_epoch if keep_last else NO_PRODUCER_EPOCH
    record = _move(txn, State.EMPTY, now_ms, producer_id=producer_id, producer_epoch=0,
                   last_producer_epoch=last, timeout_ms=timeout_ms, partitions=frozenset(),
                   start_ms=-1)  # fmt: skip
    return _answer(record, State.EMPTY)


def _keep_prepared(txn: TxnMetadata, new_producer_id: Callable[[], int] | int,
                   now_ms: int) -> Result:  # fmt: skip
    """KIP-939: keep the Ongoing transaction; the new producer gets the next identity."""
    pid, epoch = txn.client_identity
    if _exhausted(epoch):
        pid, epoch = _allocate(new_producer_id), 0
    else:
        epoch += 1
    record = _move(txn, State.ONGOING, now_ms, next_producer_id=pid, next_producer_epoch=epoch)
    answer = InitAnswer(NONE, pid, epoch, txn.producer_id, txn.producer_epoch)
    return Result([record], answer, State.ONGOING, transactional_id=txn.transactional_id)


def fence(txn: TxnMetadata, now_ms: int) -> Result:
    """Fence an Ongoing transaction's producer and abort it (Kafka's PrepareEpochFence, then
    PrepareAbort with the bumped epoch): one PrepareAbort record, then markers."""
    check_transition(txn.state, State.PREPARE_EPOCH_FENCE)
    epoch = max(txn.producer_epoch, txn.next_producer_epoch if txn.kept else -1)
    if txn.kept and txn.next_producer_id != txn.producer_id:
        epoch = txn.producer_epoch  # the kept producer moved to a new id: this one is free
    epoch = min(epoch + 1, EPOCH_MAX)  # Kafka does not bump past 32767
    fenced = replace(txn, state=State.PREPARE_EPOCH_FENCE)
    record = _move(fenced, State.PREPARE_ABORT, now_ms, producer_epoch=epoch,
                   next_producer_id=NO_PRODUCER_ID,
                   next_producer_epoch=NO_PRODUCER_EPOCH)  # fmt: skip
    return Result([record], None, State.PREPARE_EPOCH_FENCE, True, txn.transactional_id)


# ----- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------


def _ending(txn: TxnMetadata) -> bool:
    """An append in flight, or markers being written: the id takes no new work yet."""
    return txn.pending is not None or txn.state in (State.PREPARE_COMMIT, State.PREPARE_ABORT)


def _producer_error(txn: TxnMetadata | None, producer_id: int, epoch: int) -> str | None:
    """The checks every producer request passes first, in Kafka's order."""
    if txn is None or txn.client_identity[0] != producer_id:
        return BAD_MAPPING
    if txn.client_identity[1] != epoch:
        return FENCED
    if _ending(txn):
        return CONCURRENT
    return None


def add_partitions(
    txn: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    partitions: Iterable[TP],
    now_ms: int,
    verify_only: bool = False,
    txn_version: int = 0,
) -> Result:
    """AddPartitionsToTxn: the response maps each partition to an error name. `verify_only`
    (KIP-890 part 1, a broker checking a produce): no records, NONE for each partition in the
    ongoing transaction and INVALID_TXN_STATE for the others. `txn_version` is the client's
    transaction.version (2: a partition leader adds the partition of a Produce v12+, or a group
    coordinator the offsets partition of a TxnOffsetCommit v5+), recorded with the transaction.
    An end in progress answers CONCURRENT_TRANSACTIONS before the producer is checked, as Kafka
    4 does: after a TV2 end that rotated the producer id, the producer's next transaction
    comes with the new id before the coordinator has moved to it (KAFKA-18660)."""
    wanted = frozenset(partitions)
    error = _producer_error(txn, producer_id, epoch)
    if not verify_only and txn is not None and _ending(txn):
        error = CONCURRENT
    if error is None and txn is not None and txn.kept and not verify_only:
        error = BAD_STATE  # a prepared transaction kept for 2PC takes no new partitions
    if error is not None or txn is None:
        return Result(response=dict.fromkeys(wanted, error))
    if verify_only:
        ongoing = txn.partitions if txn.state is State.ONGOING else frozenset()
        return Result(response={tp: NONE if tp in ongoing else BAD_STATE for tp in wanted})
    answer = dict.fromkeys(wanted, NONE)
    if txn.state is State.ONGOING and wanted <= txn.partitions:
        return Result(response=answer)  # nothing new: no write
    start_ms = txn.start_ms if txn.state is State.ONGOING else now_ms
    record = _move(txn, State.ONGOING, now_ms, partitions=txn.partitions | wanted,
                   start_ms=start_ms, client_txn_version=txn_version)  # fmt: skip
    return Result([record], answer, State.ONGOING, transactional_id=txn.transactional_id)


def add_offsets(
    txn: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    group_id: str,
    n_offsets_partitions: int,
    now_ms: int,
) -> Result:
    """AddOffsetsToTxn: add the group's `__consumer_offsets` partition; the response is the
    error name."""
    tp = (OFFSETS_TOPIC, group_partition_for(group_id, n_offsets_partitions))
    result = add_partitions(txn, producer_id, epoch, [tp], now_ms)
    result.response = result.response[tp]
    return result


# ----- EndTxn and completion ---------------------------------------------------------------

# state -> (answer to commit, answer to abort) when EndTxn does not move the state
_END_ANSWERS: dict[State, tuple[str, str]] = {
    State.EMPTY: (BAD_STATE, BAD_STATE),
    State.PREPARE_COMMIT: (NONE, BAD_STATE),  # Kafka answers CONCURRENT_TRANSACTIONS here
    State.PREPARE_ABORT: (BAD_STATE, NONE),
    State.COMPLETE_COMMIT: (NONE, BAD_STATE),
    State.COMPLETE_ABORT: (BAD_STATE, NONE),
}


def end_txn(txn: TxnMetadata | None, producer_id: int, epoch: int, commit: bool,
            now_ms: int) -> Result:  # fmt: skip
    """EndTxn: Ongoing -> PrepareCommit / PrepareAbort (then markers, then `complete`). A retry
    of a decided EndTxn answers NONE; the opposite decision, or none open, INVALID_TXN_STATE."""
    error = _producer_error(txn, producer_id, epoch)
    if error == CONCURRENT and txn is not None and txn.pending is None:
        error = None  # Prepare*: a retry, answered from the table below
    if error is not None or txn is None:
        return Result(response=EndAnswer(error or BAD_MAPPING))
    if txn.state is not State.ONGOING:
        return Result(response=EndAnswer(_END_ANSWERS[txn.state][0 if commit else 1]))
    target = State.PREPARE_COMMIT if commit else State.PREPARE_ABORT
    record = _move(txn, target, now_ms, client_txn_version=0)
    return Result([record], EndAnswer(NONE), target, True, txn.transactional_id)


def rotates(txn: TxnMetadata) -> bool:
    """A TV2 end at an exhausted epoch: Complete* moves the id to `next_producer_id`."""
    return (txn.client_txn_version >= TV2 and not txn.kept
            and txn.next_producer_id != NO_PRODUCER_ID)  # fmt: skip


def markers_for(txn: TxnMetadata) -> list[Marker]:
    """The marker each partition of a decided transaction needs (none in other states)."""
    if txn.state not in (State.PREPARE_COMMIT, State.PREPARE_ABORT):
        return []
    commit = txn.state is State.PREPARE_COMMIT
    return [Marker(t, p, txn.producer_id, txn.producer_epoch, commit)
            for t, p in sorted(txn.partitions)]  # fmt: skip


def complete(txn: TxnMetadata, now_ms: int) -> Result:
    """Every marker is written: PrepareCommit -> CompleteCommit, PrepareAbort -> CompleteAbort.
    A transaction kept for 2PC hands the id over to the producer that completed it; a TV2 end
    that exhausted the epoch moves it to its next producer id, at epoch 0 (end_v2.py)."""
    assert txn.pending is None, txn.pending
    target = State.COMPLETE_COMMIT if txn.state is State.PREPARE_COMMIT else State.COMPLETE_ABORT
    pid, epoch = txn.client_identity
    if rotates(txn):
        pid, epoch = txn.next_producer_id, 0
    record = _move(txn, target, now_ms, producer_id=pid, producer_epoch=epoch,
                   next_producer_id=NO_PRODUCER_ID, next_producer_epoch=NO_PRODUCER_EPOCH,
                   partitions=frozenset())  # fmt: skip
    return Result([record], None, target, transactional_id=txn.transactional_id)


# ----- expiry ------------------------------------------------------------------------------


def expire(
    txns: Mapping[str, TxnMetadata],
    now_ms: int,
    expiration_ms: int = TRANSACTIONAL_ID_EXPIRATION_MS,
) -> list[Result]:
    """Kafka's abortTimedOutTransactions and removeExpiredTransactionalIds: an Ongoing
    transaction past its timeout is fenced and aborted (not 2PC ones: they have no timeout);
    an id idle past `expiration_ms` in Empty or Complete* gets a tombstone. Pending ids wait."""
    results = []
    for tid, txn in sorted(txns.items()):
        if txn.pending is not None:
            continue
        if txn.state is State.ONGOING and not txn.enable_2pc:
            if txn.start_ms + txn.timeout_ms < now_ms:
                results.append(fence(txn, now_ms))
        elif TABLE[txn.state].expirable and txn.last_update_ms + expiration_ms <= now_ms:
            check_transition(txn.state, State.DEAD)
            results.append(Result([TxnRecord(tid, None)], None, State.DEAD, transactional_id=tid))
    return results


# ----- DescribeTransactions / ListTransactions ---------------------------------------------


@dataclass(frozen=True, slots=True)
class TxnDescription:
    error: str
    transactional_id: str
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    topics: tuple[tuple[str, tuple[int, ...]], ...] = ()


def describe(txn: TxnMetadata | None, transactional_id: str = "") -> TxnDescription:
    """One DescribeTransactions row; TRANSACTIONAL_ID_NOT_FOUND for an unknown id."""
    if txn is None:
        return TxnDescription("TRANSACTIONAL_ID_NOT_FOUND", transactional_id)
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        topics.setdefault(topic, []).append(partition)
    return TxnDescription(
        NONE, txn.transactional_id, kafka_name(txn.state), txn.timeout_ms, txn.start_ms,
        txn.producer_id, txn.producer_epoch, tuple((t, tuple(p)) for t, p in topics.items()),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class TxnListing:
    transactional_id: str
    producer_id: int
    state: str


def list_filter(
    txns: Mapping[str, TxnMetadata],
    states: Iterable[str] = (),
    producer_ids: Iterable[int] = (),
    duration_filter_ms: int = -1,
    now_ms: int = 0,
) -> tuple[list[TxnListing], list[str]]:
    """ListTransactions: the ids matching every filter given (an empty filter matches all;
    `duration_filter_ms` >= 0 keeps transactions open longer than it, KIP-994), and the state
    filters that name no state (Kafka's UnknownStateFilters)."""
    wanted_states, wanted_pids = set(states), set(producer_ids)
    unknown = sorted(s for s in wanted_states if s not in {st.value for st in State})

    def matches(txn: TxnMetadata) -> bool:
        if wanted_states and kafka_name(txn.state) not in wanted_states:
            return False
        if wanted_pids and txn.producer_id not in wanted_pids:
            return False
        open_ms = now_ms - txn.start_ms if txn.start_ms >= 0 else -1
        return duration_filter_ms < 0 or open_ms > duration_filter_ms

    rows = [
        TxnListing(tid, txn.producer_id, kafka_name(txn.state))
        for tid, txn in sorted(txns.items())
        if matches(txn)
    ]
    return rows, unknown
