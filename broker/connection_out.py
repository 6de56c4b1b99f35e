"""The sending half of a broker connection: answer bytes, and log data in bounded steps.

Log data (`FileSlice` chunks of fetch responses) is sent with `os.sendfile` from the segment file
to the socket's fd when the transport's write buffer is empty (so byte order is kept); when the
buffer is not empty, the socket would block part-way, or `fetch_use_sendfile` is off, it goes
through `os.pread` + `transport.write`. uvloop has no `loop.sendfile`. Small log data never
comes as a slice: the replica manager reads it at once (SMALL_READ_BYTES), so a caught-up
reader's answer is one write, one segment on the wire. A file shorter than its slice
(truncated meanwhile) closes the connection: the frame could not be completed.

Bounded steps (issue 34): a loop step sends at most STEP_SEND_BYTES_MAX of log data. The
connection's `_flush` sends slices at once while they fit in that; from the first one that
does not (and always on a TLS listener, where log data cannot go by sendfile: it is read and
encrypted here) the connection's chunks queue in `out`, and `_drain_out` sends one step's share
of them, then goes on in a `call_soon` step, or at resume_writing when the transport paused
writing. Reading waits while `out` is not empty. So a large fetch neither holds the loop for
its whole size (a 50 MiB answer was one pread and one write, or one long sendfile loop) nor
sits in memory whole.

`ConnectionOut` is a mixin of broker/server.py's `Connection`: it holds no state of its own
and names what it uses of the connection below.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from typing import cast

from broker.security.tls import TLS_CHUNK_BYTES, TlsChannel
from protocol.codec import Chunk, FileSlice

log = logging.getLogger("odradek.broker.server")

STEP_SEND_BYTES_MAX = TLS_CHUNK_BYTES  # log data sent (sendfile, pread or TLS) per loop step


class ConnectionOut:
    """Sending for `Connection`; the attributes are the connection's (broker/server.py)."""

    transport: asyncio.Transport | None
    loop: asyncio.AbstractEventLoop | None
    tls: TlsChannel | None
    out: deque[Chunk]  # chunks behind log data that did not fit one step, in order
    drain_handle: asyncio.Handle | None  # the next step of `out`
    closed: bool
    writing_paused: bool
    use_sendfile: bool
    sock_fd: int
    peer: str
    slice_reads: int  # log data chunks read for TLS (tests count them)
    send_steps: int  # loop steps that sent log data from `out` (tests count them)
    send_step_bytes_max: int  # the most log data one of them sent

    def _abort(self, gracefully: bool = False) -> None:
        raise NotImplementedError

    def _check_bounds(self) -> None:
        raise NotImplementedError

    def _send_slice(self, s: FileSlice) -> bool:
        """Send a file slice after what is already written; False when the connection closed."""
        try:
            while s.length > 0:
                n = self._send_part(s, s.length)
                if n < 0:
                    return False
                s = FileSlice(s.fd, s.position + n, s.length - n)
        except OSError as exc:
            log.warning("closing %s: sending log data failed: %s", self.peer, exc)
            self._abort()
            return False
        return True

    def _write(self, data: bytes) -> None:
        """Write answer bytes: through the TLS session on a TLS listener."""
        assert self.transport is not None
        self.transport.write(data if self.tls is None else self.tls.send(data))

    def _drain_out(self) -> None:
        """One step of the queued chunks: answer bytes, and at most STEP_SEND_BYTES_MAX of log
        data (sendfile when the transport's buffer is empty on a plaintext listener, else
        pread, encrypted on a TLS one). The next step is a call_soon, or resume_writing when
        the transport paused writing: so a large fetch neither holds the loop for its whole
        size nor sits in memory whole."""
        self.drain_handle = None
        out, queue, budget = self.out, cast(list[bytes], []), STEP_SEND_BYTES_MAX
        try:
            while out and not self.writing_paused and not self.closed:
                chunk = out[0]
                if type(chunk) is bytes:
                    queue.append(chunk)
                    out.popleft()
                    continue
                if queue:
                    self._write(b"".join(queue))
                    queue = []
                    continue
                if budget <= 0:
                    break
                assert isinstance(chunk, FileSlice)
                n = self._send_part(chunk, min(budget, chunk.length))
                if n < 0:
                    return
                budget -= n
                if n == chunk.length:
                    out.popleft()
                else:
                    out[0] = FileSlice(chunk.fd, chunk.position + n, chunk.length - n)
            if queue:
                self._write(b"".join(queue))
        except OSError as exc:
            log.warning("closing %s: sending log data failed: %s", self.peer, exc)
            self._abort()
            return
        if budget < STEP_SEND_BYTES_MAX:
            self.send_steps += 1
            self.send_step_bytes_max = max(self.send_step_bytes_max, STEP_SEND_BYTES_MAX - budget)
        if out and not self.writing_paused and not self.closed and self.loop is not None:
            self.drain_handle = self.loop.call_soon(self._drain_out)
        self._check_bounds()

    def _send_part(self, s: FileSlice, n: int) -> int:
        """Send the first `n` bytes of `s`; return how many went (-1: the connection closed)."""
        assert self.transport is not None
        if (
            self.tls is None
            and self.use_sendfile
            and self.sock_fd >= 0
            and not self.transport.get_write_buffer_size()  # else sendfile would jump the queue
        ):
            try:
                sent = os.sendfile(self.sock_fd, s.fd, s.position, n)
            except BlockingIOError:
                sent = -1  # the socket is full: this part goes through the transport
            if sent == 0:
                self._short_file(s)
                return -1
            if sent > 0:
                return sent
        data = os.pread(s.fd, n, s.position)
        if len(data) < n:
            self._short_file(s)
            return -1
        if self.tls is not None:
            self.slice_reads += 1
        self._write(data)
        return n

    def _short_file(self, s: FileSlice) -> bool:
        log.warning("closing %s: log file shorter than the %d-byte slice sent", self.peer, s.length)
        self._abort()
        return False
