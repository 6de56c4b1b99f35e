"""The compression codecs of Kafka's record batch v2, each with a bound on how far it inflates.

A batch's attributes (bits 0-2) name the codec of its records section, everything after the
61-byte header (protocol/batch.py); the header itself is never compressed. The formats are what
Kafka's Java client writes and reads:

    codec  name    records section
        0  none    the records as they are
        1  gzip    a gzip stream (RFC 1952), written at level 1 (speed); a zlib stream is read too
        2  snappy  xerial framing: the 16-byte header 82 'SNAPPY' 00 | int32 version 1 |
                   int32 compat 1, then blocks of int32 length + one raw snappy block, each of at
                   most 32 KiB uncompressed; a bare raw snappy block is read too
        3  lz4     one LZ4 frame of independent blocks (KIP-57), no content checksum
        4  zstd    one zstd frame, level 3 (Kafka's default)

gzip is the standard library's zlib; snappy, lz4 and zstd are cramjam's Rust bindings (the
library aiokafka's codec module uses).

`decompress(codec, data, max_bytes)` never produces more than `max_bytes`, whatever the input
claims: gzip inflates with zlib's max_length; snappy checks each block's declared length
before inflating it; lz4 and zstd inflate into a buffer of fixed size (a quarter of the way
there at first, 4x larger on each retry up to max_bytes + 1), which the decoder cannot overrun:
a bomb costs at most max_bytes of memory and the work of writing it. Every failure is a
`CodecError`; the batch layer turns it into the batch's own error.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

GZIP_LEVEL = 1
LZ4_LEVEL = 9  # Kafka's default (KIP-390)
ZSTD_LEVEL = 3  # Kafka's default (KIP-390)
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_BYTES = 32 * 1024
_BLOCK_LENGTH = struct.Struct(">i")
_FIRST_GUESS_MIN_BYTES = 64 * 1024
_OUTPUT_FULL = "failed to write whole buffer"  # what cramjam's *_into say when out of room

Buffer = bytes | bytearray | memoryview


class CodecError(ValueError):
    """Bytes that do not decompress, or that would inflate past the bound."""


def compress(codec: int, data: Buffer, level: int | None = None) -> bytes:
    """`data` compressed as `codec` writes it (see the module docstring); `level` (gzip,
    lz4 and zstd: a topic's compression.<codec>.level) replaces the codec's default level."""
    if codec == GZIP:
        gz_level = GZIP_LEVEL if level is None else level  # -1: zlib's default (6)
        gz = zlib.compressobj(gz_level, zlib.DEFLATED, 31)  # wbits 31: gzip header, CRC-32
        return gz.compress(data) + gz.flush()
    if codec == SNAPPY:
        view = memoryview(data)
        parts = [XERIAL_HEADER]
        for at in range(0, len(view), XERIAL_BLOCK_BYTES):
            block = cramjam.snappy.compress_raw(view[at : at + XERIAL_BLOCK_BYTES])
            parts += (_BLOCK_LENGTH.pack(len(block)), bytes(block))
        return b"".join(parts)
    if codec == LZ4:
        lz4 = cramjam.lz4.Compressor(
            level=LZ4_LEVEL if level is None else level,
            content_checksum=False,
            block_linked=False,
        )
        lz4.compress(bytes(data))  # the streaming compressor takes bytes only
        return bytes(lz4.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL if level is None else level))
    if codec == NONE:
        return bytes(data)
    raise CodecError(f"unknown compression codec {codec}")


def decompress(codec: int, data: Buffer, max_bytes: int) -> bytes | bytearray:
    """`data` inflated; CodecError if it does not decode or would exceed `max_bytes`."""
    if codec == GZIP:
        return _gunzip(data, max_bytes)
    if codec == SNAPPY:
        return _unsnappy(memoryview(data), max_bytes)
    if codec == LZ4:
        return _into(cramjam.lz4.decompress_into, data, max_bytes)
    if codec == ZSTD:
        return _into(cramjam.zstd.decompress_into, data, max_bytes)
    if codec == NONE:
        if len(data) > max_bytes:
            raise CodecError(f"records are longer than {max_bytes} bytes")
        return bytes(data)
    raise CodecError(f"unknown compression codec {codec}")


def _gunzip(data: Buffer, max_bytes: int) -> bytes:
    gz = zlib.decompressobj(47)  # 32 + 15: a gzip or zlib header, detected
    try:
        out = gz.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise CodecError(f"gzip: {exc}") from None
    if len(out) > max_bytes:
        raise CodecError(f"records inflate past {max_bytes} bytes")
    if not gz.eof or gz.unused_data:
        raise CodecError("gzip records are truncated or followed by garbage")
    return out


def _unsnappy(view: memoryview, max_bytes: int) -> bytearray:
    if view[: len(XERIAL_HEADER)] != XERIAL_HEADER:  # as aiokafka and xerial tell them apart
        return _snappy_blocks([view], max_bytes)
    blocks, at = [], len(XERIAL_HEADER)
    while at < len(view):
        if at + _BLOCK_LENGTH.size > len(view):
            raise CodecError("snappy: a block length is cut off")
        (length,) = _BLOCK_LENGTH.unpack_from(view, at)
        at += _BLOCK_LENGTH.size
        if length < 0 or at + length > len(view):
            raise CodecError(f"snappy: a block of {length} bytes does not fit")
        blocks.append(view[at : at + length])
        at += length
    return _snappy_blocks(blocks, max_bytes)


def _snappy_blocks(blocks: list[memoryview], max_bytes: int) -> bytearray:
    """Raw snappy blocks inflated into one buffer sized from the lengths their preambles
    declare, checked against `max_bytes` before anything is inflated."""
    try:
        lengths = [cramjam.snappy.decompress_raw_len(block) for block in blocks]
        if sum(lengths) > max_bytes:
            raise CodecError(f"records inflate past {max_bytes} bytes")
        out = bytearray(sum(lengths))
        view, at = memoryview(out), 0
        for block, length in zip(blocks, lengths, strict=True):
            cramjam.snappy.decompress_raw_into(block, view[at : at + length])
            at += length
        view.release()
    except cramjam.DecompressionError as exc:
        raise CodecError(f"snappy: {exc}") from None
    return out


def _into(
    inflate_into: Callable[[Buffer, bytearray], int], data: Buffer, max_bytes: int
) -> bytearray:
    """Inflate into fixed buffers, growing 4x while the decoder runs out of room."""
    size = min(max_bytes + 1, max(_FIRST_GUESS_MIN_BYTES, 4 * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = inflate_into(data, out)
        except cramjam.DecompressionError as exc:
            if _OUTPUT_FULL not in str(exc):
                raise CodecError(str(exc)) from None
            if size > max_bytes:
                raise CodecError(f"records inflate past {max_bytes} bytes") from None
            size = min(max_bytes + 1, 4 * size)
            continue
        if n > max_bytes:
            raise CodecError(f"records inflate past {max_bytes} bytes")
        del out[n:]
        return out
