"""What a share fetch may acquire of the batches it read (broker/share/fetched.py)."""

from __future__ import annotations

import struct

from broker.share.fetched import acquirable, covering, read_budget
from protocol.batch import ATTRIBUTES_AT, CONTROL_BIT, build_batch, with_producer


def batch(base: int, count: int, pid: int = -1, txn: bool = False, control: bool = False) -> bytes:
    out = build_batch([(None, b"v", [], 0)] * count, base_offset=base)
    if pid >= 0:
        out = with_producer(out, pid, 0, 0, transactional=txn)
    if control:
        raw = bytearray(out)
        (attributes,) = struct.unpack_from(">h", raw, ATTRIBUTES_AT)
        struct.pack_into(">h", raw, ATTRIBUTES_AT, attributes | CONTROL_BIT)
        out = bytes(raw)
    return out


def test_data_batches_and_the_end_of_the_read() -> None:
    records = batch(10, 3) + batch(13, 2) + batch(15, 4)[:-5]  # a partial tail is not read
    assert acquirable(records) == ([(10, 12), (13, 14)], 15)
    assert acquirable(b"") == ([], None)


def test_control_batches_are_never_delivered() -> None:
    records = batch(0, 2, pid=7, txn=True) + batch(2, 1, pid=7, txn=True, control=True)
    assert acquirable(records) == ([(0, 1)], 3)


def test_read_committed_leaves_out_aborted_transactions() -> None:
    records = (
        batch(0, 2, pid=7, txn=True)  # aborted
        + batch(2, 1, pid=8, txn=True)  # committed, interleaved
        + batch(3, 1, pid=7, txn=True, control=True)  # 7's abort marker
        + batch(4, 1, pid=8, txn=True, control=True)  # 8's commit marker
        + batch(5, 2, pid=7, txn=True)  # 7's next transaction
    )
    assert acquirable(records, [(7, 0)]) == ([(2, 2), (5, 6)], 7)
    assert acquirable(records, None) == ([(0, 1), (2, 2), (5, 6)], 7)


def test_an_answer_carries_only_the_batches_of_the_acquired_records() -> None:
    a, b, c, d = batch(0, 3), batch(3, 2), batch(5, 4), batch(9, 1)
    records = a + b + c + d
    assert covering(records, 3, 4) == b
    assert covering(records, 4, 6) == b + c  # a batch only partly acquired goes out whole
    assert covering(records, 0, 9) == records
    assert covering(records, 10, 12) == b""


def test_a_share_fetch_reads_what_it_may_acquire_not_the_whole_budget() -> None:
    assert read_budget(0.0, 100, 100, 500, 1_048_576) == 1_048_576  # no estimate yet
    assert read_budget(100.0, 100, 100, 500, 1_048_576) == 62_500  # 500 new, a quarter more
    assert read_budget(100.0, 100, 300, 500, 1_048_576) == 87_500  # and the 200 in flight
    assert read_budget(1000.0, 0, 0, 5000, 1_048_576) == 1_048_576  # never past the request's
