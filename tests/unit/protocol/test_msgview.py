"""protocol/msgview.py: msgpack decoded as msgpack does, large bins as views of the body; and
codec's `response_head` / `response_body` on top of it."""

from __future__ import annotations

import contextlib
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.codec import (
    RECORD_VIEWS_FROM_FRAME_BYTES,
    response_body,
    response_head,
)
from protocol.errors import OdradekError, ProtocolError
from protocol.msgview import envelope_head, unpack_views

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=40) | st.binary(max_size=300),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=30,
)  # fmt: skip


def _plain(value: Any) -> Any:
    """`value` with every view turned into bytes."""
    if type(value) is memoryview:
        return value.tobytes()
    if type(value) is list:
        return [_plain(v) for v in value]
    if type(value) is dict:
        return {k: _plain(v) for k, v in value.items()}
    return value


@settings(max_examples=300, deadline=None)
@given(values)
def test_decodes_as_msgpack_does(value: Any) -> None:
    packed = msgpack.packb(value, use_bin_type=True)
    expected = msgpack.unpackb(packed, raw=False, strict_map_key=True)
    assert unpack_views(packed, 1 << 30) == expected  # no views: the same values and types
    assert _plain(unpack_views(packed, 16)) == expected


def test_large_bins_are_views_of_the_body_and_small_ones_copies() -> None:
    big, small = bytes(range(256)) * 400, b"abc"
    body = bytearray(msgpack.packb([1, big, small, {"r": big}], use_bin_type=True))
    value = unpack_views(body, 1024)
    assert type(value[1]) is memoryview and value[1].readonly and value[1] == big
    assert type(value[2]) is bytes and value[2] == small
    assert type(value[3]["r"]) is memoryview
    at = bytes(body).index(big)
    body[at] ^= 0xFF  # a view sees the body's bytes, not a copy of them
    assert value[1][0] == big[0] ^ 0xFF


@given(st.binary(max_size=64))
def test_garbage_raises_protocol_error_only(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        unpack_views(data, 1)


@pytest.mark.parametrize(
    "data",
    [
        b"\xc6\xff\xff\xff\xff",  # a bin of 4 GiB in five bytes
        b"\xdd\xff\xff\xff\xff",  # an array of 4 Gi elements
        b"\x91" * 100 + b"\xc0",  # nested past the limit
        b"\x81\x01\x02",  # an integer map key
        b"\xc7\x01\x05\x00",  # ext
        b"\x01\x02",  # bytes after the value
        b"\xa3ab",  # a str cut short
    ],
)
def test_hostile_bodies_are_refused(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        unpack_views(data, 1)


def test_response_head_and_body() -> None:
    frame = msgpack.packb([7, 0, [b"x" * RECORD_VIEWS_FROM_FRAME_BYTES, 5]], use_bin_type=True)
    corr, code, at = response_head(frame)
    assert (corr, code) == (7, 0)
    viewed = response_body(frame, at, record_views=True)
    copied = response_body(frame, at, record_views=False)
    assert type(viewed[0]) is memoryview and type(copied[0]) is bytes
    assert viewed[0] == copied[0] and viewed[1] == copied[1] == 5


def test_small_frames_are_decoded_by_msgpack_even_with_views() -> None:
    frame = msgpack.packb([3, 0, [b"y" * 2000]], use_bin_type=True)
    _, _, at = response_head(frame)
    assert type(response_body(frame, at, record_views=True)[0]) is bytes


@pytest.mark.parametrize(
    "envelope", [[1, 0], ["1", 0, None], [1, "0", None], [1, 0.5, None], {"a": 1}, 5]
)
def test_bad_envelopes(envelope: Any) -> None:
    with pytest.raises(ProtocolError):
        response_head(msgpack.packb(envelope))
    with pytest.raises(OdradekError):
        envelope_head(b"")
