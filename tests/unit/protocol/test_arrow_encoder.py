"""protocol/_encoder.c's Arrow entries against the row encoder: `encode_arrow` makes, from Arrow
columns, the same records section `encode_records` makes from the same rows as Python objects
(null keys and values, headers with null values, empty and null header lists, string and large
types, sliced columns, rows picked out of order, chunks cut at max_bytes); bad offsets are a
ValueError, never a read out of bounds. `murmur2_arrow` is Kafka's partitioner hash. And the
Spark sink's grouping (spark_connector/arrow_sink.py) keeps each partition's rows in order."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

from client.partitioner import murmur2, to_positive  # noqa: E402
from protocol._encoder import encode_arrow, encode_records, murmur2_arrow  # noqa: E402
from spark_connector.arrow_sink import column_spec, groups, headers_spec, partitions_of  # noqa: E402

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
Row = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]


def _rows(rng: random.Random, n: int) -> list[Row]:
    def blob() -> bytes | None:
        return None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 40))

    def headers() -> list[tuple[str, bytes | None]] | None:
        if rng.random() < 0.3:
            return None if rng.random() < 0.5 else []
        return [(f"h{j}-é", blob()) for j in range(rng.randrange(1, 4))]

    return [(blob(), blob(), headers()) for _ in range(n)]


def _indices(order: list[int]) -> Any:
    return pa.py_buffer(struct.pack(f"<{len(order)}q", *order))


def _by_rows(rows: list[Row], order: list[int]) -> bytes:
    picked = [rows[i] for i in order]
    return encode_records([r[0] for r in picked], [r[1] for r in picked],
                          [r[2] or None for r in picked], [7] * len(picked), 7)  # fmt: skip


def _columns(rows: list[Row], binary: Any) -> tuple[Any, Any, Any]:
    keys = pa.array([r[0] for r in rows], binary)
    values = pa.array([r[1] for r in rows], binary)
    headers = pa.array([r[2] for r in rows], HEADER_TYPE)
    return keys, values, headers


@pytest.mark.parametrize("binary", [pa.binary(), pa.large_binary()])
def test_arrow_columns_encode_as_the_rows_do(binary: Any) -> None:
    rng = random.Random(37)
    rows = _rows(rng, 300)
    keys, values, headers = _columns(rows, binary)
    order = list(range(300))
    rng.shuffle(order)
    section, stop = encode_arrow(column_spec(keys), column_spec(values), headers_spec(headers),
                                 _indices(order), 0, 1 << 30)  # fmt: skip
    assert stop == 300
    assert section == _by_rows(rows, order)


def test_sliced_columns_strings_and_absent_keys() -> None:
    rng = random.Random(5)
    rows = _rows(rng, 50)
    keys, values, headers = _columns(rows, pa.binary())
    # a slice of each column (offset != 0), values as strings, and no key column at all
    values_str = pa.array([None if r[1] is None else r[1].hex() for r in rows], pa.string())
    sl = slice(10, 40)
    order = list(range(30))
    section, _ = encode_arrow(None, column_spec(values_str[sl]), headers_spec(headers[sl]),
                              _indices(order), 0, 1 << 30)  # fmt: skip
    want_rows = [(None, None if r[1] is None else r[1].hex().encode(), r[2]) for r in rows[sl]]
    assert section == _by_rows(want_rows, order)
    section, _ = encode_arrow(column_spec(keys[sl]), column_spec(values[sl]), None,
                              _indices(order), 0, 1 << 30)  # fmt: skip
    assert section == _by_rows([(r[0], r[1], None) for r in rows[sl]], order)


def test_max_bytes_cuts_chunks_that_join_up_to_the_whole() -> None:
    rows = [(b"k", b"v" * 100, None)] * 20
    keys, values, _ = _columns(rows, pa.binary())
    specs = (column_spec(keys), column_spec(values), None)
    order, start, chunks = list(range(20)), 0, []
    while start < 20:
        section, stop = encode_arrow(*specs, _indices(order), start, 500)
        assert 0 < stop - start <= 5 and len(section) <= 500
        chunks.append(stop - start)
        start = stop
    assert sum(chunks) == 20
    one, _ = encode_arrow(*specs, _indices(order), 0, 10)  # one record even past max_bytes
    assert len(one) > 10


def test_bad_offsets_are_refused_not_read() -> None:
    values = pa.array([b"abc", b"de"], pa.binary())
    _validity, offsets, data = values.buffers()
    bad = pa.py_buffer(struct.pack("<3i", 0, 3, 99))  # the second value ends past the data
    with pytest.raises(ValueError, match="offsets"):
        encode_arrow(None, (2, None, bad, data, 0, 0), None, _indices([0, 1]), 0, 1 << 20)
    with pytest.raises(ValueError, match="shorter than the column"):
        encode_arrow(None, (5, None, offsets, data, 0, 0), None, _indices([0]), 0, 1 << 20)
    with pytest.raises(ValueError, match="outside a column"):
        encode_arrow(None, column_spec(values), None, _indices([2]), 0, 1 << 20)


def test_murmur2_arrow_is_kafkas_partitioner_hash() -> None:
    rng = random.Random(1)
    keys = [None if i % 7 == 0 else rng.randbytes(i % 13) for i in range(200)]
    got = struct.unpack("<200i", murmur2_arrow(column_spec(pa.array(keys, pa.binary()))))
    assert list(got) == [-1 if k is None else to_positive(murmur2(k)) for k in keys]


def test_partitions_and_groups_keep_each_partitions_rows_in_order() -> None:
    hashes = pa.array([5, -1, 12, 7, -1, 2], pa.int32())
    given = pa.array([None, None, None, 0, None, None], pa.int32())
    parts = partitions_of(hashes, given, 3, pick=1)
    assert parts.to_pylist() == [2, 1, 0, 0, 1, 2]
    grouped = {p: struct.unpack(f"<{b.size // 8}q", b.to_pybytes()) for p, b in groups(parts, None)}
    assert grouped == {0: (2, 3), 1: (1, 4), 2: (0, 5)}
    rows = pa.array([10, 11, 12, 13, 14, 15], pa.uint64())  # positions -> row numbers
    picked = {p: struct.unpack(f"<{b.size // 8}q", b.to_pybytes()) for p, b in groups(parts, rows)}
    assert picked == {0: (12, 13), 1: (11, 14), 2: (10, 15)}
    with pytest.raises(Exception, match="out of range"):
        partitions_of(hashes, pa.array([3] * 6, pa.int32()), 3, pick=0)
