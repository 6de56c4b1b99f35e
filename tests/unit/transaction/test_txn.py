"""The transaction coordinator's pure operations: each accepted and refused case, replay."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from coordinator.group.records import OFFSETS_TOPIC
from coordinator.group.records import partition_for as group_partition_for
from coordinator.transaction.records import TxnRecord
from coordinator.transaction.states import State
from coordinator.transaction.txn import (
    EPOCH_MAX,
    TWO_PC_TIMEOUT_MS,
    InitAnswer,
    Marker,
    Result,
    TxnMetadata,
    add_offsets,
    add_partitions,
    complete,
    describe,
    end_txn,
    error_code,
    expire,
    init_producer_id,
    list_filter,
    markers_for,
    replay,
    to_record,
)

TID = "tx"
T0 = ("t", 0)
T1 = ("t", 1)


class Coordinator:
    """The service's part, in memory: mark pending, append (a list), replay, answer."""

    def __init__(self) -> None:
        self.txns: dict[str, TxnMetadata] = {}
        self.log: list = []
        self.ids = itertools.count(1000)

    @property
    def txn(self) -> TxnMetadata:
        return self.txns[TID]

    def apply(self, result: Result) -> Result:
        if result.records:
            tid = result.records[0].transactional_id
            if tid in self.txns:
                self.txns[tid].pending = result.pending
            for record in result.records:
                self.log.append(record)
                replay(self.txns, record)
        return result

    def init(self, **kw: object) -> InitAnswer:
        args: dict = dict(timeout_ms=60_000, expected_producer_id=-1, expected_epoch=-1,
                          new_producer_id=lambda: next(self.ids), now_ms=10)  # fmt: skip
        args.update(kw)
        result = self.apply(init_producer_id(self.txns.get(TID), TID, **args))
        if result.write_markers:
            self.apply(complete(self.txn, 11))
        assert isinstance(result.response, InitAnswer)
        return result.response

    def add(self, *tps: tuple[str, int], pid: int | None = None, epoch: int | None = None) -> dict:
        txn = self.txns.get(TID)
        pid = txn.client_identity[0] if pid is None and txn else pid
        epoch = txn.client_identity[1] if epoch is None and txn else epoch
        response: dict = self.apply(add_partitions(txn, pid or 0, epoch or 0, tps, 20)).response
        return response

    def end(self, commit: bool, finish: bool = True) -> str:
        pid, epoch = self.txn.client_identity
        result = self.apply(end_txn(self.txn, pid, epoch, commit, 30))
        if result.write_markers and finish:
            self.apply(complete(self.txn, 40))
        return str(result.response.error)


@pytest.fixture
def c() -> Coordinator:
    return Coordinator()


# ----- InitProducerId ----------------------------------------------------------------------


def test_first_init(c: Coordinator) -> None:
    assert c.init() == InitAnswer("NONE", 1000, 0)
    txn = c.txn
    assert (txn.state, txn.producer_epoch, txn.timeout_ms, txn.last_update_ms) == (
        State.EMPTY, 0, 60_000, 10)  # fmt: skip
    assert len(c.log) == 1


def test_pre_allocated_id(c: Coordinator) -> None:
    assert c.init(new_producer_id=7) == InitAnswer("NONE", 7, 0)


def test_init_again_bumps_epoch(c: Coordinator) -> None:
    c.init()
    assert c.init(timeout_ms=5000) == InitAnswer("NONE", 1000, 1)
    assert (c.txn.last_producer_epoch, c.txn.timeout_ms) == (-1, 5000)


def test_kip360_resume_and_retry(c: Coordinator) -> None:
    c.init()
    assert c.init(expected_producer_id=1000, expected_epoch=0) == InitAnswer("NONE", 1000, 1)
    assert c.txn.last_producer_epoch == 0
    # a retry of that call (the answer was lost) gets the same epoch
    assert c.init(expected_producer_id=1000, expected_epoch=0) == InitAnswer("NONE", 1000, 1)


@pytest.mark.parametrize("pid,epoch", [(1000, 5), (999, 0)])
def test_kip360_fenced(c: Coordinator, pid: int, epoch: int) -> None:
    c.init()
    c.init()
    assert c.init(expected_producer_id=pid, expected_epoch=epoch).error == "PRODUCER_FENCED"


@pytest.mark.parametrize("pid,epoch", [(-1, 3), (1000, -1)])
def test_half_an_expected_identity(c: Coordinator, pid: int, epoch: int) -> None:
    assert c.init(expected_producer_id=pid, expected_epoch=epoch).error == "INVALID_REQUEST"


def test_empty_transactional_id() -> None:
    result = init_producer_id(None, "", 1000, -1, -1, 1, 0)
    assert result.response.error == "INVALID_REQUEST" and not result.records


@pytest.mark.parametrize("timeout_ms", [0, -5, 900_001])
def test_invalid_timeout(c: Coordinator, timeout_ms: int) -> None:
    assert c.init(timeout_ms=timeout_ms).error == "INVALID_TRANSACTION_TIMEOUT"
    assert TID not in c.txns


def test_exhausted_epoch_rotates(c: Coordinator) -> None:
    c.init()
    c.apply(Result([_with_epoch(c.txn, EPOCH_MAX - 1)]))
    assert c.init() == InitAnswer("NONE", 1001, 0)
    assert c.txn.previous_producer_id == 1000


def test_rotation_retry_with_previous_id(c: Coordinator) -> None:
    c.init()
    c.apply(Result([_with_epoch(c.txn, EPOCH_MAX - 1)]))
    resume = dict(expected_producer_id=1000, expected_epoch=EPOCH_MAX - 1)
    assert c.init(**resume) == InitAnswer("NONE", 1001, 0)
    assert c.init(**resume) == InitAnswer("NONE", 1001, 0)  # the retry


def _with_epoch(txn: TxnMetadata, epoch: int) -> TxnRecord:
    """The id at `epoch` (a record no operation writes: reaching it takes 32k bumps)."""
    return to_record(replace(txn, producer_epoch=epoch))


def test_init_fences_an_ongoing_transaction(c: Coordinator) -> None:
    c.init()
    c.add(T0)
    result = init_producer_id(c.txn, TID, 60_000, -1, -1, 5, 50)
    assert result.response == InitAnswer("CONCURRENT_TRANSACTIONS")
    assert result.pending is State.PREPARE_EPOCH_FENCE and result.write_markers
    c.apply(result)
    assert (c.txn.state, c.txn.producer_epoch) == (State.PREPARE_ABORT, 1)
    assert markers_for(c.txn) == [Marker("t", 0, 1000, 1, False)]
    c.apply(complete(c.txn, 60))
    assert c.txn.state is State.COMPLETE_ABORT
    assert c.init() == InitAnswer("NONE", 1000, 2)  # the client's retry


@pytest.mark.parametrize("commit", [True, False])
def test_init_while_preparing(c: Coordinator, commit: bool) -> None:
    c.init()
    c.add(T0)
    c.end(commit, finish=False)
    assert c.init().error == "CONCURRENT_TRANSACTIONS"


def test_pending_refuses_everything(c: Coordinator) -> None:
    c.init()
    c.txn.pending = State.EMPTY
    assert c.init().error == "CONCURRENT_TRANSACTIONS"
    assert c.add(T0) == {T0: "CONCURRENT_TRANSACTIONS"}
    assert end_txn(c.txn, 1000, 0, True, 0).response.error == "CONCURRENT_TRANSACTIONS"
    assert expire(c.txns, 10**15) == []


# ----- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------


def test_add_partitions_opens_and_extends(c: Coordinator) -> None:
    c.init()
    assert c.add(T0) == {T0: "NONE"}
    assert (c.txn.state, c.txn.partitions, c.txn.start_ms) == (State.ONGOING, {T0}, 20)
    result = add_partitions(c.txn, 1000, 0, [T1], 25)
    c.apply(result)
    assert (c.txn.partitions, c.txn.start_ms, c.txn.last_update_ms) == ({T0, T1}, 20, 25)


def test_add_known_partitions_writes_nothing(c: Coordinator) -> None:
    c.init()
    c.add(T0, T1)
    result = add_partitions(c.txn, 1000, 0, [T0], 30)
    assert result.records == [] and result.response == {T0: "NONE"}


def test_add_partitions_refusals(c: Coordinator) -> None:
    assert c.add(T0, pid=1, epoch=0) == {T0: "INVALID_PRODUCER_ID_MAPPING"}  # unknown id
    c.init()
    c.init()
    assert c.add(T0, pid=999) == {T0: "INVALID_PRODUCER_ID_MAPPING"}
    assert c.add(T0, epoch=0) == {T0: "PRODUCER_FENCED"}
    c.add(T0)
    c.end(True, finish=False)
    assert c.add(T1) == {T1: "CONCURRENT_TRANSACTIONS"}


def test_add_after_complete_opens_the_next(c: Coordinator) -> None:
    c.init()
    c.add(T0)
    c.end(True)
    c.add(T1)
    assert (c.txn.state, c.txn.partitions) == (State.ONGOING, {T1})


def test_verify_only(c: Coordinator) -> None:
    c.init()
    c.add(T0)
    result = add_partitions(c.txn, 1000, 0, [T0, T1], 30, verify_only=True)
    assert result.records == []
    assert result.response == {T0: "NONE", T1: "INVALID_TXN_STATE"}
    assert add_partitions(c.txn, 1000, 9, [T0], 30, True).response == {T0: "PRODUCER_FENCED"}


def test_add_offsets(c: Coordinator) -> None:
    c.init()
    result = c.apply(add_offsets(c.txn, 1000, 0, "g", 50, 30))
    assert result.response == "NONE"
    assert c.txn.partitions == {(OFFSETS_TOPIC, group_partition_for("g", 50))}
    assert add_offsets(c.txn, 1000, 7, "g", 50, 30).response == "PRODUCER_FENCED"


# ----- EndTxn ------------------------------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_end_and_complete(c: Coordinator, commit: bool) -> None:
    c.init()
    c.add(T1, T0)
    assert c.end(commit, finish=False) == "NONE"
    assert c.txn.state is (State.PREPARE_COMMIT if commit else State.PREPARE_ABORT)
    assert markers_for(c.txn) == [Marker("t", 0, 1000, 0, commit), Marker("t", 1, 1000, 0, commit)]
    c.apply(complete(c.txn, 50))
    assert c.txn.state is (State.COMPLETE_COMMIT if commit else State.COMPLETE_ABORT)
    assert (c.txn.partitions, markers_for(c.txn)) == (frozenset(), [])


@pytest.mark.parametrize(
    "finish,commit,retry,answer",
    [
        (False, True, True, "NONE"),
        (False, True, False, "INVALID_TXN_STATE"),
        (False, False, False, "NONE"),
        (False, False, True, "INVALID_TXN_STATE"),
        (True, True, True, "NONE"),
        (True, True, False, "INVALID_TXN_STATE"),
        (True, False, False, "NONE"),
        (True, False, True, "INVALID_TXN_STATE"),
    ],
)
def test_end_retries(c: Coordinator, finish: bool, commit: bool, retry: bool, answer: str) -> None:
    c.init()
    c.add(T0)
    c.end(commit, finish=finish)
    result = end_txn(c.txn, 1000, 0, retry, 60)
    assert (result.response.error, result.records) == (answer, [])


def test_end_refusals(c: Coordinator) -> None:
    assert end_txn(None, 1, 0, True, 0).response.error == "INVALID_PRODUCER_ID_MAPPING"
    c.init()
    assert c.end(True) == "INVALID_TXN_STATE"  # Empty: nothing open
    c.add(T0)
    assert end_txn(c.txn, 1000, 3, True, 0).response.error == "PRODUCER_FENCED"
    assert end_txn(c.txn, 5, 0, True, 0).response.error == "INVALID_PRODUCER_ID_MAPPING"


# ----- expiry ------------------------------------------------------------------------------


def test_timed_out_transaction_is_aborted(c: Coordinator) -> None:
    c.init(timeout_ms=1000)
    c.add(T0)  # start 20
    assert expire(c.txns, 1020) == []
    (result,) = expire(c.txns, 1021)
    assert result.pending is State.PREPARE_EPOCH_FENCE and result.write_markers
    c.apply(result)
    assert (c.txn.state, c.txn.producer_epoch) == (State.PREPARE_ABORT, 1)
    # Kafka 4 answers an end in progress first (KAFKA-18660), then the fence once it is over
    assert c.add(T1, epoch=0) == {T1: "CONCURRENT_TRANSACTIONS"}
    c.apply(complete(c.txn, 1030))
    assert c.add(T1, epoch=0) == {T1: "PRODUCER_FENCED"}


def test_idle_id_is_removed(c: Coordinator) -> None:
    c.init()  # last update 10
    assert expire(c.txns, 10 + 7 * 86_400_000 - 1) == []
    (result,) = expire(c.txns, 10 + 7 * 86_400_000)
    assert result.records[0].value is None and result.pending is State.DEAD
    c.apply(result)
    assert c.txns == {}


def test_ongoing_is_not_removed_however_idle(c: Coordinator) -> None:
    c.init(enable_2pc=True)
    c.add(T0)
    assert expire(c.txns, 10**15) == []  # 2PC: no timeout, and Ongoing never expires


# ----- KIP-939 -----------------------------------------------------------------------------


def test_enable_2pc_has_no_timeout(c: Coordinator) -> None:
    assert c.init(enable_2pc=True, timeout_ms=0).error == "NONE"
    assert c.txn.enable_2pc and c.txn.timeout_ms == TWO_PC_TIMEOUT_MS
    refused = Coordinator().init(enable_2pc=True, allow_2pc=False)
    assert refused.error == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


@pytest.mark.parametrize("kw", [{"enable_2pc": False}, {"expected_producer_id": 1000,
                                                         "expected_epoch": 0}])  # fmt: skip
def test_keep_prepared_needs_2pc_and_no_expected(c: Coordinator, kw: dict) -> None:
    c.init(enable_2pc=True)
    args = {"enable_2pc": True, "keep_prepared_txn": True} | kw
    assert c.init(**args).error == "INVALID_REQUEST"


def test_prepared_transaction_outlives_its_producer(c: Coordinator) -> None:
    c.init(enable_2pc=True)
    c.add(T0, T1)  # then prepareTransaction (a client flush), then the producer dies
    answer = c.init(enable_2pc=True, keep_prepared_txn=True)
    assert answer == InitAnswer("NONE", 1000, 1, 1000, 0)
    assert (c.txn.state, c.txn.kept, c.txn.client_identity) == (State.ONGOING, True, (1000, 1))
    assert c.add(T1, epoch=0) == {T1: "PRODUCER_FENCED"}  # the old producer
    assert c.add(("u", 0)) == {("u", 0): "INVALID_TXN_STATE"}  # prepared: no new partitions
    again = c.init(enable_2pc=True, keep_prepared_txn=True)  # a second restart
    assert again == InitAnswer("NONE", 1000, 2, 1000, 0)
    assert c.end(True, finish=False) == "NONE"
    assert markers_for(c.txn)[0] == Marker("t", 0, 1000, 0, True)
    c.apply(complete(c.txn, 50))
    assert (c.txn.state, c.txn.producer_id, c.txn.producer_epoch, c.txn.kept) == (
        State.COMPLETE_COMMIT, 1000, 2, False)  # fmt: skip


def test_kept_transaction_at_exhaustion_moves_to_a_new_id(c: Coordinator) -> None:
    c.init(enable_2pc=True)
    c.apply(Result([_with_epoch(c.txn, EPOCH_MAX - 1)]))
    c.add(T0)
    answer = c.init(enable_2pc=True, keep_prepared_txn=True)
    assert answer == InitAnswer("NONE", 1001, 0, 1000, EPOCH_MAX - 1)
    assert c.end(False) == "NONE"
    assert (c.txn.producer_id, c.txn.producer_epoch) == (1001, 0)


def test_init_without_keep_aborts_a_kept_transaction(c: Coordinator) -> None:
    c.init(enable_2pc=True)
    c.add(T0)
    c.init(enable_2pc=True, keep_prepared_txn=True)  # kept at (1000, 1)
    assert c.init(enable_2pc=True).error == "CONCURRENT_TRANSACTIONS"  # fenced and aborted
    assert (c.txn.state, c.txn.producer_epoch) == (State.COMPLETE_ABORT, 2)
    assert c.init(enable_2pc=True) == InitAnswer("NONE", 1000, 3)


# ----- describe, list, errors, replay ------------------------------------------------------


def test_describe(c: Coordinator) -> None:
    assert describe(None, "x").error == "TRANSACTIONAL_ID_NOT_FOUND"
    c.init()
    c.add(T1, ("a", 3), T0)
    row = describe(c.txn)
    assert (row.error, row.state, row.producer_id, row.start_ms) == ("NONE", "Ongoing", 1000, 20)
    assert row.topics == (("a", (3,)), ("t", (0, 1)))


def test_list_filter() -> None:
    txns = {
        "a": TxnMetadata("a", 1, 0, state=State.ONGOING, partitions=frozenset({T0}), start_ms=0),
        "b": TxnMetadata("b", 2, 0, state=State.EMPTY),
    }

    def names(rows: list) -> list[str]:
        return [r.transactional_id for r in rows]

    assert names(list_filter(txns)[0]) == ["a", "b"]
    assert names(list_filter(txns, states=["Ongoing"])[0]) == ["a"]
    assert names(list_filter(txns, producer_ids=[2])[0]) == ["b"]
    assert names(list_filter(txns, duration_filter_ms=99, now_ms=100)[0]) == ["a"]
    assert names(list_filter(txns, duration_filter_ms=100, now_ms=100)[0]) == []
    rows, unknown = list_filter(txns, states=["Bogus", "Empty"])
    assert (names(rows), unknown) == (["b"], ["Bogus"])


def test_error_codes() -> None:
    assert error_code("PRODUCER_FENCED") == 90
    assert error_code("PRODUCER_FENCED", knows_producer_fenced=False) == 47
    assert [error_code(n) for n in ("INVALID_TXN_STATE", "CONCURRENT_TRANSACTIONS")] == [48, 51]


def test_replay_from_the_log_reproduces_the_state(c: Coordinator) -> None:
    c.init()
    c.add(T0)
    c.end(True)
    c.init()
    c.add(T1)
    c.init()  # fence
    loaded: dict[str, TxnMetadata] = {}
    for record in c.log:
        replay(loaded, record)
    assert loaded == c.txns
