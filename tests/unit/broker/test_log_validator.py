"""The leader's checks and rewrites of a client's batch (broker/log_validator.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from broker.log.config import LogConfig
from broker.log_validator import needs_rewrite, validate_for_leader
from protocol import compression
from protocol.api.produce import RecordError
from protocol.batch import (
    TIMESTAMP_TYPE_BIT,
    InvalidBatchError,
    build_batch,
    decode_all,
    read_header,
    validate,
)
from protocol.errors import InvalidRecordError, InvalidTimestampError
from protocol.record_errors import InvalidRecordsError, InvalidTimestampsError

NOW = 1_700_000_000_000
RECORDS = [(b"k%d" % i, b"value-%d" % i * 20, [("h", b"x")], NOW - 1000 + i) for i in range(50)]


def _records(batch: bytes) -> list[tuple[int, bytes | None, bytes | None, object]]:
    return [(r.offset, r.key, r.value, r.headers) for r in decode_all(batch)]


def test_defaults_need_no_rewrite() -> None:
    assert not needs_rewrite(LogConfig())
    for changed in (
        {"compression.type": "zstd"},
        {"message.timestamp.type": "LogAppendTime"},
        {"message.timestamp.before.max.ms": "1000"},
        {"message.timestamp.after.max.ms": "1000"},
    ):
        assert needs_rewrite(LogConfig.from_properties(changed)), changed


def test_log_append_time_stamps_max_timestamp_and_the_bit_with_a_new_crc() -> None:
    batch = build_batch(RECORDS)
    cfg = LogConfig(message_timestamp_type="LogAppendTime")
    out, append_time = validate_for_leader(batch, cfg, NOW + 5)
    header = validate(out)  # the CRC checks out
    assert append_time == NOW + 5 and header.max_timestamp == NOW + 5
    assert header.attributes & TIMESTAMP_TYPE_BIT
    assert header.first_timestamp == read_header(batch).first_timestamp
    assert _records(out) == _records(batch)


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP, compression.LZ4])
@pytest.mark.parametrize("target", ["uncompressed", "gzip", "snappy", "lz4", "zstd"])
def test_a_batch_whose_codec_differs_is_recompressed(codec: int, target: str) -> None:
    batch = build_batch(RECORDS, codec=codec)
    cfg = LogConfig(compression_type=target)
    out, append_time = validate_for_leader(batch, cfg, NOW)
    header = validate(out)
    assert header.codec == {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[target]
    assert append_time == -1 and _records(out) == _records(batch)
    if header.codec == codec:
        assert out == batch  # the same codec: appended as sent


def test_recompression_and_log_append_time_together() -> None:
    cfg = LogConfig(compression_type="zstd", message_timestamp_type="LogAppendTime",
                    compression_zstd_level=19)  # fmt: skip
    out, _ = validate_for_leader(build_batch(RECORDS), cfg, NOW)
    header = validate(out)
    assert header.codec == compression.ZSTD and header.attributes & TIMESTAMP_TYPE_BIT
    assert header.max_timestamp == NOW


@pytest.mark.parametrize(
    "before, after, stamps, ok",
    [
        (1000, 1000, [NOW - 1000, NOW + 1000], True),
        (1000, 1000, [NOW - 1001, NOW], False),
        (1000, 1000, [NOW, NOW + 1001], False),
        (10, (1 << 63) - 1, [NOW + 10**9], True),
    ],
)
def test_timestamps_outside_the_bounds_are_invalid(
    before: int, after: int, stamps: list[int], ok: bool
) -> None:
    batch = build_batch([(None, b"v", None, ts) for ts in stamps])
    cfg = LogConfig(message_timestamp_before_max_ms=before, message_timestamp_after_max_ms=after)
    if ok:
        assert validate_for_leader(batch, cfg, NOW) == (batch, -1)
    else:
        with pytest.raises(InvalidTimestampError, match="out of range"):
            validate_for_leader(batch, cfg, NOW)


def test_log_append_time_ignores_the_bounds() -> None:
    batch = build_batch([(None, b"v", None, 5)])
    cfg = LogConfig(message_timestamp_type="LogAppendTime", message_timestamp_before_max_ms=1)
    assert validate(validate_for_leader(batch, cfg, NOW)[0]).max_timestamp == NOW


def test_a_corrupt_batch_is_never_given_a_new_crc() -> None:
    batch = bytearray(build_batch(RECORDS))
    batch[-1] ^= 0xFF
    with pytest.raises(InvalidBatchError, match="CRC"):
        validate_for_leader(bytes(batch), LogConfig(compression_type="gzip"), NOW)


@pytest.mark.parametrize("codec", [0, 4])
def test_a_compacted_topic_refuses_a_record_without_a_key(codec: int) -> None:
    cfg = LogConfig.from_properties({"cleanup.policy": "compact"})
    assert needs_rewrite(cfg)
    keyed = build_batch([(b"k", b"v", None, NOW), (b"k2", None, None, NOW)], codec=codec)
    assert validate_for_leader(keyed, cfg, NOW) == (keyed, -1)  # appended as it came
    mixed = build_batch([(b"k", b"v", None, NOW), (None, b"v", None, NOW)], codec=codec)
    with pytest.raises(InvalidRecordError, match="without a key"):
        validate_for_leader(mixed, cfg, NOW)
    delete = LogConfig.from_properties({"cleanup.policy": "delete"})
    assert not needs_rewrite(delete)


COMPACT = LogConfig.from_properties({"cleanup.policy": "compact"})
KEYLESS = "a compacted topic cannot accept a record without a key"


def _indexes(errors: Sequence[RecordError]) -> list[int]:
    return [e.batch_index for e in errors]


@pytest.mark.parametrize("codec", [compression.NONE, compression.ZSTD])
def test_every_keyless_record_is_named_and_the_batch_refused(codec: int) -> None:
    """librdkafka's 0011 test: 100 records, every tenth without a key (KIP-467)."""
    recs = [(None if i % 10 == 0 else b"k%d" % i, b"v", None, NOW) for i in range(100)]
    with pytest.raises(InvalidRecordsError) as refused:
        validate_for_leader(build_batch(recs, codec=codec), COMPACT, NOW)
    errors = refused.value.record_errors
    assert _indexes(errors) == list(range(0, 100, 10))
    assert {e.message for e in errors} == {KEYLESS}
    assert refused.value.code == InvalidRecordError.code
    assert refused.value.message == (
        f"10 of the batch's 100 records refused: record 0: {KEYLESS}; record 10: {KEYLESS}; "
        f"record 20: {KEYLESS}; and 7 more"
    )


def test_the_records_out_of_bounds_are_named_once_the_header_is() -> None:
    """Not compacted: the header's timestamps pass or fail the batch in O(1); a failing one
    is walked to name each record out of [now - before, now + after]."""
    cfg = LogConfig(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=500)
    stamps = [NOW, NOW - 1001, NOW - 1000, NOW + 501, NOW + 500, NOW - 5000]
    batch = build_batch([(b"k", b"v", None, ts) for ts in stamps], codec=compression.LZ4)
    with pytest.raises(InvalidTimestampsError) as refused:
        validate_for_leader(batch, cfg, NOW)
    errors = refused.value.record_errors
    assert _indexes(errors) == [1, 3, 5]
    low, high = NOW - 1000, NOW + 500
    assert errors[0].message == f"timestamp {NOW - 1001} is out of range [{low}, {high}]"
    assert refused.value.code == InvalidTimestampError.code
    assert refused.value.message.endswith(
        f"(message.timestamp.before.max.ms 1000 and after.max.ms 500 allow [{low}, {high}] "
        f"at {NOW})"
    )


def test_a_compacted_topic_checks_each_records_timestamp_and_timestamp_wins() -> None:
    """Walked anyway for the keys, every record's timestamp is judged, a record older than
    the batch's first included; one record, one error (the key first, as Kafka's);
    INVALID_TIMESTAMP when any timestamp is out of bounds."""
    cfg = LogConfig.from_properties(
        {"cleanup.policy": "compact", "message.timestamp.before.max.ms": "1000"}
    )
    recs = [(b"a", b"v", None, NOW), (b"b", b"v", None, NOW - 2000),
            (None, b"v", None, NOW - 2000), (None, b"v", None, NOW)]  # fmt: skip
    with pytest.raises(InvalidTimestampsError) as refused:
        validate_for_leader(build_batch(recs), cfg, NOW)
    errors = refused.value.record_errors
    assert _indexes(errors) == [1, 2, 3]
    assert [errors[1].message, errors[2].message] == [KEYLESS, KEYLESS]
    assert errors[0].message is not None and errors[0].message.startswith("timestamp")


def test_a_record_without_a_timestamp_is_not_judged() -> None:
    """-1 (NO_TIMESTAMP) is no CreateTime to bound, as in Kafka's validateTimestamp."""
    cfg = LogConfig.from_properties(
        {"cleanup.policy": "compact", "message.timestamp.before.max.ms": "1000"}
    )
    batch = build_batch([(b"k", b"v", None, -1)])
    assert validate_for_leader(batch, cfg, NOW) == (batch, -1)


def test_log_append_time_judges_no_timestamp_of_a_compacted_topic() -> None:
    cfg = LogConfig.from_properties({"cleanup.policy": "compact",
                                     "message.timestamp.type": "LogAppendTime",
                                     "message.timestamp.before.max.ms": "1"})  # fmt: skip
    out, append_time = validate_for_leader(build_batch([(b"k", b"v", None, 5)]), cfg, NOW)
    assert append_time == NOW and validate(out).max_timestamp == NOW
