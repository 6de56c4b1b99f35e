"""read_committed on the client: the aborted-range filter (client/read_committed.py) as a pure
function of batch headers, Kafka's fetcher algorithm; markers never handed out at either
isolation level, the position moving past them and past dropped batches."""

from __future__ import annotations

import pytest

from client.fetched import decode_scanned, scan_fetched
from client.read_committed import drop_aborted, isolation_level_code
from client.types import TopicPartition
from protocol import batch
from protocol.control import build_marker

TP = TopicPartition("t", 0)
TS = 1_700_000_000_000


def data_batch(base: int, values: list[bytes], pid: int = -1, txn: bool = False) -> bytes:
    raw = batch.build_batch_from_values(
        values, TS, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1, transactional=txn,
    )  # fmt: skip
    out = bytearray(raw)
    batch.stamp(out, base, 0)
    return bytes(out)


def marker(base: int, pid: int, commit: bool) -> bytes:
    out = bytearray(build_marker(pid, 0, 0, commit, TS))
    batch.stamp(out, base, 0)
    return bytes(out)


def kept_values(data: bytes, aborted: list[tuple[int, int]]) -> tuple[list[bytes | None], int]:
    scanned, next_offset = scan_fetched(data, 0)
    kept = drop_aborted(data, scanned, aborted)
    return [r.value for r in decode_scanned(TP, data, kept, 0)], next_offset


def test_an_aborted_transaction_is_dropped_until_its_abort_marker() -> None:
    # producer 7 aborts [a1 a2], then commits [c1]; producer 8 commits [x] interleaved
    data = (
        data_batch(0, [b"a1"], 7, True)
        + data_batch(1, [b"x"], 8, True)
        + data_batch(2, [b"a2"], 7, True)
        + marker(3, 7, commit=False)
        + marker(4, 8, commit=True)
        + data_batch(5, [b"c1"], 7, True)
        + marker(6, 7, commit=True)
        + data_batch(7, [b"plain"])
    )
    assert kept_values(data, [(7, 0)]) == ([b"x", b"c1", b"plain"], 8)
    # read_uncommitted (nothing listed): every data record, never a marker
    assert kept_values(data, []) == ([b"a1", b"x", b"a2", b"c1", b"plain"], 8)


def test_two_aborted_ranges_of_one_producer_and_an_idempotent_batch() -> None:
    data = (
        data_batch(0, [b"a", b"b"], 3, True)
        + marker(2, 3, commit=False)
        + data_batch(3, [b"idem"], 3)  # not transactional: kept even inside a range
        + data_batch(4, [b"c"], 3, True)
        + marker(5, 3, commit=True)
        + data_batch(6, [b"d"], 3, True)
        + marker(7, 3, commit=False)
    )
    assert kept_values(data, [(3, 6), (3, 0)]) == ([b"idem", b"c"], 8)


def test_an_aborted_range_starting_before_the_fetch_and_one_not_yet_reached() -> None:
    # the fetch began inside producer 5's aborted transaction; producer 6's starts later
    data = data_batch(10, [b"late-aborted"], 5, True) + marker(11, 5, commit=False)
    data += data_batch(12, [b"ok"], 6, True) + marker(13, 6, commit=True)
    scanned, next_offset = scan_fetched(data, 10)
    kept = drop_aborted(data, scanned, [(5, 4), (6, 99)])
    assert [r.value for r in decode_scanned(TP, data, kept, 10)] == [b"ok"]
    assert next_offset == 14  # past the markers and the dropped batch


def test_only_markers_move_the_position_and_return_nothing() -> None:
    data = marker(20, 1, commit=True) + marker(21, 2, commit=False)
    assert kept_values(data, []) == ([], 22)


def test_isolation_level_names_are_kafkas() -> None:
    assert isolation_level_code("read_uncommitted") == 0
    assert isolation_level_code("read_committed") == 1
    with pytest.raises(ValueError, match="read_committed"):
        isolation_level_code("READ_COMMITTED")


def test_the_consumer_refuses_an_unknown_level_and_its_fetches_carry_its_own() -> None:
    from client.consumer import AsyncConsumer
    from protocol.errors import UsageError

    with pytest.raises(UsageError, match="isolation_level must be"):
        AsyncConsumer("127.0.0.1:9", isolation_level="committed")
    consumer = AsyncConsumer("127.0.0.1:9", isolation_level="read_committed")
    assert consumer._fetcher.build_request([]).isolation_level == 1
    assert AsyncConsumer("127.0.0.1:9")._fetcher.build_request([]).isolation_level == 0
