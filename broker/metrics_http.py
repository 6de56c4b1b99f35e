"""The metrics port: a tiny HTTP/1.x server answering `GET /metrics`, on a thread of its own.

Why a thread with its own event loop rather than the broker's loop: whatever a client does to
this port (hold connections open sending a byte a minute, send garbage or huge headers, connect
in a flood) happens on this thread's loop, never on the loop serving the Kafka and native
listeners, so it cannot stall them; a slow scrape (a busy broker) cannot either. What this
thread may take from the broker is bounded: it shares the GIL (a flood of connections costs
it some CPU, as any process on the machine would), and each accepted `GET /metrics` runs one
collection on the broker's loop (`render`, broker/metrics.py), at most one at a time (this
loop waits for it) and at most one per `cache_s` (a fresh answer is reused).

Limits, each of which closes the connection:
- at most `max_connections` at once: beyond that the server stops accepting (the kernel's
  backlog of `BACKLOG` holds the rest, then refuses), rather than accepting and dropping;
- the request head (request line and headers) within `head_max_bytes` (431 beyond), read
  within `read_timeout_s` (slowloris: closed, nothing answered), and a connection's whole life
  within `connection_timeout_s` (a client that does not read its answer);
- one request per connection (`Connection: close`); a body is never read.
Answers: 200 with the exposition for GET (or HEAD) of /metrics (a query string is ignored),
404 for another path, 405 for another method, 400 for a request line that does not parse or
an HTTP version other than 1.0/1.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("odradek.broker.metrics")

BACKLOG = 16
CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True, slots=True)
class HttpLimits:
    max_connections: int = 8
    head_max_bytes: int = 8192
    read_timeout_s: float = 2.0
    connection_timeout_s: float = 10.0
    cache_s: float = 0.2  # an answer younger than this is served again without collecting


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str
    body: bytes = b""
    allow: bool = False  # 405: say which methods are allowed


def route(head: bytes) -> tuple[Answer | None, bool]:
    """Decide what a request head asks for: (an answer, or None for the metrics; HEAD?).
    A pure function of the bytes, tested without sockets."""
    line = head.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        return Answer(400, "Bad Request", b"bad request line\n"), False
    method, target, version = parts
    if version not in (b"HTTP/1.0", b"HTTP/1.1"):
        return Answer(400, "Bad Request", b"HTTP/1.0 or HTTP/1.1 only\n"), False
    path = target.split(b"?", 1)[0]
    if path != b"/metrics":
        return Answer(404, "Not Found", b"only /metrics is served here\n"), False
    if method not in (b"GET", b"HEAD"):
        return Answer(405, "Method Not Allowed", b"GET only\n", allow=True), False
    return None, method == b"HEAD"


def response_bytes(status: int, reason: str, body: bytes, head_only: bool, allow: bool) -> bytes:
    ctype = CONTENT_TYPE if status == 200 else b"text/plain; charset=utf-8"
    lines = [
        f"HTTP/1.1 {status} {reason}".encode(),
        b"Content-Type: " + ctype,
        f"Content-Length: {len(body)}".encode(),
        b"Connection: close",
    ]
    if allow:
        lines.append(b"Allow: GET, HEAD")
    return b"\r\n".join(lines) + b"\r\n\r\n" + (b"" if head_only else body)


class MetricsHttpServer:
    """Serves `render()` (the exposition bytes) on host:port from its own thread."""

    def __init__(
        self, host: str, port: int, render: Callable[[], bytes], limits: HttpLimits | None = None
    ) -> None:
        self.host = host
        self.port = port
        self.render = render
        self.limits = limits or HttpLimits()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._cached: tuple[float, bytes] | None = None
        self.served = 0  # answers sent (any status), for tests and logs

    def start(self) -> None:
        """Bind (the port is known on return: `.port`), then serve on a daemon thread."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
            sock.listen(BACKLOG)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self._sock = sock
        self.port = sock.getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="metrics-http", daemon=True
        )
        self._thread.start()
        ready.wait()

    def stop(self, timeout_s: float = 5.0) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._sock is not None:
            self._sock.close()

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()  # plain asyncio: nothing here needs uvloop's speed
        self._loop = loop
        self._stop = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._serve())
        except Exception:
            log.exception("the metrics server stopped")
        finally:
            loop.close()

    async def _serve(self) -> None:
        assert self._sock is not None and self._stop is not None
        loop = asyncio.get_running_loop()
        slots = asyncio.Semaphore(self.limits.max_connections)
        tasks: dict[asyncio.Task[None], socket.socket] = {}
        stopping = asyncio.ensure_future(self._stop.wait())
        try:
            while not self._stop.is_set():
                slot = asyncio.ensure_future(slots.acquire())  # full: the backlog waits
                await asyncio.wait({slot, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not slot.done():
                    slot.cancel()
                    break
                accept = asyncio.ensure_future(loop.sock_accept(self._sock))
                await asyncio.wait({accept, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not accept.done():
                    accept.cancel()
                    break
                try:
                    conn, _addr = accept.result()
                except OSError as exc:  # EMFILE and the like: wait a little, go on
                    log.warning("metrics port: accept failed: %s", exc)
                    slots.release()
                    await asyncio.sleep(0.1)
                    continue
                task = asyncio.ensure_future(self._handle(conn, slots))
                tasks[task] = conn
                task.add_done_callback(tasks.pop)
        finally:
            stopping.cancel()
            for task in list(tasks):
                task.cancel()
            leftover = list(tasks.values())  # a task cancelled before it ran closes nothing
            await asyncio.gather(*tasks, return_exceptions=True)
            for conn in leftover:
                conn.close()

    async def _handle(self, conn: socket.socket, slots: asyncio.Semaphore) -> None:
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(self.limits.connection_timeout_s):
                reader, writer = await asyncio.open_connection(
                    sock=conn, limit=self.limits.head_max_bytes
                )
                reply = await self._answer(reader)
                if reply is not None:
                    writer.write(reply)
                    await writer.drain()
                    self.served += 1
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            pass  # slow, gone or cut short: just close
        finally:
            slots.release()
            if writer is not None:
                writer.transport.abort()  # no lingering close handshake to wait for
            conn.close()  # now, not on a later turn of a loop that may be stopping

    async def _answer(self, reader: asyncio.StreamReader) -> bytes | None:
        try:
            async with asyncio.timeout(self.limits.read_timeout_s):
                head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            return response_bytes(431, "Request Header Fields Too Large", b"", False, False)
        except (TimeoutError, asyncio.IncompleteReadError):
            return None
        answer, head_only = route(head)
        if answer is not None:
            return response_bytes(answer.status, answer.reason, answer.body, False, answer.allow)
        return response_bytes(200, "OK", self._metrics(), head_only, False)

    def _metrics(self) -> bytes:
        now = time.monotonic()
        cached = self._cached
        if cached is not None and now - cached[0] < self.limits.cache_s:
            return cached[1]
        body = self.render()  # blocks this thread only (the collection is bounded)
        self._cached = (time.monotonic(), body)
        return body
