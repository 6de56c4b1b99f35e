"""Envelopes: what a request or response frame that is valid msgpack but wrong looks like."""

from __future__ import annotations

import msgpack
import pytest

from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.codec import (
    decode_request,
    decode_response,
    encode_error_response,
    encode_request,
    peek_correlation_id,
    split_response,
)
from protocol.errors import ProtocolError, UnknownServerError, UnsupportedVersionError

REQUEST = MetadataRequest(["a"])


def body(value: object) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def test_unsupported_version() -> None:
    frame = encode_request(REQUEST, correlation_id=11, api_version=1)[4:]
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(frame)
    assert info.value.code == 35
    assert peek_correlation_id(frame) == 11


@pytest.mark.parametrize(
    "envelope",
    [
        [999, 0, 1, None, [None, False]],  # unknown api key
        [3, 0, 1, None],  # four fields
        [3, 0, 1, None, [None, False], 0],  # six fields
        [True, 0, 1, None, [None, False]],  # bool api key
        [3, 0, "1", None, [None, False]],  # str correlation id
        [3, 0, 1, 5, [None, False]],  # int client id
        [3, 0, 1, b"c", [None, False]],  # bytes client id
        {"api_key": 3},
        3,
    ],
)
def test_bad_request_envelopes(envelope: object) -> None:
    with pytest.raises(ProtocolError):
        decode_request(body(envelope))


def test_trailing_bytes_are_refused() -> None:
    frame = encode_request(REQUEST, correlation_id=1)[4:]
    with pytest.raises(ProtocolError, match="msgpack"):
        decode_request(frame + b"\x00")
    assert decode_request(frame).body == REQUEST


def test_peek_correlation_id_of_garbage() -> None:
    assert peek_correlation_id(b"\xc1") is None
    assert peek_correlation_id(body([3, 0])) is None
    assert peek_correlation_id(body([3, 0, "x"])) is None
    assert peek_correlation_id(body([3, 0, 77, "and", "anything"])) == 77


@pytest.mark.parametrize(
    "envelope", [[1, 0], [1, 0, None, None], ["1", 0, None], [1, "0", None], [1, 0.5, None]]
)
def test_bad_response_envelopes(envelope: object) -> None:
    with pytest.raises(ProtocolError):
        split_response(body(envelope))
    with pytest.raises(ProtocolError):
        decode_response(body(envelope), MetadataResponse)


def test_error_response_with_an_unknown_code() -> None:
    frame = encode_error_response(5, 4242)[4:]
    assert split_response(frame) == (5, 4242, None)
    with pytest.raises(UnknownServerError):
        decode_response(frame, MetadataResponse)
