"""Length-prefixed framing, sans-I/O.

Wire layout of one frame:

    +----------------------+---------------------------+
    | length: int32 BE     | body: `length` bytes      |
    +----------------------+---------------------------+

`FrameDecoder` is fed whatever bytes arrived and hands back whole frame bodies; it holds at most
one partial frame. The body of a frame of at least `BIG_FRAME_BYTES` (a bulk produce's 256 KiB
batches) that has not all arrived is kept as the pieces it came in (the fed `bytes` objects
themselves, or views of them) and joined once, when its last piece comes: one copy of the body,
where appending each piece to the buffer and cutting the body out of it cost two, and the
buffer's growth more. A length <= 0 or above `max_frame_bytes` is rejected as soon as the four
length bytes are in, before any of the body is buffered, so a peer cannot make us allocate.
After an error the decoder is dead: the connection must be closed (the byte stream has lost
its framing and nothing after the bad length can be trusted).

`FrameReader` is the same for a reader that lets the socket write into buffers it hands out
(`asyncio.BufferedProtocol`): small frames are read into one reusable receive buffer and cut out
of it (one copy each); a frame of at least `big_frame_bytes` whose body has not all arrived gets
a buffer of its own, the socket reads the rest of the body straight into it, and that buffer is
the frame handed back. `FrameDecoder`'s way costs a large frame three copies (the bytes object
of each read, the buffer it is appended to, the body cut out of that); this one copies a large
frame's body at most once (the part that came with its header).

A large frame's buffer is kept once the frame is handed back (up to `SPARE_BUFFERS` of at most
`SPARE_BUFFER_BYTES` each) and used again for a later large frame once nothing refers to it any
more (its reference count says so: no frame, view or slice of it is held anywhere), so a
fetch answer of megabytes does not have a new buffer zero-filled for it each time (about
0.15 ms per 4 MiB here, 4-6% of a Spark task's CPU per record). A frame read into a spare
longer than itself is handed back as a memoryview of the spare's first `length` bytes.
the frame handed back. `FrameDecoder`'s way costs a large frame two copies (the bytes object of
each read, the join of those pieces); this one copies a large frame's body at most once (the
part that came with its header), but sizes that buffer from the announced length, which a peer
could inflate: the broker keeps `FrameDecoder`, which holds only what has arrived.
"""

from __future__ import annotations

import struct
import sys

from protocol.errors import ProtocolError

FRAME_HEADER = struct.Struct(">i")
FRAME_HEADER_BYTES = FRAME_HEADER.size
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024
SPARE_BUFFERS = 3  # a Spark range read holds two answers while the third arrives
SPARE_BUFFER_BYTES = 8 * 1024 * 1024
BIG_FRAME_BYTES = 64 * 1024
"""FrameDecoder: a body at least this long is collected as pieces and joined once."""


class FrameTooLargeError(ProtocolError):
    """A frame announced a length above the configured maximum."""


class BadFrameLengthError(ProtocolError):
    """A frame announced a length of zero or less."""


def encode_frame(body: bytes) -> bytes:
    """Prefix one body with its length."""
    return FRAME_HEADER.pack(len(body)) + body


def frame_header(body_length: int) -> bytes:
    """The 4-byte prefix alone, for bodies sent in several pieces (fetch responses)."""
    return FRAME_HEADER.pack(body_length)


class FrameDecoder:
    """Turns a byte stream into frame bodies.

    Invariant: between calls `_buf` holds at most one partial frame: a partial header, or the
    part of a body (whose length has passed the checks) received so far.
    """

    __slots__ = ("_buf", "_dead", "_got", "_need", "_parts", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes <= 0:
            raise ValueError("max_frame_bytes must be positive")
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._need = -1  # body length of the frame being read, -1 while reading its header
        self._dead = False
        # a big body being collected (`_need` long): the pieces so far, `_got` bytes in all
        self._parts: list[bytes | memoryview] = []
        self._got = 0

    @property
    def buffered_bytes(self) -> int:
        return len(self._buf) + self._got

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add bytes; return every frame body completed by them (possibly none).

        Raises FrameTooLargeError / BadFrameLengthError (ProtocolError) on a bad length, after
        which the decoder holds nothing and refuses to be fed again.
        """
        if self._dead:
            raise ProtocolError("frame decoder used after a framing error")
        if self._parts:
            return self._collect(data)
        if self._buf:
            self._buf += data
            src: bytes | bytearray | memoryview = self._buf
        else:
            src = data  # the common case: parse straight from the caller's bytes, no copy
        try:
            frames, pos = self._split(src)
        except ProtocolError:
            self._buf = bytearray()
            raise
        if pos < len(src) and self._need >= BIG_FRAME_BYTES:
            # a big body begun: its first piece kept (a view of an immutable caller's bytes)
            if type(src) is bytes:
                self._parts.append(memoryview(src)[pos:])
            else:  # no view of a buffer that changes (ours is cut just below) is kept
                self._parts.append(bytes(memoryview(src)[pos:]))
            self._got = len(src) - pos
            pos = len(src)
        if src is self._buf:
            del self._buf[:pos]
        elif pos < len(src):
            self._buf += memoryview(src)[pos:]
        return frames

    def _collect(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """The next piece of a big body: kept, or (the last) the body joined and the bytes
        after it fed on."""
        rest = self._need - self._got
        if len(data) < rest:
            self._parts.append(data if type(data) is bytes else bytes(data))
            self._got += len(data)
            return []
        view = memoryview(data)
        self._parts.append(view[:rest])
        body = b"".join(self._parts)
        self._parts, self._got, self._need = [], 0, -1
        return [body, *self.feed(view[rest:])] if rest < len(data) else [body]

    def _split(self, src: bytes | bytearray | memoryview) -> tuple[list[bytes], int]:
        """Whole frames in `src` and how many bytes of it they (and a read header) consumed."""
        frames: list[bytes] = []
        pos = 0
        end = len(src)
        with memoryview(src) as view:  # slices of a view copy once, not twice
            while True:
                if self._need < 0:
                    if end - pos < FRAME_HEADER_BYTES:
                        break
                    (length,) = FRAME_HEADER.unpack_from(src, pos)
                    self._check_length(length)
                    pos += FRAME_HEADER_BYTES
                    self._need = length
                if end - pos < self._need:
                    break
                frames.append(bytes(view[pos : pos + self._need]))
                pos += self._need
                self._need = -1
        return frames, pos

    def _check_length(self, length: int) -> None:
        if length <= 0:
            self._dead = True
            raise BadFrameLengthError(f"frame length {length} is not positive")
        if length > self.max_frame_bytes:
            self._dead = True
            raise FrameTooLargeError(
                f"frame length {length} is above the maximum of {self.max_frame_bytes} bytes"
            )


class FrameReader:
    """Frames read into buffers it hands out: `get_buffer()`, then `buffer_updated(n)`.

    Invariants: `_recv[_start:_end]` holds the received bytes not yet cut into frames (at most
    one partial frame); while a big frame is being read, `_big` is its body, filled up to
    `_big_got` (a view of a spare buffer, or a buffer of its own), and `_recv` holds nothing.
    `_spares` are the buffers of big frames handed back, the reader's only reference to them.
    """

    __slots__ = ("_big", "_big_got", "_dead", "_end", "_recv", "_spares", "_start",
                 "big_frame_bytes", "max_frame_bytes")  # fmt: skip

    def __init__(
        self,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        recv_bytes: int = 256 * 1024,
        big_frame_bytes: int = 64 * 1024,
    ) -> None:
        if max_frame_bytes <= 0:
            raise ValueError("max_frame_bytes must be positive")
        if not FRAME_HEADER_BYTES <= big_frame_bytes <= recv_bytes - FRAME_HEADER_BYTES:
            raise ValueError("big_frame_bytes must leave room for a header in recv_bytes")
        self.max_frame_bytes = max_frame_bytes
        self.big_frame_bytes = big_frame_bytes
        self._recv = bytearray(recv_bytes)
        self._start = self._end = 0
        self._big: bytearray | memoryview | None = None
        self._big_got = 0
        self._dead = False
        self._spares: list[bytearray] = []

    @property
    def buffered_bytes(self) -> int:
        return self._big_got if self._big is not None else self._end - self._start

    def get_buffer(self) -> memoryview:
        """Where the next bytes go (never empty)."""
        if self._dead:
            raise ProtocolError("frame reader used after a framing error")
        if self._big is not None:
            return memoryview(self._big)[self._big_got :]
        if len(self._recv) - self._end < self.big_frame_bytes and self._start:
            # little room left: what is left (a partial frame, below big_frame_bytes) moves to
            # the front, so reads stay large
            left = self._end - self._start
            self._recv[:left] = self._recv[self._start : self._end]
            self._start, self._end = 0, left
        return memoryview(self._recv)[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytes | bytearray | memoryview]:
        """`nbytes` were written into the last buffer; every frame body they completed.

        Raises FrameTooLargeError / BadFrameLengthError (ProtocolError) on a bad length, after
        which the reader holds nothing and refuses to be used again.
        """
        big = self._big
        if big is not None:
            self._big_got += nbytes
            if self._big_got < len(big):
                return []
            self._big, self._big_got = None, 0
            return [big]
        self._end += nbytes
        frames: list[bytes | bytearray | memoryview] = []
        recv, pos, end = self._recv, self._start, self._end
        with memoryview(recv) as view:
            while end - pos >= FRAME_HEADER_BYTES:
                (length,) = FRAME_HEADER.unpack_from(recv, pos)
                self._check_length(length)
                body = pos + FRAME_HEADER_BYTES
                if end - body >= length:
                    frames.append(bytes(view[body : body + length]))
                    pos = body + length
                    continue
                if length >= self.big_frame_bytes:  # the rest is read straight into its own
                    self._big = self._big_buffer(length)
                    self._big[: end - body] = view[body:end]
                    self._big_got = end - body
                    pos = end
                break
        if pos == end:
            self._start = self._end = 0
        else:
            self._start = pos
        return frames

    def _big_buffer(self, length: int) -> bytearray | memoryview:
        """A buffer of exactly `length` bytes for a big frame: the smallest spare long enough
        that nothing refers to any more (a view of it), else a new one, kept as a spare."""
        best: bytearray | None = None
        for spare in self._spares:  # (not enumerate: its tuple would hold one more reference)
            # 3: the list, `spare` and getrefcount's argument; any frame or view held is more
            free = len(spare) >= length and sys.getrefcount(spare) == 3
            if free and (best is None or len(spare) < len(best)):
                best = spare
        if best is not None:
            return best if len(best) == length else memoryview(best)[:length]
        buffer = bytearray(length)
        if length <= SPARE_BUFFER_BYTES:
            if len(self._spares) >= SPARE_BUFFERS:
                self._spares.pop(0)  # the oldest goes (if held, its holder keeps it alive)
            self._spares.append(buffer)
        return buffer

    def _check_length(self, length: int) -> None:
        if length <= 0 or length > self.max_frame_bytes:
            self._dead = True
            self._start = self._end = 0
        if length <= 0:
            raise BadFrameLengthError(f"frame length {length} is not positive")
        if length > self.max_frame_bytes:
            raise FrameTooLargeError(
                f"frame length {length} is above the maximum of {self.max_frame_bytes} bytes"
            )
