"""Random sequences of coordinator operations: every record replays to the state the operation
meant, no move leaves the state table (replay checks each one), and loading the log's bytes
into a fresh coordinator gives the same state."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.transaction.records import decode, encode_key, encode_value
from coordinator.transaction.states import State
from coordinator.transaction.txn import (
    InitAnswer,
    Result,
    TxnMetadata,
    add_partitions,
    complete,
    end_txn,
    expire,
    init_producer_id,
    replay,
)

IDS = ["a", "b"]
TPS = [("t", 0), ("t", 1), ("u", 0)]
OPS = st.one_of(
    st.tuples(st.just("init"), st.sampled_from(IDS), st.booleans(), st.booleans(), st.booleans()),
    st.tuples(
        st.just("add"),
        st.sampled_from(IDS),
        st.lists(st.sampled_from(TPS), min_size=1),
        st.integers(-1, 0),
    ),
    st.tuples(st.just("end"), st.sampled_from(IDS), st.booleans(), st.integers(-1, 0)),
    st.tuples(st.just("complete"), st.sampled_from(IDS)),
    st.tuples(st.just("tick"), st.integers(0, 8 * 86_400_000)),
)


class Model:
    def __init__(self) -> None:
        self.txns: dict[str, TxnMetadata] = {}
        self.log: list = []
        self.now_ms = 0
        self.ids = itertools.count(100)

    def apply(self, result: Result) -> None:
        for record in result.records:
            txn = self.txns.get(record.transactional_id)
            if txn is not None:
                txn.pending = result.pending
            self.log.append(record)
            replay(self.txns, record)  # raises IllegalTransitionError off the table

    def step(self, op: tuple) -> None:
        self.now_ms += 1
        kind, rest = op[0], op[1:]
        if kind == "tick":
            self.now_ms += rest[0]
            for result in expire(self.txns, self.now_ms):
                self.apply(result)
            return
        tid = rest[0]
        before = replace(self.txns[tid]) if tid in self.txns else None
        refused = getattr(self, kind)(tid, *rest[1:])  # None when it applied its records
        if refused is not None:
            assert not refused.records
            assert self.txns.get(tid) == before  # refused or a no-op: nothing moved

    def init(self, tid: str, two_pc: bool, keep: bool, resume: bool) -> Result | None:
        txn = self.txns.get(tid)
        pid, epoch = txn.client_identity if (resume and txn and not keep) else (-1, -1)
        result = init_producer_id(txn, tid, 1000, pid, epoch, lambda: next(self.ids),
                                  self.now_ms, enable_2pc=two_pc or keep,
                                  keep_prepared_txn=keep)  # fmt: skip
        answer = result.response
        assert isinstance(answer, InitAnswer)
        if answer.error == "NONE":
            self.apply(result)
            txn = self.txns[tid]
            assert txn.client_identity == (answer.producer_id, answer.producer_epoch)
            assert txn.state is (State.ONGOING if txn.kept else State.EMPTY)
            return None
        if result.write_markers:  # fenced: the abort was decided
            self.apply(result)
            assert self.txns[tid].state is State.PREPARE_ABORT
            return None
        return result

    def add(self, tid: str, tps: list, epoch_delta: int) -> Result | None:
        txn = self.txns.get(tid)
        pid, epoch = txn.client_identity if txn else (0, 0)
        result = add_partitions(txn, pid, epoch + epoch_delta, tps, self.now_ms)
        if result.records:
            self.apply(result)
            assert self.txns[tid].state is State.ONGOING
            assert set(tps) <= self.txns[tid].partitions
            return None
        return result

    def end(self, tid: str, commit: bool, epoch_delta: int) -> Result | None:
        txn = self.txns.get(tid)
        pid, epoch = txn.client_identity if txn else (0, 0)
        result = end_txn(txn, pid, epoch + epoch_delta, commit, self.now_ms)
        if result.records:
            self.apply(result)
            want = State.PREPARE_COMMIT if commit else State.PREPARE_ABORT
            assert self.txns[tid].state is want and result.write_markers
            return None
        return result

    def complete(self, tid: str) -> Result | None:
        txn = self.txns.get(tid)
        if txn is None or txn.state not in (State.PREPARE_COMMIT, State.PREPARE_ABORT):
            return Result()  # nothing to complete
        commit = txn.state is State.PREPARE_COMMIT
        identity = txn.client_identity
        self.apply(complete(txn, self.now_ms))
        done = self.txns[tid]
        assert done.state is (State.COMPLETE_COMMIT if commit else State.COMPLETE_ABORT)
        assert (done.producer_id, done.producer_epoch) == identity and not done.partitions
        return None


@settings(max_examples=300, deadline=None)
@given(st.lists(OPS, max_size=40))
def test_random_sequences_replay_to_the_intended_state(ops: list) -> None:
    model = Model()
    for op in ops:
        model.step(op)
    fresh: dict[str, TxnMetadata] = {}
    for record in model.log:
        replay(fresh, record)
    assert fresh == model.txns
    loaded: dict[str, TxnMetadata] = {}
    for record in model.log:
        key, value = encode_key(record.transactional_id), encode_value(record.value)
        replay(loaded, decode(key, value), loading=True)
    without_hint = {t: replace(x, last_producer_epoch=-1) for t, x in model.txns.items()}
    assert loaded == without_hint
