"""EndTxn under transaction version 2 (KIP-890 part 2, EndTxn v5+): the epoch is bumped at every
commit and abort, so that nothing late of one transaction (a batch, an AddPartitions, a marker)
can join the next one: the next transaction runs at a higher epoch, which every partition
learns from the marker.

The decision moves the id to PrepareCommit / PrepareAbort with the epoch bumped (`last_producer_
epoch` keeps the one the producer sent), and the markers carry the bumped epoch. The answer
gives the producer its next id and epoch. At an exhausted epoch (32766) the bump reaches 32767,
never handed out, and a new producer id is allocated beforehand (`next_producer_id`): the
answer gives it at epoch 0, and `complete` (txn.py) moves the id to it.

With the epoch moving at every end, "same state, same epoch" no longer tells a retry: a retry
is the epoch just before the current one (the answer was lost), or, after a rotation, the
previous id at the exhausted epoch. Kafka's table for the states with no transaction open
(PF: PRODUCER_FENCED, ITS: INVALID_TXN_STATE, NONE: answered again, no write, EB: an epoch bump,
an abort with no partitions that fences whatever the producer had in flight):

                     Abort            Commit
                     retry  current   retry  current
    Empty            PF     EB        PF     ITS
    CompleteAbort    NONE   EB        ITS    ITS
    CompleteCommit   ITS    EB        NONE   ITS

Ongoing takes the current epoch only; PrepareCommit / PrepareAbort take only a retry, answered
CONCURRENT_TRANSACTIONS (the markers are being written) or, for the other decision, ITS.
"""

from __future__ import annotations

from coordinator.transaction.records import NO_PRODUCER_ID
from coordinator.transaction.states import State
from coordinator.transaction.txn import (
    BAD_MAPPING,
    BAD_STATE,
    CONCURRENT,
    EPOCH_MAX,
    FENCED,
    NONE,
    TV2,
    EndAnswer,
    Result,
    TxnMetadata,
    _move,
)

NO_NEW_PRODUCER_ID = -1
_PREPARED = (State.PREPARE_COMMIT, State.PREPARE_ABORT)
_COMPLETE = (State.COMPLETE_COMMIT, State.COMPLETE_ABORT)


def exhausted(txn: TxnMetadata) -> bool:
    """Would a TV2 end of this id need a new producer id? The service allocates one beforehand
    only then (allocation may wait for ZooKeeper)."""
    return txn.producer_epoch >= EPOCH_MAX - 1


def _refusal(txn: TxnMetadata, producer_id: int, epoch: int) -> tuple[str | None, bool]:
    """The error in Kafka's order (id, epoch, pending), and whether the request is a retry."""
    on_overflow = (txn.previous_producer_id == producer_id and epoch == EPOCH_MAX - 1
                   and txn.producer_epoch == 0)  # fmt: skip
    on_bump = txn.producer_epoch == epoch + 1
    if txn.state in _PREPARED:
        valid = on_bump
    elif txn.state in _COMPLETE:
        valid = on_bump or on_overflow or epoch == txn.producer_epoch
    else:
        valid = epoch == txn.producer_epoch
    if txn.producer_id != producer_id and not on_overflow:
        return BAD_MAPPING, False
    if not valid:
        return FENCED, False
    if txn.pending is not None:
        return CONCURRENT, False
    return None, on_bump or on_overflow


def end_txn(
    txn: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    commit: bool,
    now_ms: int,
    new_producer_id: int = NO_NEW_PRODUCER_ID,
) -> Result:
    """EndTxn v5+. `new_producer_id` is used when the epoch is exhausted (`exhausted`)."""
    if txn is None:
        return Result(response=EndAnswer(BAD_MAPPING))
    if txn.kept:  # a 2PC transaction kept by InitProducerId: Kafka 4.2 ends it as TV1 does
        return Result(response=EndAnswer(BAD_STATE))
    error, retry = _refusal(txn, producer_id, epoch)
    if error is not None:
        return Result(response=EndAnswer(error))
    state = txn.state
    if state is State.ONGOING:
        target = State.PREPARE_COMMIT if commit else State.PREPARE_ABORT
        return _prepare(txn, target, now_ms, new_producer_id, opened=True)
    if state in _PREPARED:
        matches = (state is State.PREPARE_COMMIT) == commit
        return Result(response=EndAnswer(CONCURRENT if matches else BAD_STATE))
    if state in _COMPLETE and retry:
        if (state is State.COMPLETE_COMMIT) == commit:
            return Result(response=EndAnswer(NONE, txn.producer_id, txn.producer_epoch))
        return Result(response=EndAnswer(BAD_STATE))
    if commit:  # Empty, or a Complete* at the current epoch: nothing open to commit
        return Result(response=EndAnswer(BAD_STATE))
    return _prepare(txn, State.PREPARE_ABORT, now_ms, new_producer_id, opened=False)


def _prepare(
    txn: TxnMetadata, target: State, now_ms: int, new_producer_id: int, opened: bool
) -> Result:
    """Kafka's prepareAbortOrCommit at TV2: the epoch bumped, a new id ready at exhaustion. An
    abort with nothing open starts and ends an empty transaction now (its start time)."""
    next_id = NO_PRODUCER_ID
    if exhausted(txn):
        if new_producer_id < 0:  # the epoch moved while the service decided not to allocate
            return Result(response=EndAnswer(CONCURRENT))
        next_id = new_producer_id
    # 32767 already (a fence bumped an exhausted epoch, a timeout's abort): it stays there, and
    # the id moves to `next_id` at Complete* (Kafka's KAFKA-20090)
    epoch = min(txn.producer_epoch + 1, EPOCH_MAX)
    record = _move(txn, target, now_ms, producer_epoch=epoch,
                   last_producer_epoch=txn.producer_epoch, next_producer_id=next_id,
                   start_ms=txn.start_ms if opened else now_ms,
                   client_txn_version=TV2)  # fmt: skip
    answer = EndAnswer(NONE, txn.producer_id, epoch) if next_id < 0 else EndAnswer(NONE, next_id, 0)
    return Result([record], answer, target, True, txn.transactional_id)
