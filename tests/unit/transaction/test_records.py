"""`__transaction_state` records: golden bytes written from Kafka's schemas, round trips."""

from __future__ import annotations

import contextlib
import struct
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.transaction.records import (
    TRANSACTION_STATE_TOPIC,
    TxnLogValue,
    TxnRecord,
    UnknownVersionError,
    build,
    decode,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from coordinator.transaction.states import State
from protocol.batch import decode_all
from protocol.errors import CorruptMessageError


def q(n: int) -> bytes:
    return struct.pack(">q", n)


ONGOING = TxnLogValue(1000, 5, 60_000, State.ONGOING, frozenset({("t", 2), ("t", 0)}),
                      2000, 1000, version=0)  # fmt: skip
# version 0: int16 version, int64 pid, int16 epoch, int32 timeout, int8 status,
# int32 topic count, (int16 len, topic, int32 id count, int32 ids), int64 update, int64 start
ONGOING_V0 = (
    b"\x00\x00" + q(1000) + b"\x00\x05" + b"\x00\x00\xea\x60" + b"\x01"
    + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00"
    + b"\x00\x00\x00\x02" + q(2000) + q(1000)
)  # fmt: skip
# version 1: compact array/string lengths (n + 1), an empty tag section after each partition
# entry, then the value's tags: 0 PreviousProducerId (int64), 3 NextProducerEpoch (int16)
ONGOING_V1 = (
    b"\x00\x01" + q(1000) + b"\x00\x05" + b"\x00\x00\xea\x60" + b"\x01"
    + b"\x02" + b"\x02t" + b"\x03" + b"\x00\x00\x00\x00\x00\x00\x00\x02" + b"\x00"
    + q(2000) + q(1000)
    + b"\x02" + b"\x00\x08" + q(999) + b"\x03\x02\x00\x06"
)  # fmt: skip


def test_topic_name() -> None:
    assert TRANSACTION_STATE_TOPIC == "__transaction_state"


def test_key_golden() -> None:
    assert encode_key("tx") == b"\x00\x00\x00\x02tx"
    assert decode_key(b"\x00\x00\x00\x02tx") == "tx"


def test_key_unknown_version() -> None:
    with pytest.raises(UnknownVersionError):
        decode_key(b"\x00\x01\x00\x02tx")


def test_value_v0_golden() -> None:
    assert encode_value(ONGOING) == ONGOING_V0
    assert decode_value(ONGOING_V0) == ONGOING


def test_value_v1_golden() -> None:
    value = TxnLogValue(1000, 5, 60_000, State.ONGOING, frozenset({("t", 0), ("t", 2)}), 2000,
                        1000, previous_producer_id=999, next_producer_epoch=6)  # fmt: skip
    assert encode_value(value) == ONGOING_V1
    assert decode_value(ONGOING_V1) == value


def test_empty_writes_null_partitions() -> None:
    empty = TxnLogValue(7, 0, 100, State.EMPTY, frozenset(), 5, -1)
    assert encode_value(empty) == (
        b"\x00\x01" + q(7) + b"\x00\x00" + b"\x00\x00\x00\x64" + b"\x00" + b"\x00"
        + q(5) + q(-1) + b"\x00"
    )  # fmt: skip
    v0 = TxnLogValue(7, 0, 100, State.EMPTY, frozenset(), 5, -1, version=0)
    assert encode_value(v0) == (
        b"\x00\x00" + q(7) + b"\x00\x00" + b"\x00\x00\x00\x64" + b"\x00"
        + b"\xff\xff\xff\xff" + q(5) + q(-1)
    )  # fmt: skip


def test_v0_drops_tagged_fields() -> None:
    value = TxnLogValue(1, 0, 1, State.EMPTY, frozenset(), 0, -1, 5, 6, 2, 3, version=0)
    back = decode_value(encode_value(value))
    assert back == TxnLogValue(1, 0, 1, State.EMPTY, frozenset(), 0, -1, version=0)


def test_unknown_tag_is_skipped() -> None:
    tags = b"\x00\x08" + q(999) + b"\x03\x02\x00\x06"
    assert ONGOING_V1.endswith(b"\x02" + tags)
    data = ONGOING_V1[: -len(tags) - 1] + b"\x03" + tags + b"\x05\x01\x07"  # a later tag 5
    value = decode_value(data)
    assert value is not None and value.previous_producer_id == 999


def test_tombstone() -> None:
    assert encode_value(None) is None
    assert decode(encode_key("gone"), None) == TxnRecord("gone", None)


@pytest.mark.parametrize(
    "data",
    [
        ONGOING_V1[:-1],  # cut short
        ONGOING_V1 + b"\x00",  # trailing byte
        b"\x00\x02" + ONGOING_V1[2:],  # unknown version
        ONGOING_V1[:16] + b"\x09" + ONGOING_V1[17:],  # unknown status
        b"",
    ],
)
def test_corrupt_values(data: bytes) -> None:
    with pytest.raises(CorruptMessageError):
        decode_value(data)


def test_key_required() -> None:
    with pytest.raises(CorruptMessageError):
        decode(None, ONGOING_V1)


def test_build_makes_one_batch() -> None:
    records = [TxnRecord("a", ONGOING), TxnRecord("b", None)]
    batch = build(records, 1234)
    decoded = [decode(r.key, r.value) for r in decode_all(batch)]
    assert decoded == records


def test_partition_for_matches_java() -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs gives 0
    assert partition_for("polygenelubricants", 50) == 0
    # "Hello World".hashCode() == -862545276: Math.abs, not & 0x7fffffff
    assert partition_for("Hello World", 50) == 862545276 % 50
    assert partition_for("hello", 50) == 99162322 % 50
    # a character outside the BMP is two UTF-16 code units: "😀" is d83d de00
    assert partition_for("\U0001f600", 1 << 30) == (0xD83D * 31 + 0xDE00) % (1 << 30)


STATES = st.sampled_from(list(State))
TPS = st.frozensets(st.tuples(st.text(max_size=8), st.integers(0, 2**31 - 1)), max_size=6)
I64 = st.integers(-(2**63), 2**63 - 1)
I16 = st.integers(-(2**15), 2**15 - 1)


@st.composite
def values(draw: st.DrawFn) -> TxnLogValue:
    state = draw(STATES)
    version = draw(st.sampled_from([0, 1]))
    parts = frozenset() if state is State.EMPTY else draw(TPS)
    value = TxnLogValue(draw(I64), draw(I16), draw(st.integers(-(2**31), 2**31 - 1)), state,
                        parts, draw(I64), draw(I64), version=version)  # fmt: skip
    if version == 0:
        return value
    return replace(value, previous_producer_id=draw(I64), next_producer_id=draw(I64),
                   client_txn_version=draw(I16), next_producer_epoch=draw(I16))  # fmt: skip


@given(values(), st.text(max_size=40))
def test_round_trip(value: TxnLogValue, transactional_id: str) -> None:
    record = decode(encode_key(transactional_id), encode_value(value))
    assert record == TxnRecord(transactional_id, value)


@given(st.binary(max_size=80))
def test_decode_never_crashes_otherwise(data: bytes) -> None:
    with contextlib.suppress(CorruptMessageError):
        decode_value(data)
