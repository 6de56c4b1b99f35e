"""Property: for any interleaving of plain writes, transactional writes of three producers,
commits, aborts and cleaning passes (the clock moving past delete horizons between them), a
read_committed consumer of the cleaned log reads, up to the last stable offset, the latest
committed value of every key (a tombstone's key at most as a tombstone) and nothing of an
aborted transaction; no aborted record is stored below the cleaner's checkpoint; and a restart
(the `.txnindex` and markers read back from disk, producer state replayed from the log start)
changes neither the view nor the first unstable offset."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.clock import ManualClock
from tests.unit.log.conftest import T0
from tests.unit.log.test_cleaner import Harness
from tests.unit.log.test_cleaner_txn import Txns, read_committed, values

KEYS = [b"a", b"b", b"c", b"d"]
PIDS = [1, 2, 3]
value = st.one_of(st.none(), st.just(b""))  # None: a tombstone; b"": a value (made unique)
op = st.one_of(
    st.tuples(st.just("plain"), st.sampled_from(KEYS), value),
    st.tuples(st.just("write"), st.sampled_from(PIDS), st.sampled_from(KEYS), value),
    st.tuples(st.just("end"), st.sampled_from(PIDS), st.booleans()),
    st.tuples(st.just("clean")),
)
Op = tuple[object, ...]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=80), end_all=st.booleans())
def test_read_committed_after_cleaning_is_the_latest_committed_value_of_every_key(
    ops: list[Op], end_all: bool
) -> None:
    where = Path(tempfile.mkdtemp())
    try:
        _check(where, ops, end_all)
    finally:
        shutil.rmtree(where)


class Model:
    """The log as written: every record's offset, key, value and transaction."""

    def __init__(self) -> None:
        self.records: list[tuple[int, bytes, bytes | None, tuple[int, int] | None]] = []
        self.open: dict[int, tuple[int, int]] = {}  # pid -> (pid, its txn's number)
        self.aborted: set[tuple[int, int]] = set()
        self.txns = 0

    def txn_of(self, pid: int) -> tuple[int, int]:
        if pid not in self.open:
            self.txns += 1
            self.open[pid] = (pid, self.txns)
        return self.open[pid]

    def view(self, upper: int) -> dict[bytes, bytes | None]:
        """The latest committed value of every key written below `upper`."""
        out: dict[bytes, bytes | None] = {}
        for offset, key, v, txn in self.records:
            if offset < upper and txn not in self.aborted:
                out[key] = v
        return out


def _check(where: Path, ops: list[Op], end_all: bool) -> None:
    h = Harness(where, ManualClock(time_ms=T0), **{
        "segment.bytes": "300", "delete.retention.ms": "1000",
    })  # fmt: skip
    t, model = Txns(h.log), Model()
    for n, o in enumerate(ops):
        if o[0] == "clean":
            t.settle()
            h.clean()
            h.clock.advance(600)  # a second pass is past the horizons the first one set
            continue
        if o[0] == "end":
            pid, commit = o[1], o[2]
            assert isinstance(pid, int) and isinstance(commit, bool)
            if pid in model.open:
                if not commit:
                    model.aborted.add(model.open[pid])
                del model.open[pid]
                t.end(pid, commit)
            continue
        *head, key, v = o
        assert isinstance(key, bytes) and (v is None or isinstance(v, bytes))
        v = None if v is None else b"v%d" % n  # unique: a stored value names its write
        offset = h.log.log_end_offset
        if head[0] == "plain":
            t.plain([(key, v)])
            model.records.append((offset, key, v, None))
        else:
            pid = head[1]
            assert isinstance(pid, int)
            model.records.append((offset, key, v, model.txn_of(pid)))
            t.write(pid, [(key, v)])
    if end_all:
        for pid, txn in list(model.open.items()):
            commit = pid % 2 == 0
            if not commit:
                model.aborted.add(txn)
            del model.open[pid]
            t.end(pid, commit)
    for _ in range(3):  # the last past the horizons the first one set
        t.settle()
        h.clean()
        h.clock.advance(600)
    _compare(h, model)
    checkpoint = h.cleaner.checkpointed("t", 0) or 0
    gone = {v for o, _, v, txn in model.records
            if txn in model.aborted and o < checkpoint and v is not None}  # fmt: skip
    assert not gone & set(values(h.log)), "aborted records stored below the checkpoint"
    fuo = h.log.first_unstable_offset
    _restart_replaying_all(h)
    t.log = h.log
    t.settle()
    assert h.log.first_unstable_offset == fuo  # replay ends every transaction it ended
    _compare(h, model)


def _restart_replaying_all(h: Harness) -> None:
    """Reopen the log with no producer-state snapshot: its state is replayed from the cleaned
    batches and markers alone."""
    directory = h.log.directory
    h.log.close()
    for path in directory.glob("*.snapshot"):
        path.unlink()
    h.restart()


def _compare(h: Harness, model: Model) -> None:
    lso = h.log.last_stable_offset(h.log.log_end_offset)
    got = {k: v for _, k, v in read_committed(h.log, lso)}
    want = model.view(lso)
    assert set(got) <= set(want), "a key only aborted transactions wrote"
    for key, v in want.items():
        if v is None:
            assert got.get(key) is None  # deleted: a tombstone at most
        else:
            assert got[key] == v
    offsets = [o for o, _, _ in read_committed(h.log)]
    assert offsets == sorted(set(offsets))
