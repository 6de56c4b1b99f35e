"""Pure-logic tests of the connector: option checks, offset-range decisions, Arrow decoding.
No cluster and no SparkSession (these run in milliseconds)."""

from __future__ import annotations

import socket

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from pyspark.sql.pandas.types import to_arrow_schema  # noqa: E402

from protocol.batch import TIMESTAMP_TYPE_BIT, build_batch, iter_batches, stamp  # noqa: E402
from protocol.columns import segments  # noqa: E402
from protocol.errors import UsageError  # noqa: E402
from spark_connector.fetch import ConstantColumns, records_to_arrow, segments_to_arrow  # noqa: E402
from spark_connector.lookup import native_bootstrap  # noqa: E402
from spark_connector.options import (  # noqa: E402
    offsets_from_json,
    offsets_to_json,
    parse_read_options,
    parse_write_options,
)
from spark_connector.ranges import (  # noqa: E402
    OffsetRange,
    rate_limit,
    resolve_ranges,
    split_ranges,
)
from spark_connector.schema import arrow_schema, spark_schema  # noqa: E402
from tests.unit.compacted_batches import compact_log  # noqa: E402

BOOT = {"bootstrap": "127.0.0.1:9092"}


def test_arrow_schema_is_what_spark_expects() -> None:
    for headers in (False, True):
        assert arrow_schema(headers).equals(to_arrow_schema(spark_schema(headers), timezone="UTC"))


def test_options_parse_like_sparks_kafka_source() -> None:
    opts = parse_read_options(
        {**BOOT, "SUBSCRIBE": "a, b", "startingOffsets": '{"a": {"0": 5, "1": -2}}',
         "endingTimestamp": "1000", "minPartitions": "4", "failOnDataLoss": "False"},
        streaming=False,
    )  # fmt: skip
    assert opts.subscribe == ("a", "b")
    assert opts.starting.kind == "offsets" and opts.starting.offsets == {"a": {0: 5, 1: -2}}
    assert opts.ending.kind == "timestamp" and opts.ending.timestamp_ms == 1000
    assert (opts.min_partitions, opts.fail_on_data_loss) == (4, False)
    stream = parse_read_options({**BOOT, "assign": '{"t": [0, 2]}'}, streaming=True)
    assert stream.assign == {"t": (0, 2)} and stream.starting.kind == "latest"
    assert parse_read_options({**BOOT, "subscribe": "t"}, streaming=False).starting.kind == (
        "earliest"
    )


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "t"}, False, None),
        ({"subscribe": "t", "startingOffsets": "latest"}, False, "not allowed in a batch"),
        ({"subscribe": "t", "endingOffsets": "latest"}, True, "not allowed in a streaming"),
        ({"subscribe": "t", "endingOffsets": '{"t": {"0": -2}}'}, False, "can't be earliest"),
        ({"subscribe": "t", "startingOffsets": "{bad"}, False, "not valid JSON"),
        ({"subscribe": "t", "startingOffsets": '{"t": {"0": -3}}'}, False, "< -2"),
        ({"subscribe": " , "}, False, "names no topics"),
        ({"subscribePattern": "("}, False, "not a valid regex"),
        ({"assign": '{"t": []}'}, False, "needs a list of partitions"),
        ({"subscribe": "t", "assign": '{"t": [0]}'}, False, "only one of"),
        ({"subscribe": "t", "includeHeaders": "yes"}, False, "true or false"),
        ({"subscribe": "t", "maxOffsetsPerTrigger": "10"}, False, "only applies to streaming"),
        ({"subscribe": "t", "startingTimestamp": "-5"}, False, ">= 0"),
    ],
)
def test_bad_options(options: dict[str, str], streaming: bool, message: str | None) -> None:
    if message is None:
        parse_read_options({**BOOT, **options}, streaming)
        with pytest.raises(UsageError, match="'bootstrap' is required"):
            parse_read_options(options, streaming)
        return
    with pytest.raises(UsageError, match=message) as info:
        parse_read_options({**BOOT, **options}, streaming)
    assert "\n" not in info.value.message


def test_kafka_bootstrap_servers_is_marked_for_the_drivers_swap() -> None:
    """Spark's own option names the Kafka listener (swapped on the driver for the native one,
    spark_connector/lookup.py); `bootstrap` is native and wins when both are given."""
    kafka = {"kafka.bootstrap.servers": "h:9093", "subscribe": "t"}
    read = parse_read_options(kafka, False)
    assert (read.bootstrap, read.kafka_bootstrap) == ("h:9093", True)
    both = parse_read_options({**kafka, **BOOT}, True)
    assert (both.bootstrap, both.kafka_bootstrap) == ("127.0.0.1:9092", False)
    write = parse_write_options({"KAFKA.BOOTSTRAP.SERVERS": "h:9093"})
    assert (write.bootstrap, write.kafka_bootstrap) == ("h:9093", True)


def test_an_address_that_is_no_kafka_listener_is_kept() -> None:
    """Nothing listens there: not known to be Kafka's, so it is taken as a native address
    (the client then says what is wrong with it); a malformed one is refused in one line."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{sock.getsockname()[1]}"
    assert native_bootstrap(closed) == closed
    with pytest.raises(UsageError, match="'nohost' is not host:port"):
        native_bootstrap("nohost")


def test_write_options() -> None:
    assert parse_write_options(BOOT).acks == "all"
    with pytest.raises(UsageError, match="acks"):
        parse_write_options({**BOOT, "acks": "2"})


def test_offsets_json_round_trip() -> None:
    offsets = {"t": {0: 5, 10: 7}, "a": {1: 0}}
    as_json = offsets_to_json(offsets)
    assert as_json == {"a": {"1": 0}, "t": {"0": 5, "10": 7}}
    assert offsets_from_json(as_json) == offsets


def test_resolve_ranges_bounds_and_data_loss() -> None:
    earliest = {("t", 0): 10, ("t", 1): 0, ("t", 2): 0}
    latest = {("t", 0): 100, ("t", 1): 50, ("t", 2): 20}
    start = {("t", 0): 5, ("t", 1): -2, ("t", 2): 30}
    end = {("t", 0): -1, ("t", 1): 500, ("t", 2): -1}
    ranges, lost = resolve_ranges(start, end, earliest, latest)
    assert ranges == [OffsetRange("t", 0, 10, 100), OffsetRange("t", 1, 0, 50),
                      OffsetRange("t", 2, 20, 20)]  # fmt: skip
    assert [(x.partition, x.from_offset, x.until_offset) for x in lost] == [(0, 5, 10), (2, 20, 30)]
    assert "deleted by retention" in lost[0].reason and "truncated" in lost[1].reason


def test_split_ranges_follows_kafka_offset_range_calculator() -> None:
    ranges = [OffsetRange("t", 0, 0, 90), OffsetRange("t", 1, 0, 10), OffsetRange("t", 2, 5, 5)]
    assert split_ranges(ranges, None) == ranges[:2]  # empty ranges dropped
    assert split_ranges(ranges, 2) == ranges[:2]  # enough partitions already
    split = split_ranges(ranges, 5)
    assert [(r.partition, r.from_offset, r.until_offset) for r in split] == [
        (0, 0, 22), (0, 22, 44), (0, 44, 67), (0, 67, 90), (1, 0, 10),
    ]  # fmt: skip
    even = split_ranges([OffsetRange("t", 0, 100, 110)], 3)
    assert [(r.from_offset, r.until_offset) for r in even] == [(100, 103), (103, 106), (106, 110)]


def test_rate_limit_shares_by_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 10}
    until = {("t", 0): 900, ("t", 1): 99, ("t", 2): 11, ("t", 3): 5}
    got = rate_limit(100, start, until, new_earliest={("t", 3): 0})
    # backlogs 900, 99, 1, 5 of 1005: shares 89.55 -> 89, 9.85 -> 9, 0.0995 -> 1, 0.4975 -> 1
    assert got == {("t", 0): 89, ("t", 1): 9, ("t", 2): 11, ("t", 3): 1}
    assert rate_limit(100, until, until, {}) == until  # nothing new: unchanged


def _batch(base: int, records: list[tuple[bytes | None, bytes | None, list | None, int]]) -> bytes:
    b = bytearray(build_batch(records))
    stamp(b, base, 0)
    return bytes(b)


def test_records_to_arrow_cuts_the_range_and_keeps_every_field() -> None:
    first = _batch(0, [(b"k0", b"v0", None, 1000), (None, b"v1", [("h", b"x")], 2000)])
    second = _batch(2, [(b"k2", None, [("n", None)], 1500), (b"k3", b"v3", None, 3000)])
    batch, next_offset = records_to_arrow(first + second, "t", 4, 1, 3, include_headers=True)
    assert next_offset == 3
    d = batch.to_pydict()
    assert d["offset"] == [1, 2] and d["key"] == [None, b"k2"] and d["value"] == [b"v1", None]
    assert d["topic"] == ["t", "t"] and d["partition"] == [4, 4] and d["timestampType"] == [0, 0]
    assert [int(t.timestamp() * 1000) for t in d["timestamp"]] == [2000, 1500]
    assert d["headers"] == [[{"key": "h", "value": b"x"}], [{"key": "n", "value": None}]]
    assert batch.schema.equals(arrow_schema(True))
    assert records_to_arrow(first, "t", 0, 2, 9, False) == (None, 2)


def test_a_ranges_batches_slice_one_topic_and_partition_column() -> None:
    """The topic and partition columns are built once per range and grown by doubling: each
    answer's batch holds a slice of them (the same buffer), not columns of its own."""
    constants = ConstantColumns("t", 4)
    small = _batch(0, [(None, b"v%d" % i, None, 1000) for i in range(3)])
    large = _batch(3, [(None, b"v%d" % i, None, 1000) for i in range(5)])
    out = []
    for data, start in ((small, 0), (large, 3), (small, 0)):
        segs, _ = segments(data, list(iter_batches(data)), start, 100)
        out.append(segments_to_arrow(segs, "t", 4, False, constants))
    assert [b.num_rows for b in out] == [3, 5, 3] and constants.rows == 6
    for batch in out:
        d = batch.to_pydict()
        assert d["topic"] == ["t"] * batch.num_rows and d["partition"] == [4] * batch.num_rows
        assert batch.schema.equals(arrow_schema(False))
    topic_data = [b.column("topic").buffers()[2].address for b in out]
    partition_data = [b.column("partition").buffers()[1].address for b in out]
    assert topic_data[1] == topic_data[2] and partition_data[1] == partition_data[2]


def test_records_to_arrow_log_append_time() -> None:
    b = bytearray(_batch(7, [(None, b"a", None, 1000), (None, b"b", None, 5000)]))
    # set the timestamp-type bit (and fix the CRC) as a broker stamping LogAppendTime would
    import struct

    import crc32c

    attrs = struct.unpack_from(">h", b, 21)[0] | TIMESTAMP_TYPE_BIT
    struct.pack_into(">h", b, 21, attrs)
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    batch, _ = records_to_arrow(bytes(b), "t", 0, 0, 100, False)
    d = batch.to_pydict()
    assert d["timestampType"] == [1, 1]
    assert [int(t.timestamp() * 1000) for t in d["timestamp"]] == [5000, 5000]


def test_records_to_arrow_over_compacted_batches() -> None:
    """A range holds the records compaction left (fewer than its size, as with Spark's Kafka
    source), and ends where asked even when its last offsets, or the batches after them, are
    gone: 0-4 keeps 1 and 3; 5-9 is gone (a gap); 10-14 keeps 10 and 14."""
    log = [_batch(b, [(b"k%d" % o, b"v%d" % o, None, 1000 + o) for o in range(b, b + 5)])
           for b in (0, 5, 10)]  # fmt: skip
    data = b"".join(compact_log(log, lambda o: o in (1, 3, 10, 14)))
    batch, next_offset = records_to_arrow(data, "t", 0, 0, 15, False)
    assert batch.to_pydict()["offset"] == [1, 3, 10, 14] and next_offset == 15
    assert batch.to_pydict()["value"] == [b"v1", b"v3", b"v10", b"v14"]
    batch, next_offset = records_to_arrow(data, "t", 0, 2, 8, False)
    assert batch.to_pydict()["offset"] == [3] and next_offset == 8  # the next batch starts at 10
    assert records_to_arrow(data, "t", 0, 4, 10, False) == (None, 10)  # only gone offsets
    batch, next_offset = records_to_arrow(data, "t", 0, 11, 13, False)
    assert batch is None and next_offset == 13


def test_spark_data_source_lookup_finds_the_source() -> None:
    """Spark 4.x's own lookup (run here in-process) registers "odradek" from pyspark_odradek."""
    import io
    import pickle
    import struct

    from pyspark.sql.worker.lookup_data_sources import _main

    out = io.BytesIO()
    _main(io.BytesIO(), out)
    data = out.getvalue()
    (count,) = struct.unpack_from(">i", data, 0)
    pos, found = 4, {}
    for _ in range(count):
        (n,) = struct.unpack_from(">i", data, pos)
        name = data[pos + 4 : pos + 4 + n].decode()
        pos += 4 + n
        (n,) = struct.unpack_from(">i", data, pos)
        found[name] = pickle.loads(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    from spark_connector.source import OdradekDataSource

    assert found.get("odradek") is OdradekDataSource
