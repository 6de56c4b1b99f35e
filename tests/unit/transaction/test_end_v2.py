"""Transaction version 2 (KIP-890 part 2): EndTxn v5 bumps the epoch at every end, the markers
carry the bumped epoch, the answer gives the producer its next identity, and retries are told
by the epoch just before the current one (coordinator/transaction/end_v2.py)."""

from __future__ import annotations

import pytest

from coordinator.transaction import end_v2
from coordinator.transaction.records import TxnLogValue, decode_value, encode_value
from coordinator.transaction.states import State
from coordinator.transaction.txn import (
    EPOCH_MAX,
    TV2,
    EndAnswer,
    Marker,
    Result,
    TxnMetadata,
    add_partitions,
    complete,
    end_txn,
    expire,
    init_producer_id,
    markers_for,
    replay,
)

TID = "tx"
T0, T1 = ("t", 0), ("t", 1)
PID = 1000


class Coordinator:
    """Append (replay) what each operation returns, as the service does."""

    def __init__(self) -> None:
        self.txns: dict[str, TxnMetadata] = {}

    @property
    def txn(self) -> TxnMetadata:
        return self.txns[TID]

    def apply(self, result: Result) -> Result:
        for record in result.records:
            replay(self.txns, record)
        return result

    def init(self) -> None:
        self.apply(init_producer_id(self.txns.get(TID), TID, 60_000, -1, -1, PID, 10))

    def add(self, *tps: tuple[str, int], epoch: int | None = None, pid: int = PID) -> dict:
        epoch = self.txn.producer_epoch if epoch is None else epoch
        result = self.apply(add_partitions(self.txn, pid, epoch, tps, 20, txn_version=TV2))
        answer: dict = result.response
        return answer

    def end(self, commit: bool, epoch: int | None = None, pid: int = PID,
            new_pid: int = -1) -> Result:  # fmt: skip
        epoch = self.txn.producer_epoch if epoch is None else epoch
        return self.apply(end_v2.end_txn(self.txn, pid, epoch, commit, 30, new_pid))

    def finish(self) -> None:
        self.apply(complete(self.txn, 40))


@pytest.fixture
def c() -> Coordinator:
    coordinator = Coordinator()
    coordinator.init()  # producer 1000 at epoch 0, Empty
    return coordinator


@pytest.mark.parametrize("commit", [True, False])
def test_each_end_bumps_the_epoch_and_the_markers_carry_it(c: Coordinator, commit: bool) -> None:
    assert c.add(T0) == {T0: "NONE"}
    assert c.txn.client_txn_version == TV2
    result = c.end(commit)
    assert result.response == EndAnswer("NONE", PID, 1)
    assert result.write_markers and result.records[0].value is not None
    assert result.records[0].value.client_txn_version == TV2
    target = State.PREPARE_COMMIT if commit else State.PREPARE_ABORT
    assert (c.txn.state, c.txn.producer_epoch, c.txn.last_producer_epoch) == (target, 1, 0)
    assert markers_for(c.txn) == [Marker("t", 0, PID, 1, commit)]
    c.finish()
    assert (c.txn.producer_id, c.txn.producer_epoch) == (PID, 1)
    # the next transaction runs at the bumped epoch; the old one is fenced
    assert c.add(T1, epoch=0) == {T1: "PRODUCER_FENCED"}
    assert c.add(T1, epoch=1) == {T1: "NONE"}
    assert c.end(True).response == EndAnswer("NONE", PID, 2)


def test_tv1_end_keeps_the_epoch(c: Coordinator) -> None:
    c.add(T0)
    result = c.apply(end_txn(c.txn, PID, 0, True, 30))
    assert result.response == EndAnswer("NONE")
    assert c.txn.producer_epoch == 0 and markers_for(c.txn) == [Marker("t", 0, PID, 0, True)]
    assert result.records[0].value is not None and result.records[0].value.client_txn_version == 0


@pytest.mark.parametrize(
    ("commit", "answer"),
    [(True, EndAnswer("NONE", PID, 1)), (False, EndAnswer("INVALID_TXN_STATE"))],
)
def test_a_retry_after_the_end_is_answered_again(
    c: Coordinator, commit: bool, answer: EndAnswer
) -> None:
    c.add(T0)
    c.end(True)
    c.finish()
    retry = c.end(commit, epoch=0)  # the producer lost the answer: it still holds epoch 0
    assert (retry.response, retry.records) == (answer, [])


def test_while_the_markers_are_written(c: Coordinator) -> None:
    c.add(T0)
    c.end(False)
    assert c.end(False, epoch=0).response == EndAnswer("CONCURRENT_TRANSACTIONS")
    assert c.end(True, epoch=0).response == EndAnswer("INVALID_TXN_STATE")
    assert c.end(False, epoch=1).response == EndAnswer("PRODUCER_FENCED")
    # the producer's next transaction waits for the markers, whatever it sends
    assert c.add(T1, epoch=1) == {T1: "CONCURRENT_TRANSACTIONS"}


@pytest.mark.parametrize(
    ("before", "commit", "retry", "answer"),
    [  # Kafka's table for the states with nothing open (TransactionCoordinator.scala)
        ("Empty", False, True, "PRODUCER_FENCED"),
        ("Empty", False, False, "bump"),
        ("Empty", True, True, "PRODUCER_FENCED"),
        ("Empty", True, False, "INVALID_TXN_STATE"),
        ("CompleteAbort", False, True, "NONE"),
        ("CompleteAbort", False, False, "bump"),
        ("CompleteAbort", True, True, "INVALID_TXN_STATE"),
        ("CompleteAbort", True, False, "INVALID_TXN_STATE"),
        ("CompleteCommit", False, True, "INVALID_TXN_STATE"),
        ("CompleteCommit", False, False, "bump"),
        ("CompleteCommit", True, True, "NONE"),
        ("CompleteCommit", True, False, "INVALID_TXN_STATE"),
    ],
)
def test_ends_with_nothing_open(
    c: Coordinator, before: str, commit: bool, retry: bool, answer: str
) -> None:
    if before == "Empty":
        c.init()  # epoch 1, so that a retry (epoch 0) is possible
    else:
        c.add(T0)
        c.end(before == "CompleteCommit")
        c.finish()
    assert c.txn.state.value == before and c.txn.producer_epoch == 1
    result = c.end(commit, epoch=0 if retry else 1)
    if answer != "bump":
        assert result.records == [] and result.response.error == answer
        return
    # an abort with nothing open: an empty transaction, ended at once, fences the old epoch
    assert result.response == EndAnswer("NONE", PID, 2)
    assert (c.txn.state, c.txn.producer_epoch, c.txn.start_ms) == (State.PREPARE_ABORT, 2, 30)
    assert markers_for(c.txn) == []
    c.finish()
    assert (c.txn.state, c.txn.producer_epoch) == (State.COMPLETE_ABORT, 2)


def test_refusals(c: Coordinator) -> None:
    assert end_v2.end_txn(None, PID, 0, True, 0).response == EndAnswer(
        "INVALID_PRODUCER_ID_MAPPING"
    )
    c.add(T0)
    assert c.end(True, pid=5).response == EndAnswer("INVALID_PRODUCER_ID_MAPPING")
    assert c.end(True, epoch=3).response == EndAnswer("PRODUCER_FENCED")
    c.txn.pending = State.ONGOING
    assert c.end(True).response == EndAnswer("CONCURRENT_TRANSACTIONS")


def exhausted_ongoing() -> Coordinator:
    c = Coordinator()
    c.txns[TID] = TxnMetadata(TID, PID, EPOCH_MAX - 1, state=State.ONGOING,
                              partitions=frozenset({T0}), start_ms=5)  # fmt: skip
    return c


def test_an_exhausted_epoch_moves_to_a_new_producer_id() -> None:
    c = exhausted_ongoing()
    assert end_v2.exhausted(c.txn)
    result = c.end(True, new_pid=2000)
    assert result.response == EndAnswer("NONE", 2000, 0)
    # the markers go out at 32767, an epoch no producer ever holds
    assert markers_for(c.txn) == [Marker("t", 0, PID, EPOCH_MAX, True)]
    assert c.txn.next_producer_id == 2000
    # the new producer's first add waits for the markers instead of being refused
    assert c.add(T1, pid=2000, epoch=0) == {T1: "CONCURRENT_TRANSACTIONS"}
    c.finish()
    assert (c.txn.producer_id, c.txn.producer_epoch, c.txn.previous_producer_id) == (2000, 0, PID)
    assert c.txn.next_producer_id == -1
    # a retry with the old identity is answered with the new one
    retry = c.end(True, pid=PID, epoch=EPOCH_MAX - 1)
    assert (retry.response, retry.records) == (EndAnswer("NONE", 2000, 0), [])
    assert c.add(T1, pid=2000, epoch=0) == {T1: "NONE"}


def test_an_exhausted_epoch_without_a_new_id_is_retried() -> None:
    c = exhausted_ongoing()
    assert c.end(True).response == EndAnswer("CONCURRENT_TRANSACTIONS")
    assert c.txn.state is State.ONGOING


def test_the_version_and_next_id_survive_the_log() -> None:
    c = exhausted_ongoing()
    (record,) = c.end(False, new_pid=2000).records
    assert record.value is not None
    assert decode_value(encode_value(record.value)) == record.value
    loaded: dict[str, TxnMetadata] = {}
    replay(loaded, record, loading=True)
    assert (loaded[TID].client_txn_version, loaded[TID].next_producer_id) == (TV2, 2000)


def test_an_old_record_loads_as_transaction_version_0() -> None:
    old = TxnLogValue(PID, 3, 60_000, State.ONGOING, frozenset({T0}), 7, 5, version=0)
    loaded = decode_value(encode_value(old))
    assert loaded is not None and loaded.client_txn_version == 0


def test_a_timed_out_transaction_is_aborted_once_and_its_producer_told_so(c: Coordinator) -> None:
    """The timeout fences with one bump (Kafka's KAFKA-19367: not a second one for TV2); the
    producer's own abort, at the epoch it holds, is then a retry answered with the new epoch."""
    c.txns[TID].timeout_ms = 1000
    c.add(T0)  # starts at 20
    (fenced,) = expire(c.txns, 1021)
    c.apply(fenced)
    assert (c.txn.state, c.txn.producer_epoch) == (State.PREPARE_ABORT, 1)
    assert markers_for(c.txn) == [Marker("t", 0, PID, 1, False)]
    c.finish()
    answer = c.end(False, epoch=0)
    assert (answer.response, answer.records) == (EndAnswer("NONE", PID, 1), [])
    assert c.add(T0, epoch=0) == {T0: "PRODUCER_FENCED"}


def test_an_end_at_the_last_epoch_stays_there_and_moves_to_a_new_id() -> None:
    c = exhausted_ongoing()
    c.txns[TID].producer_epoch = EPOCH_MAX  # a fence bumped the exhausted epoch
    assert c.end(False, epoch=EPOCH_MAX, new_pid=2000).response == EndAnswer("NONE", 2000, 0)
    assert c.txn.producer_epoch == EPOCH_MAX
    c.finish()
    assert (c.txn.producer_id, c.txn.producer_epoch) == (2000, 0)
