"""FrameDecoder and FrameReader: bad lengths are refused before any body is buffered, and kill
the decoder; FrameReader hands a large frame a buffer of its own."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.framing import (
    BIG_FRAME_BYTES,
    DEFAULT_MAX_FRAME_BYTES,
    BadFrameLengthError,
    FrameDecoder,
    FrameReader,
    FrameTooLargeError,
    encode_frame,
    frame_header,
)


def length(n: int) -> bytes:
    return struct.pack(">i", n)


def test_default_maximum_is_100_mib() -> None:
    assert DEFAULT_MAX_FRAME_BYTES == 100 * 1024 * 1024
    assert FrameDecoder().max_frame_bytes == DEFAULT_MAX_FRAME_BYTES


@pytest.mark.parametrize("bad", [0, -1, -(2**31)])
def test_non_positive_length_is_refused(bad: int) -> None:
    decoder = FrameDecoder()
    with pytest.raises(BadFrameLengthError):
        decoder.feed(length(bad) + b"x" * 100)
    assert decoder.buffered_bytes == 0


def test_huge_length_is_refused_before_buffering_the_body() -> None:
    decoder = FrameDecoder()  # 100 MiB maximum
    body_start = b"y" * 1_000_000  # what a hostile peer sends along with the length
    with pytest.raises(FrameTooLargeError):
        decoder.feed(length(2**31 - 1) + body_start)
    assert decoder.buffered_bytes == 0


def test_huge_length_arriving_byte_by_byte() -> None:
    decoder = FrameDecoder(max_frame_bytes=1024)
    header = length(1025)
    for i in range(3):
        assert decoder.feed(header[i : i + 1]) == []
        assert decoder.buffered_bytes == i + 1
    with pytest.raises(FrameTooLargeError):
        decoder.feed(header[3:] + b"z" * 5000)
    assert decoder.buffered_bytes == 0


def test_bad_length_after_good_frames_in_the_same_feed() -> None:
    decoder = FrameDecoder(max_frame_bytes=10)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(encode_frame(b"ok") + length(11) + b"q" * 100)
    assert decoder.buffered_bytes == 0


def test_the_maximum_itself_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_bytes=10)
    assert decoder.feed(encode_frame(b"0123456789")) == [b"0123456789"]
    with pytest.raises(FrameTooLargeError):
        decoder.feed(encode_frame(b"0123456789A"))


@pytest.mark.parametrize("bad", [length(0), length(-5), length(1 << 20)])
def test_decoder_is_dead_after_an_error(bad: bytes) -> None:
    decoder = FrameDecoder(max_frame_bytes=1000)
    with pytest.raises(ProtocolError):
        decoder.feed(bad)
    for good in (encode_frame(b"fine"), b""):
        with pytest.raises(ProtocolError, match="after a framing error"):
            decoder.feed(good)


def test_partial_body_is_buffered_only_as_it_arrives() -> None:
    decoder = FrameDecoder(max_frame_bytes=1000)
    assert decoder.feed(length(1000) + b"a" * 10) == []
    assert decoder.buffered_bytes == 10
    assert decoder.feed(b"a" * 989) == []
    assert decoder.buffered_bytes == 999
    assert decoder.feed(b"a" + frame_header(2)) == [b"a" * 1000]
    assert decoder.buffered_bytes == 0  # the next header is read and remembered
    assert decoder.feed(b"bc") == [b"bc"]


@given(
    sizes=st.lists(st.sampled_from([1, 7, 300, BIG_FRAME_BYTES, BIG_FRAME_BYTES + 1, 150_000]),
                   max_size=8),
    cuts=st.lists(st.integers(min_value=1, max_value=90_000), min_size=1, max_size=6),
    as_bytearray=st.booleans(),
)  # fmt: skip
def test_the_decoder_gives_back_every_frame_whatever_the_reads(
    sizes: list[int], cuts: list[int], as_bytearray: bool
) -> None:
    bodies = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    stream = b"".join(encode_frame(b) for b in bodies)
    decoder = FrameDecoder()
    frames: list[bytes] = []
    pos = i = 0
    while pos < len(stream):
        piece = stream[pos : pos + cuts[i % len(cuts)]]
        frames += decoder.feed(bytearray(piece) if as_bytearray else piece)
        pos, i = pos + len(piece), i + 1
    assert frames == bodies
    assert all(type(f) is bytes for f in frames)
    assert decoder.buffered_bytes == 0


def test_a_big_body_is_kept_as_the_pieces_it_came_in_and_joined_once() -> None:
    """Not appended to a growing buffer piece by piece and cut out of it after (two copies);
    a fed bytearray, which its owner may reuse, is copied."""
    decoder = FrameDecoder()
    body = bytes(range(256)) * 1024  # 256 KiB
    wire = encode_frame(body) + encode_frame(b"next")
    first, second, third = wire[:70_000], bytearray(wire[70_000:200_000]), wire[200_000:]
    assert decoder.feed(first) == []
    assert decoder.feed(second) == []
    assert decoder.buffered_bytes == 200_000 - 4 and not decoder._buf
    assert decoder._parts[0].obj is first  # a view of the caller's bytes, no copy
    assert type(decoder._parts[1]) is bytes  # the bytearray's bytes, copied
    second[:] = b"\0" * len(second)  # its owner reuses it: nothing kept changes
    assert decoder.feed(third) == [body, b"next"]
    assert decoder.buffered_bytes == 0 and not decoder._parts


def test_feeding_nothing() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"") == []
    assert decoder.buffered_bytes == 0


def test_maximum_must_be_positive() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(max_frame_bytes=0)


# ----- FrameReader: the socket writes into the buffers it hands out ----------------------------


def _deliver(reader: FrameReader, stream: bytes, chunks: list[int]) -> list[bytes]:
    """Write `stream` through the reader's buffers, at most chunks[i] bytes per read."""
    frames: list[bytes] = []
    pos, i = 0, 0
    while pos < len(stream):
        buf = reader.get_buffer()
        n = min(len(buf), chunks[i % len(chunks)], len(stream) - pos)
        buf[:n] = stream[pos : pos + n]
        pos += n
        i += 1
        frames.extend(bytes(f) for f in reader.buffer_updated(n))
    return frames


@given(
    bodies=st.lists(st.binary(min_size=1, max_size=300), max_size=30),
    chunks=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=10),
)
def test_the_reader_gives_back_every_frame_whatever_the_reads(
    bodies: list[bytes], chunks: list[int]
) -> None:
    reader = FrameReader(max_frame_bytes=1000, recv_bytes=128, big_frame_bytes=32)
    stream = b"".join(encode_frame(b) for b in bodies)
    assert _deliver(reader, stream, chunks) == bodies
    assert reader.buffered_bytes == 0


def test_a_big_frame_is_read_straight_into_the_buffer_it_is_handed_back_in() -> None:
    reader = FrameReader(max_frame_bytes=1 << 20, recv_bytes=1024, big_frame_bytes=100)
    body = bytes(range(256)) * 40  # 10,240 bytes
    first = encode_frame(b"small") + encode_frame(body)[:50]
    buf = reader.get_buffer()
    buf[: len(first)] = first
    assert reader.buffer_updated(len(first)) == [b"small"]
    rest = reader.get_buffer()
    home = rest.obj  # the frame's own buffer: no copy of what follows
    assert len(rest) == len(body) - 46 and reader.buffered_bytes == 46
    rest[:] = body[46:]
    (frame,) = reader.buffer_updated(len(rest))
    assert frame is home and frame == body
    assert reader.buffered_bytes == 0 and reader.get_buffer().obj is not home


@pytest.mark.parametrize(("bad", "error"), [(0, BadFrameLengthError), (-3, BadFrameLengthError),
                                            (1001, FrameTooLargeError)])  # fmt: skip
def test_the_reader_refuses_a_bad_length_before_reading_its_body(
    bad: int, error: type[ProtocolError]
) -> None:
    reader = FrameReader(max_frame_bytes=1000, recv_bytes=256, big_frame_bytes=64)
    data = encode_frame(b"ok") + length(bad) + b"x" * 100
    buf = reader.get_buffer()
    buf[: len(data)] = data
    with pytest.raises(error):
        reader.buffer_updated(len(data))
    assert reader.buffered_bytes == 0
    with pytest.raises(ProtocolError, match="after a framing error"):
        reader.get_buffer()


def test_the_reader_keeps_room_for_large_reads() -> None:
    """With less than big_frame_bytes of room left, what is left moves to the front: the
    socket is never handed a sliver of the receive buffer."""
    reader = FrameReader(max_frame_bytes=1000, recv_bytes=256, big_frame_bytes=64)
    stream = encode_frame(b"a" * 196) + encode_frame(b"b" * 40)  # 200 + 44 bytes
    buf = reader.get_buffer()
    buf[:230] = stream[:230]  # the first frame and 30 bytes of the second
    assert reader.buffer_updated(230) == [b"a" * 196]
    rest = reader.get_buffer()
    assert len(rest) == 256 - 30  # moved to the front, not the 26 bytes left at the end
    rest[:14] = stream[230:]
    assert reader.buffer_updated(14) == [b"b" * 40]


def _big_frame(reader: FrameReader, body: bytes) -> bytes | bytearray | memoryview:
    """`body` as one big frame through `reader`: its header and 10 bytes, then the rest."""
    data = encode_frame(body)
    buf = reader.get_buffer()
    buf[:14] = data[:14]
    assert reader.buffer_updated(14) == []
    rest = reader.get_buffer()
    rest[:] = data[14:]
    (frame,) = reader.buffer_updated(len(rest))
    return frame


def test_a_big_frames_buffer_is_used_again_once_nothing_refers_to_it() -> None:
    reader = FrameReader(max_frame_bytes=1 << 20, recv_bytes=1024, big_frame_bytes=100)
    first = _big_frame(reader, b"a" * 5000)
    assert type(first) is bytearray and first == b"a" * 5000
    home = id(first)
    view = memoryview(first)[10:20]  # a view of it is held: the next frame gets another buffer
    del first
    second = _big_frame(reader, b"b" * 4000)
    assert bytes(view) == b"a" * 10 and bytes(second) == b"b" * 4000
    del view, second
    third = _big_frame(reader, b"c" * 3000)  # the smallest free spare long enough: second's
    assert type(third) is memoryview and bytes(third) == b"c" * 3000
    assert len(third.obj) == 4000
    fourth = _big_frame(reader, b"d" * 5000)  # third is held: the first frame's buffer
    assert id(fourth) == home and fourth == b"d" * 5000 and bytes(third) == b"c" * 3000
