"""The C record walker on compacted batches (tests/unit/compacted_batches.py makes them as
Kafka's log cleaner does): records keep their original offsets, a batch ends at its last
offset delta whatever is left in it, empty batches and gaps between batches move the offset
on, a delete horizon changes no timestamp; and the same batches through aiokafka's decoder
(protocol.batch.decode_all), which the group coordinator uses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.types import ConsumerRecord
from protocol import batch
from protocol.batch import build_batch, decode_all, iter_batches, stamp, validate
from protocol.columns import CorruptRecordError, segments, to_buffers, to_records
from tests.unit.compacted_batches import _encode, _sealed, compact, compact_log, raw_records

TS = 1_700_000_000_000
HORIZON = TS + 86_400_000


def stored(rows: list[batch.RecordInput], base: int, codec: int = batch.CODEC_NONE,
           producer_id: int = -1) -> bytes:  # fmt: skip
    out = bytearray(build_batch(rows, codec=codec, producer_id=producer_id,
                                producer_epoch=0 if producer_id >= 0 else -1,
                                base_sequence=0 if producer_id >= 0 else -1))  # fmt: skip
    stamp(out, base, 3)
    return bytes(out)


def rows(n: int, tag: bytes = b"") -> list[batch.RecordInput]:
    return [(b"k%d" % i, tag + b"v%d" % i, [("h", b"%d" % i)] if i % 3 else None, TS + 7 * i)
            for i in range(n)]  # fmt: skip


def walk(data: bytes, start: int = 0, until: int | None = None) -> tuple[list[Any], int]:
    segs, next_offset = segments(data, list(iter_batches(data)), start, until)
    return to_records(ConsumerRecord, "t", 0, segs), next_offset


def arrow(data: bytes, start: int = 0, until: int | None = None) -> dict[str, list[Any]]:
    pytest.importorskip("pyarrow")
    from protocol.columns import arrow_arrays

    segs, _ = segments(data, list(iter_batches(data)), start, until)
    arrays = arrow_arrays(to_buffers(segs, True, 1))
    for a in arrays.values():
        a.validate(full=True)
    return {name: a.to_pylist() for name, a in arrays.items()}


def expected(data: bytes) -> list[ConsumerRecord]:
    """aiokafka's reading of the same bytes (offset = base + delta, as Kafka's)."""
    return [ConsumerRecord("t", 0, r.offset, r.timestamp, r.key, r.value, r.headers)
            for r in decode_all(data)]  # fmt: skip


@pytest.mark.parametrize("codec", sorted(batch.CODECS.values()))
def test_kept_records_keep_their_offsets_and_the_batch_its_end(codec: int) -> None:
    original = stored(rows(10), 100, codec)
    data = compact(original, [0, 3, 7])
    h = validate(data)
    assert (h.record_count, h.last_offset_delta, h.next_offset, h.codec) == (3, 9, 110, codec)
    got, next_offset = walk(data, 100)
    assert [r.offset for r in got] == [100, 103, 107] and next_offset == 110
    assert got == expected(data)
    full, _ = walk(original, 100)
    assert got == [full[0], full[3], full[7]]  # keys, values, headers and timestamps as written
    cols = arrow(data, 100)
    assert cols["offset"] == [100, 103, 107]
    assert cols["timestamp"] == [r.timestamp for r in got]
    assert cols["value"] == [r.value for r in got]


def test_ranges_cut_inside_a_compacted_batch_end_where_asked() -> None:
    data = compact(stored(rows(10), 100), [0, 3, 7])
    assert [r.offset for r in walk(data, 101, 107)[0]] == [103]
    assert walk(data, 101, 107)[1] == 107  # up to `until`, though 104..106 are gone
    assert walk(data, 104, 106) == ([], 106)  # a range of gone offsets is empty, not an error
    assert [r.offset for r in walk(data, 104)[0]] == [107] and walk(data, 104)[1] == 110
    assert walk(data, 108) == ([], 110)  # the batch's last records are gone: it still ends at 110
    assert arrow(data, 101, 108)["offset"] == [103, 107]


def test_empty_batches_and_gaps_between_batches_move_the_offset_on() -> None:
    log = [stored(rows(5), 0, producer_id=7), stored(rows(5), 5, producer_id=7),
           stored(rows(5), 10), stored(rows(5), 15, producer_id=8)]  # fmt: skip
    # keep 1 and 3 of the first batch, nothing of the second (the producer's last batch: kept
    # empty) or the third (no producer: it goes, a gap), 19 of the fourth
    data = b"".join(compact_log(log, lambda o: o in (1, 3, 19)))
    headers = [h for _, h in iter_batches(data)]
    assert [(h.base_offset, h.record_count, h.next_offset) for h in headers] == [
        (0, 2, 5), (5, 0, 10), (15, 1, 20),
    ]  # fmt: skip
    empty = headers[1]
    assert (empty.batch_length, empty.first_timestamp, empty.codec) == (49, -1, batch.CODEC_NONE)
    assert (empty.producer_id, empty.base_sequence) == (7, 0)
    got, next_offset = walk(data)
    assert [r.offset for r in got] == [1, 3, 19] and next_offset == 20
    assert got == expected(data)
    assert walk(data, 4, 19) == ([], 19)  # past an empty batch and a gap, nothing: no error
    assert walk(data, 6) == (got[2:], 20)  # from inside the empty batch
    assert walk(data, 12)[0] == got[2:]  # from inside the gap: the next batch starts after it
    assert walk(data[: len(data) - 40], 5)[1] == 10  # a torn last batch: up to the empty one
    assert arrow(data)["offset"] == [1, 3, 19]


@pytest.mark.parametrize("codec", [batch.CODEC_NONE, batch.CODEC_ZSTD])
def test_a_delete_horizon_changes_no_timestamp(codec: int) -> None:
    original = stored(rows(6), 40, codec)
    data = compact(original, [1, 4, 5], delete_horizon_ms=HORIZON)
    h = validate(data)
    assert h.attributes & batch.DELETE_HORIZON_BIT and h.first_timestamp == HORIZON
    assert h.max_timestamp == TS + 35 < h.first_timestamp
    got, _ = walk(data, 40)
    full, _ = walk(original, 40)
    assert got == [full[1], full[4], full[5]] == expected(data)
    assert arrow(data, 40)["timestamp"] == [TS + 7, TS + 28, TS + 35]


def test_log_append_time_batches_keep_their_stamp() -> None:
    out = bytearray(stored(rows(4), 0))
    raw = bytes(out)
    h, records = raw_records(raw)
    log_append = _sealed(h, batch.TIMESTAMP_TYPE_BIT, h.first_timestamp, TS + 999, 4,
                         _encode(records, h.first_timestamp))  # fmt: skip
    data = compact(log_append, [2])
    assert validate(data).max_timestamp == TS + 999
    got, _ = walk(data)
    assert [(r.offset, r.timestamp) for r in got] == [(2, TS + 999)]


def _rewritten(data: bytes, deltas: list[int]) -> bytes:
    """`data`'s records with these offset deltas (a batch no cleaner would write)."""
    h, records = raw_records(data)
    moved = [replace(r, offset_delta=d) for r, d in zip(records, deltas, strict=True)]
    return _sealed(h, h.attributes, h.first_timestamp, h.max_timestamp, len(moved),
                   _encode(moved, h.first_timestamp))  # fmt: skip


@pytest.mark.parametrize(
    ("deltas", "message"),
    [([0, 2, 2], "not above the previous"), ([1, 0, 2], "not above the previous"),
     ([0, 1, 5], "past the batch's last"), ([-1, 0, 1], "not above the previous")],
)  # fmt: skip
def test_offset_deltas_must_increase_within_the_batch(deltas: list[int], message: str) -> None:
    bad = _rewritten(stored(rows(3), 0), deltas)
    if deltas[-1] <= 2:  # the header's last offset delta is 2
        with pytest.raises(batch.InvalidBatchError, match="offset deltas"):
            decode_all(bad)
    with pytest.raises(CorruptRecordError, match=message):
        walk(bad)
    with pytest.raises(CorruptRecordError, match=message):
        to_buffers(segments(bad, list(iter_batches(bad)), 0)[0], False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=5),
    keep=st.lists(st.booleans(), min_size=60, max_size=60),
    horizon=st.lists(st.booleans(), min_size=5, max_size=5),
    codec=st.sampled_from(sorted(batch.CODECS.values())),
    cut=st.tuples(st.integers(0, 70), st.integers(0, 70)),
)
def test_the_walker_returns_exactly_the_kept_records_at_their_offsets(
    sizes: list[int], keep: list[bool], horizon: list[bool], codec: int, cut: tuple[int, int]
) -> None:
    log, base = [], 0
    for i, n in enumerate(sizes):
        log.append(stored(rows(n, b"%d-" % i), base, codec, producer_id=i % 2 or -1))
        base += n
    end = base
    full = {r.offset: r for r in walk(b"".join(log))[0]}
    with_horizon = lambda h: HORIZON if horizon[h.base_offset % 5] else None  # noqa: E731
    data = b"".join(compact_log(log, lambda o: keep[o], with_horizon))
    start, until = min(cut), max(cut)
    got, next_offset = walk(data, start, until)
    assert got == [full[o] for o in sorted(full) if keep[o] and start <= o < until]
    assert got == [r for r in expected(data) if start <= r.offset < until]
    last_end = max([h.next_offset for _, h in iter_batches(data)], default=0)
    assert next_offset == max(start, min(until, last_end)) and last_end <= end
    cols = arrow(data, start, until)
    assert cols["offset"] == [r.offset for r in got]
    assert cols["timestamp"] == [r.timestamp for r in got]
    assert cols["key"] == [r.key for r in got] and cols["value"] == [r.value for r in got]
