"""Fuzzing every decoder a peer's bytes reach: only odradek's own typed errors may come out.

Random bytes and mutated valid bytes (bit flips, truncations, insertions, overwrites) go to the
frame decoder, the request decoder, the response decoders and the batch parser. Anything other
than an OdradekError subclass (TypeError, IndexError, struct.error, a msgpack exception, an
aiokafka exception, RecursionError, MemoryError...) fails the test. Hostile msgpack (huge
declared lengths, deep nesting), hostile v2 records (huge varint lengths) and compression bombs
of every codec must be refused without allocating. SASL/SCRAM tokens (issue 25) get
SASL_AUTHENTICATION_FAILED and nothing else, whatever their bytes or size.
"""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable
from typing import Any

import crc32c
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import batch, compression
from protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
    split_response,
)
from protocol.errors import OdradekError, ProtocolError
from protocol.framing import FrameDecoder
from protocol.registry import all_specs
from protocol.scram import MECHANISMS as SCRAM_MECHANISMS
from protocol.scram import ScramClient, ScramFailure, ScramServer, make_credential
from protocol.scram import mechanism as scram_mechanism
from tests.unit.protocol.strategies import message_strategy

SPECS = all_specs()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def survives(fn: Callable[..., Any], *args: Any) -> None:
    """Call fn; an OdradekError is an acceptable answer to bad bytes, anything else is a bug."""
    try:
        result = fn(*args)
        if hasattr(result, "__next__"):
            list(result)
    except OdradekError:
        pass


# ----- mutations ---------------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "overwrite", "delete"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            i = min(at, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "overwrite":
            chunk = draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x00", b"\xdd", b"\xc6", b"\x7f"]))
            data[at : at + len(chunk)] = chunk
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


def request_frames() -> st.SearchStrategy[bytes]:
    return st.one_of(
        [message_strategy(s.request).map(lambda m: encode_request(m, 7, "c")[4:]) for s in SPECS]
    )


def response_frames() -> st.SearchStrategy[bytes]:
    return st.one_of(
        [message_strategy(s.response).map(lambda m: encode_response(7, m)[4:]) for s in SPECS]
    )


RECORD = st.tuples(
    st.none() | st.binary(max_size=8),
    st.none() | st.binary(max_size=16),
    st.none() | st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4))),
    st.integers(0, 2**40),
)
CODECS = sorted(batch.CODECS.values())
BATCHES = st.builds(
    batch.build_batch,
    st.lists(RECORD, min_size=1, max_size=5),
    codec=st.sampled_from(CODECS),
)


def reseal(data: bytes) -> bytes:
    """Fix the CRC (and batch length) after a mutation, so the records decoder sees it."""
    if len(data) < batch.HEADER_BYTES:
        return data
    out = bytearray(data)
    struct.pack_into(">i", out, 8, len(out) - batch.LENGTH_PREFIX_BYTES)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[batch.CRC_START :])))
    return bytes(out)


# ----- the targets -------------------------------------------------------------------------


def feed_all(data: bytes, split: int) -> None:
    decoder = FrameDecoder(max_frame_bytes=1 << 16)
    for i in range(0, len(data), split):
        try:
            for frame in decoder.feed(data[i : i + split]):
                survives(decode_request, frame)
        except ProtocolError:
            with pytest.raises(ProtocolError):
                decoder.feed(b"\x00\x00\x00\x01x")  # dead after a framing error
            return


def all_request_and_response_decoders(data: bytes) -> None:
    survives(decode_request, data)
    peek_correlation_id(data)
    survives(split_response, data)
    for spec in SPECS:
        survives(decode_response, data, spec.response)


def all_batch_parsers(data: bytes) -> None:
    survives(batch.read_header, data)
    survives(batch.peek_offset_and_length, data)
    survives(batch.validate, data)
    survives(batch.validate, data, 0, 64)
    survives(batch.iter_batches, data)
    survives(batch.iter_batches, data, False)
    survives(batch.decode_records, data)
    survives(batch.decode_records, data, 0, 1000)
    survives(batch.decode_all, data)


@FUZZ
@given(data=st.binary(max_size=200), split=st.integers(1, 64))
def test_random_bytes(data: bytes, split: int) -> None:
    feed_all(data, split)
    all_request_and_response_decoders(data)
    all_batch_parsers(data)


@FUZZ
@given(data=mutated(request_frames()), split=st.integers(1, 64))
def test_mutated_requests(data: bytes, split: int) -> None:
    all_request_and_response_decoders(data)
    feed_all(struct.pack(">i", len(data)) + data, split)


@FUZZ
@given(data=mutated(response_frames()))
def test_mutated_responses(data: bytes) -> None:
    all_request_and_response_decoders(data)


@FUZZ
@given(data=mutated(BATCHES))
def test_mutated_batches(data: bytes) -> None:
    all_batch_parsers(data)
    all_batch_parsers(reseal(data))
    all_batch_parsers(data + data)


MSGPACK_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats()
    | st.text(max_size=6) | st.binary(max_size=6),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)  # fmt: skip


# ----- hand-made v2 records ------------------------------------------------------------------


def varint(n: int) -> bytes:
    """Kafka's varint/varlong: zigzag, then LEB128 (any n: a too-large one is hostile input)."""
    v, out = (n << 1) ^ (n >> 63) if n >= -(2**63) else -n, bytearray()
    v &= (1 << 70) - 1
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def record(
    offset_delta: int = 0,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    headers: list[tuple[bytes, bytes | None]] | None = None,
    ts_delta: int = 0,
    raw_tail: bytes = b"",
    length_fix: int = 0,
) -> bytes:
    """One record, each field given as bytes so that any of them can be wrong."""
    body = b"\x00" + varint(ts_delta) + varint(offset_delta) + field(key) + field(value)
    body += varint(len(headers or []))
    for hk, hv in headers or []:
        body += field(hk) + field(hv)
    body += raw_tail
    return varint(len(body) + length_fix) + body


def sealed(records: bytes, count: int, codec: int = batch.CODEC_NONE) -> bytes:
    """A batch whose header and CRC are right for `records`, whatever they hold."""
    payload = compression.compress(codec, records) if codec else records
    return batch._assemble(payload, count, 0, 0, 0, codec, -1, -1, -1)


FIELD_BYTES = st.none() | st.binary(max_size=6)
RECORD_FIELDS = st.builds(
    record,
    offset_delta=st.integers(-2, 3),
    key=FIELD_BYTES,
    value=FIELD_BYTES,
    headers=st.none() | st.lists(st.tuples(st.binary(max_size=4), FIELD_BYTES), max_size=2),
    ts_delta=st.integers(-(2**63), 2**63 - 1),
    raw_tail=st.binary(max_size=3),
    length_fix=st.integers(-3, 3),
)
VARINTS = st.integers(-(2**64), 2**64).map(varint)


@FUZZ
@given(
    parts=st.lists(RECORD_FIELDS | VARINTS | st.binary(max_size=12), min_size=1, max_size=5),
    count=st.integers(1, 6),
    codec=st.sampled_from(CODECS),
)
def test_well_sealed_batches_with_arbitrary_records(
    parts: list[bytes], count: int, codec: int
) -> None:
    try:
        _, records = batch.decode_records(sealed(b"".join(parts), count, codec))
    except batch.InvalidBatchError:
        return
    assert len(records) == count
    for i, r in enumerate(records):  # whatever decodes has the declared types
        assert r.offset == i and type(r.timestamp) is int
        assert r.key is None or type(r.key) is bytes
        assert r.value is None or type(r.value) is bytes
        assert r.headers is None or all(
            type(k) is str and (v is None or type(v) is bytes) for k, v in r.headers
        )


def test_malformed_records_are_refused() -> None:
    good = record(headers=[(b"h", b"x")])
    assert batch.decode_records(sealed(good, 1))[1][0].headers == [("h", b"x")]
    for name, records, count in [
        ("offset delta 1 for record 0", record(offset_delta=1), 1),
        ("offset deltas repeat", good + record(offset_delta=0), 2),
        ("length longer than the fields", record(length_fix=1), 1),
        ("length shorter than the fields", record(length_fix=-1), 1),
        ("bytes after the last record", good + b"\x00", 1),
        ("fewer records than counted", good, 2),
        ("more records than counted", good + record(offset_delta=1), 1),
        ("key past the end", record(key=b"k")[:-5], 1),
        ("header key null", record(headers=[(None, b"x")]), 1),  # type: ignore[list-item]
        ("header key not UTF-8", record(headers=[(b"\xff\xfe", b"x")]), 1),
        ("negative header count", record()[:-1] + varint(-1), 1),
        ("varint longer than 10 bytes", b"\x80" * 11 + b"\x01", 1),
        ("varint running off the end", b"\x80\x80\x80", 1),
        ("empty records", b"", 1),
    ]:
        with pytest.raises(batch.InvalidBatchError, match=r"record|offset"):
            batch.decode_records(sealed(records, count))
        assert name


@pytest.mark.parametrize("length", [2**31, 2**62, 2**63 - 1, 2**63 - 100])
def test_hostile_lengths_do_not_allocate(length: int) -> None:
    """(A negative key or value length other than -1 reads as null, as in Kafka's reader.)"""
    for where in ("key", "value", "header key", "header value", "header count"):
        body = b"\x00\x00\x00" + field(b"k")
        if where == "key":
            body = b"\x00\x00\x00" + varint(length) + b"abc"
        elif where == "value":
            body += varint(length) + b"abc"
        elif where == "header count":
            body += field(b"v") + varint(length) + field(b"h") + field(b"x")
        else:
            body += field(b"v") + varint(1)
            body += varint(length) + b"h" if where == "header key" else field(b"h") + varint(length)
        bad = sealed(varint(len(body)) + body, 1)
        with pytest.raises(batch.InvalidBatchError):
            batch.decode_records(bad)
        assert peak_bytes(lambda b=bad: batch.decode_records(b)) < 256 * 1024, where


@FUZZ
@given(value=MSGPACK_VALUES, envelope=st.integers(0, 3))
def test_well_formed_msgpack_of_the_wrong_shape(value: Any, envelope: int) -> None:
    if envelope == 1:
        value = [0, 0, 1, None, value]
    elif envelope == 2:
        value = [1, 0, value]
    elif envelope == 3:
        value = [3, 0, 1, "c", [value, False]]
    all_request_and_response_decoders(msgpack.packb(value, use_bin_type=True))


# ----- hostile msgpack ---------------------------------------------------------------------

BOMBS = {
    "array32": b"\xdd\xff\xff\xff\xff",
    "map32": b"\xdf\xff\xff\xff\xff",
    "bin32": b"\xc6\xff\xff\xff\xff",
    "str32": b"\xdb\xff\xff\xff\xff",
    "ext32": b"\xc9\xff\xff\xff\xff\x01",
    "envelope_array32": b"\x95\x00\x00\x01\xc0\xdd\xff\xff\xff\xff",
    "nested_array16": b"\x95\x00\x00\x01\xc0" + b"\xdc\xff\xff" * 30,
}


def peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        survives(fn)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("bomb", list(BOMBS.values()), ids=list(BOMBS))
def test_msgpack_bombs_do_not_allocate(bomb: bytes) -> None:
    for fn in (
        lambda: decode_request(bomb),
        lambda: split_response(bomb),
        lambda: peek_correlation_id(bomb),
        lambda: batch.decode_records(sealed(bomb, 1)),
    ):
        with pytest.raises(OdradekError):
            result = fn()
            if result is None:  # peek_correlation_id answers None rather than raising
                raise ProtocolError("no correlation id")
        assert peak_bytes(fn) < 256 * 1024


@pytest.mark.parametrize("depth", [100, 2000, 100_000])
def test_deep_nesting_is_a_protocol_error(depth: int) -> None:
    deep = b"\x91" * depth + b"\xc0"
    for body in (deep, b"\x95\x03\x00\x01\xc0\x92" + deep + b"\xc2"):
        with pytest.raises(ProtocolError):
            decode_request(body)
        with pytest.raises(ProtocolError):
            split_response(body)
        with pytest.raises(ProtocolError):
            decode_response(body, SPECS[0].response)
    with pytest.raises(batch.InvalidBatchError):
        batch.decode_records(sealed(deep, 1))


BOMB_CODECS = [c for c in CODECS if c != batch.CODEC_NONE]


@pytest.mark.parametrize("codec", BOMB_CODECS, ids=[compression.NAMES[c] for c in BOMB_CODECS])
def test_compression_bomb_is_refused(codec: int) -> None:
    bomb = sealed(record(key=None, value=b"\x00" * 2_000_000), 1, codec)
    assert len(bomb) < 120_000  # snappy tops out near 21:1; the others go far beyond
    with pytest.raises(batch.InvalidBatchError, match="inflate"):
        batch.decode_records(bomb, max_records_bytes=100_000)
    assert peak_bytes(lambda: batch.decode_records(bomb, max_records_bytes=100_000)) < 1_000_000
    assert batch.decode_records(bomb)[1][0].value == b"\x00" * 2_000_000  # within the default


def test_a_huge_zstd_bomb_costs_the_bound_only() -> None:
    bomb = sealed(compression.compress(batch.CODEC_ZSTD, bytes(1 << 30)), 1)  # 1 GiB in ~32 KiB
    bomb = batch._assemble(bomb[batch.HEADER_BYTES :], 1, 0, 0, 0, batch.CODEC_ZSTD, -1, -1, -1)
    assert len(bomb) < 64 * 1024
    with pytest.raises(batch.InvalidBatchError, match="inflate"):
        batch.decode_records(bomb, max_records_bytes=1 << 20)


@pytest.mark.parametrize("codec", BOMB_CODECS, ids=[compression.NAMES[c] for c in BOMB_CODECS])
def test_truncated_or_padded_compression_is_refused(codec: int) -> None:
    built = batch.build_batch([(b"k", bytes(range(256)) * 4, None, 1)], codec=codec)
    for bad in (built[:-6], built + b"junk", built[:61] + bytes(8) + built[69:]):
        with pytest.raises(batch.InvalidBatchError, match=r"decompress|decode"):
            batch.decode_records(reseal(bad))


def test_truncated_gzip_is_refused() -> None:
    built = batch.build_batch([(b"k", b"v" * 100, None, 1)], codec=batch.CODEC_GZIP)
    with pytest.raises(batch.InvalidBatchError, match="truncated"):
        batch.decode_records(reseal(built[:-6]))
    with pytest.raises(batch.InvalidBatchError, match="garbage"):
        batch.decode_records(reseal(built + b"junk"))


# ----- SASL/SCRAM tokens (issue 25): the server's end never breaks, never echoes without bound --
#
# A SaslAuthenticate token is whatever the peer sent. The SCRAM server must refuse garbage,
# huge and non-UTF-8 client-first messages and client-finals with a wrong nonce or proof with
# SASL_AUTHENTICATION_FAILED (ScramFailure) only, and its message (which goes back to the
# client and, once a minute per peer, to the broker's log) must stay bounded whatever the
# token's size.

SCRAM_MESSAGE_MAX_CHARS = 4096  # a client's token may be megabytes; the error line may not
SCRAM_PASSWORD = "fuzz-secret"


def scram_pair(mech_name: str) -> tuple[ScramClient, ScramServer, Any]:
    mech = scram_mechanism(mech_name)
    credential = make_credential(mech, SCRAM_PASSWORD, mech.min_iterations)
    return ScramClient(mech, "fuzz", SCRAM_PASSWORD), ScramServer(mech), credential


def scram_refuses(fn: Callable[[], Any]) -> str | None:
    """fn raises ScramFailure (its message returned) or succeeds (None); nothing else."""
    try:
        fn()
    except ScramFailure as exc:
        assert SCRAM_PASSWORD not in exc.message
        return exc.message
    return None


SCRAM_FIRST_GARBAGE = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(str.encode),
    mutated(st.just(b"n,,n=fuzz,r=abcdefghijklmnop")),
    st.builds(lambda n: b"n,,n=fuzz,r=" + b"A" * n, st.integers(0, 2_000_000)),  # huge
    st.builds(lambda n: b"y,,n=fuzz,r=" + b"A" * n, st.integers(0, 2_000_000)),  # huge, bad
    st.builds(lambda b: b"n,,n=" + b + b",r=x", st.binary(min_size=1, max_size=40)),  # non-UTF-8
)


@FUZZ
@given(mech=st.sampled_from(sorted(SCRAM_MECHANISMS)), token=SCRAM_FIRST_GARBAGE)
def test_scram_client_first_garbage_is_refused(mech: str, token: bytes) -> None:
    _client, server, credential = scram_pair(mech)
    scram_refuses(lambda: server.respond(token, lambda _user: credential))


@FUZZ
@given(mech=st.sampled_from(sorted(SCRAM_MECHANISMS)), data=st.data())
def test_scram_client_final_garbage_wrong_nonce_or_proof_is_refused(
    mech: str, data: st.DataObject
) -> None:
    client, server, credential = scram_pair(mech)
    server_first = server.respond(client.client_first(), lambda _user: credential)
    good = client.client_final(server_first)
    token = data.draw(
        st.one_of(
            mutated(st.just(good)),
            st.binary(max_size=300),
            st.just(good.replace(b",r=", b",r=X")),  # a nonce that is not the server's
            st.just(good[: good.index(b",p=")] + b",p=" + b"A" * 88),  # a wrong proof
            st.just(good + b"\xff" * 1_000_000),  # huge, not UTF-8
        ),
        label="client-final",
    )
    if token == good:
        return
    scram_refuses(lambda: server.respond(token, lambda _user: credential))
    assert not server.complete


@pytest.mark.parametrize("which", ["client_first", "client_final"])
def test_scram_failure_message_stays_bounded_for_a_huge_token(which: str) -> None:
    client, server, credential = scram_pair("SCRAM-SHA-512")
    huge = b"A" * 1_000_000
    if which == "client_final":
        server.respond(client.client_first(), lambda _user: credential)
        token = b"c=biws,r=" + huge
    else:
        token = b"y,,n=fuzz,r=" + huge + b",x"
    message = scram_refuses(lambda: server.respond(token, lambda _user: credential))
    assert message is not None
    assert len(message) <= SCRAM_MESSAGE_MAX_CHARS, f"a {len(message)}-character message"
