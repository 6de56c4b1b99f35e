"""One TCP connection to one broker: pipelined requests matched to responses by correlation id.

Built on `asyncio.BufferedProtocol` (not streams): each request is encoded into one whole frame and
written with one `transport.write`, or, when it carries record batches of at least
`codec.BIG_RECORDS_BYTES` (a bulk produce), as pieces with one `transport.writelines` (uvloop's
is one writev of the envelope's pieces and the batches themselves, not copied into the frame;
asyncio's own transports join them); any number of requests (up to `max_in_flight`) may be on the
wire at once. Incoming bytes go through `protocol.framing.FrameReader`; each frame body is split
into (correlation id, error code, body), the body is decoded into the response dataclass the
request's `ApiSpec` names, and the future waiting on that correlation id is resolved.

Failure rules:
- the peer disconnects, or a frame or body does not decode: the connection closes and every
  pending request fails with `NetworkError` (NETWORK_EXCEPTION, retriable, invalid_metadata);
- a request sees no response within its `timeout_ms`: it fails with `RequestTimedOutError`; the
  connection stays open and a late response to it is dropped;
- a non-zero envelope error code: the request fails with that code's error class;
- a callback of an `InlineAnswer` raises: the loop's exception handler is told; the read (or
  the close) that settled the answer carries on.

Back-pressure: `send` waits for a free in-flight slot and for the transport to drain below its
high-water mark before writing. `send_now` writes at once or not at all (None: no free slot, or
the transport is above its mark), for a caller that would rather not wait a loop turn: the
producer's sender writes a request in the pass that drained it, then awaits `wait_answer`; the
consumer's fetcher passes an `InlineAnswer`, whose callbacks run inside the `buffer_updated` that
brings the answer, not a loop turn later as an asyncio future's do. A
slot is given back when the request's answer future is done, whichever way (answered, failed,
timed out, connection closed). `send_no_response` (produce with acks=0) never waits.

Users: the client library and the broker's controller (controller-to-broker requests).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any

from protocol.codec import encode_request_chunks, response_body, response_head
from protocol.errors import (
    NetworkError,
    OdradekError,
    RequestTimedOutError,
    UsageError,
    for_code,
)
from protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameReader
from protocol.registry import spec_for_request
from protocol.schema import from_wire
from transport.sasl import authenticate, keep_authenticated
from transport.security import PLAINTEXT_CONFIG, SecurityConfig, SslAuthenticationError

_CORRELATION_LIMIT = 2**31 - 1
SASL_TIMEOUT_MS = 10_000  # at least this long for the SASL exchange after connecting

log = logging.getLogger(__name__)


class InlineAnswer:
    """A response's future, settled once, whose callbacks run inside the call that settles it:
    `_on_frame` for an answer, `_fail` for a lost connection, its owner for a timeout (a timer)
    or when it stops waiting (`Fetcher.close`). A callback that raises is reported to the
    loop's exception handler (as asyncio reports a raising callback of its futures) and the
    others still run: a callback's bug must not pass for an undecodable answer inside
    `buffer_updated`, nor stop `_fail` halfway."""

    __slots__ = ("_callbacks", "_error", "_result", "_settled")

    def __init__(self) -> None:
        self._callbacks: list[Callable[[InlineAnswer], object]] = []
        self._settled = False
        self._result: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._settled

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._result

    def exception(self) -> BaseException | None:
        return self._error

    def add_done_callback(self, fn: Callable[[InlineAnswer], object]) -> None:
        if not self._settled:
            self._callbacks.append(fn)
            return
        try:
            fn(self)
        except Exception as exc:
            _report_callback_error(self, fn, exc)

    def set_result(self, result: Any) -> None:
        self._settle(result, None)

    def set_exception(self, error: BaseException) -> None:
        self._settle(None, error)

    def _settle(self, result: Any, error: BaseException | None) -> None:
        if self._settled:
            return
        self._settled, self._result, self._error = True, result, error
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:  # free when nothing raises (3.11's zero-cost try)
                fn(self)
            except Exception as exc:
                _report_callback_error(self, fn, exc)


def _report_callback_error(answer: InlineAnswer, fn: object, exc: Exception) -> None:
    """Hand a callback's exception to the running loop's exception handler (asyncio's default
    logs it), or to the log when no loop runs."""
    message = f"exception in callback {fn!r} of an InlineAnswer"
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        log.error("%s", message, exc_info=exc)
        return
    loop.call_exception_handler({"message": message, "exception": exc, "future": answer})


class _Pending:
    __slots__ = ("future", "record_views", "response_cls")

    def __init__(self, future: Any, response_cls: type, record_views: bool = False) -> None:
        self.future = future
        self.response_cls = response_cls
        self.record_views = record_views  # a large answer's records as views of its frame


class _Slots:
    """At most `n` requests between write and answer: a slot is taken at once when one is free
    (`try_take`) or waited for in turn (`take`), and given back by `give`."""

    __slots__ = ("free", "waiters")

    def __init__(self, n: int) -> None:
        self.free = n
        self.waiters: deque[asyncio.Future[None]] = deque()

    def try_take(self) -> bool:
        if self.free and not self.waiters:
            self.free -= 1
            return True
        return False

    async def take(self) -> None:
        if self.try_take():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await waiter  # `give` hands this waiter its slot
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed a slot just as it was cancelled: pass it on
            with contextlib.suppress(ValueError):
                self.waiters.remove(waiter)
            raise

    def give(self) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


class _BrokerProtocol(asyncio.BufferedProtocol):
    """The asyncio side: bytes in (read into the FrameReader's buffers: a large response, a
    fetch of megabytes, lands in its own buffer without a copy), responses routed to their
    futures."""

    def __init__(self, conn: BrokerConnection, max_frame_bytes: int) -> None:
        self._conn = conn
        self._reader = FrameReader(max_frame_bytes)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport is not a subclass of asyncio.Transport: no isinstance check
        self._conn._transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        conn = self._conn
        try:
            for frame in self._reader.buffer_updated(nbytes):
                conn._on_frame(frame)
        except Exception as exc:  # any decode failure: the stream can no longer be trusted
            conn._fail(NetworkError(f"{conn.address}: undecodable response ({exc}); closed"))

    def connection_lost(self, exc: Exception | None) -> None:
        if isinstance(exc, ssl.SSLError):  # TLS 1.3: the server refuses our certificate late
            why = _ssl_why(exc)
            self._conn._fail(SslAuthenticationError(f"{self._conn.address}: SSL failed: {why}"))
            return
        why = f" ({exc})" if exc is not None else ""
        self._conn._fail(NetworkError(f"{self._conn.address}: connection lost{why}"))

    def pause_writing(self) -> None:
        self._conn._writable.clear()

    def resume_writing(self) -> None:
        self._conn._writable.set()


def _ssl_why(exc: ssl.SSLError) -> str:
    """OpenSSL's reason, with the verification's own words when a certificate was refused."""
    detail = getattr(exc, "verify_message", None)
    reason = exc.reason or str(exc)
    return f"{reason} ({detail})" if detail else reason


class BrokerConnection:
    """A pipelined request/response connection to one broker. Create with `connect`."""

    def __init__(
        self,
        host: str,
        port: int,
        client_id: str | None,
        max_in_flight: int,
    ) -> None:
        if max_in_flight < 1:
            raise UsageError("max_in_flight must be at least 1")
        self.host = host
        self.port = port
        self.client_id = client_id
        self.max_in_flight = max_in_flight
        self._transport: asyncio.Transport | None = None
        self._pending: dict[int, _Pending] = {}
        self._slots = _Slots(max_in_flight)
        self._writable = asyncio.Event()
        self._writable.set()
        self._corr = itertools.count(1)
        self._closed = False
        self._close_error: OdradekError | None = None
        self._closed_event = asyncio.Event()  # set once closed (`wait_closed`)
        self._reauth: asyncio.Task[None] | None = None  # KIP-368 re-authentication
        # a response came (False when lost before any: a Kafka port? transport/kafka_probe.py)
        self.answered = False

    # ----- construction ---------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = None,
        connect_timeout_ms: int = 5000,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_in_flight: int = 1000,
        security: SecurityConfig = PLAINTEXT_CONFIG,
    ) -> BrokerConnection:
        """Open a connection (TLS when `security` says so, then SASL on SASL_* protocols);
        raises NetworkError when the broker cannot be reached in time, SslAuthenticationError
        when the TLS handshake fails, SaslAuthenticationFailedError (not retriable) when the
        broker refuses the SASL login."""
        conn = cls(host, port, client_id, max_in_flight)
        loop = asyncio.get_running_loop()
        context = security.make_ssl_context()
        tls: dict[str, Any] = {} if context is None else {"ssl": context, "server_hostname": host}
        try:
            async with asyncio.timeout(connect_timeout_ms / 1000):
                await loop.create_connection(
                    lambda: _BrokerProtocol(conn, max_frame_bytes), host, port, **tls
                )
        except TimeoutError:
            raise NetworkError(
                f"{host}:{port}: no connection within {connect_timeout_ms} ms"
            ) from None
        except ssl.SSLError as exc:
            raise SslAuthenticationError(
                f"{host}:{port}: SSL handshake failed: {_ssl_why(exc)}"
            ) from None
        except OSError as exc:
            raise NetworkError(f"{host}:{port}: cannot connect ({exc})") from None
        if security.sasl:  # SaslHandshake, SaslAuthenticate before anything (transport/sasl.py)
            try:
                lifetime_ms = await authenticate(
                    conn, security, max(connect_timeout_ms, SASL_TIMEOUT_MS)
                )
            except BaseException:
                conn.abort()
                raise
            if lifetime_ms > 0:  # KIP-368: renew the login before the broker's deadline
                conn._reauth = loop.create_task(keep_authenticated(conn, security, lifetime_ms))
        return conn

    # ----- public API -----------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def in_flight(self) -> int:
        """Requests written and not yet answered (or timed out)."""
        return len(self._pending)

    async def send(
        self,
        request: Any,
        timeout_ms: float | None = 30_000,
        on_written: Callable[[], None] | None = None,
    ) -> Any:
        """Send one request and wait for its response dataclass.

        `timeout_ms` covers waiting for an in-flight slot, the write and the response.
        `on_written` is called right after the request's frame is handed to the transport.
        """
        spec = spec_for_request(type(request))
        return await self._within(self._send(request, spec.response, on_written), spec.name,
                                  timeout_ms)  # fmt: skip

    def send_now(self, request: Any, answer: Any = None, record_views: bool = False) -> Any:
        """Write one request now, without waiting; the future of its response dataclass (an
        asyncio future to await with `wait_answer`, or `answer`, an `InlineAnswer`, whose
        owner times it out), or None when that would mean waiting (no free in-flight slot, or
        the transport above its high-water mark): then use `send`. `record_views`: the
        answer's records (Fetch), when it is large, are memoryviews of its frame, not copies
        (protocol/codec.py `response_body`)."""
        self._check_open()
        if not self._writable.is_set() or not self._slots.try_take():
            return None
        response_cls = spec_for_request(type(request)).response
        return self._write(request, response_cls, answer, record_views)

    async def wait_answer(
        self, answer: asyncio.Future[Any], api: str, timeout_ms: float | None
    ) -> Any:
        """The response of an `api` request written by `send_now`, within `timeout_ms`."""
        return await self._within(answer, api, timeout_ms)

    async def _within(self, answer: Any, name: str, timeout_ms: float | None) -> Any:
        if timeout_ms is None:
            return await answer
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                return await answer
        except TimeoutError:
            raise RequestTimedOutError(
                f"{self.address}: no {name} response within {timeout_ms} ms"
            ) from None

    def send_no_response(self, request: Any) -> None:
        """Write a request whose broker sends no answer (produce with acks=0)."""
        self._check_open()
        assert self._transport is not None
        _write_frame(
            self._transport,
            encode_request_chunks(request, self._next_correlation_id(), self.client_id),
        )

    async def wait_writable(self) -> None:
        """Wait until the socket's write buffer is below its high-water mark."""
        self._check_open()
        if not self._writable.is_set():
            await self._writable.wait()
            self._check_open()

    async def wait_closed(self) -> None:
        """Return once the connection is closed, by either side (the controller watches its
        connections to brokers with this: coordinator/controller/fast_death.py)."""
        await self._closed_event.wait()

    def abort(self) -> None:
        """Close now, without waiting; pending requests fail with NetworkError."""
        self._fail(NetworkError(f"{self.address}: connection closed by the client"))

    async def close(self) -> None:
        """Close the socket; pending requests fail with NetworkError."""
        if self._closed:
            return
        self.abort()
        await asyncio.sleep(0)  # let the transport run connection_lost

    # ----- internals ------------------------------------------------------------------------

    async def _send(
        self, request: Any, response_cls: type, on_written: Callable[[], None] | None
    ) -> Any:
        self._check_open()
        await self._slots.take()
        try:
            await self.wait_writable()
        except BaseException:
            self._slots.give()
            raise
        future = self._write(request, response_cls)
        if on_written is not None:
            on_written()
        return await future

    def _write(
        self, request: Any, response_cls: type, answer: Any = None, record_views: bool = False
    ) -> Any:
        """Encode and write one request holding a slot (taken by the caller); its answer's
        future (`answer`, or a new asyncio future), which gives the slot back and forgets the
        request once done."""
        try:
            corr = self._next_correlation_id()
            frame = encode_request_chunks(request, corr, self.client_id)
        except BaseException:
            self._slots.give()
            raise
        future = answer if answer is not None else asyncio.get_running_loop().create_future()
        self._pending[corr] = _Pending(future, response_cls, record_views)
        future.add_done_callback(lambda _f: self._done(corr))
        assert self._transport is not None
        _write_frame(self._transport, frame)
        return future

    def _done(self, corr: int) -> None:
        self._pending.pop(corr, None)  # a timed-out or cancelled request's late answer is dropped
        self._slots.give()

    def _next_correlation_id(self) -> int:
        corr = next(self._corr)
        if corr >= _CORRELATION_LIMIT:
            self._corr = itertools.count(1)
            corr = next(self._corr)
        return corr

    def _check_open(self) -> None:
        if self._closed:
            err = self._close_error
            raise type(err)(err.message) if err else NetworkError(f"{self.address}: closed")

    def _on_frame(self, frame: bytes | bytearray | memoryview) -> None:
        corr, error_code, at = response_head(frame)
        self.answered = True
        pending = self._pending.get(corr)
        if pending is None or pending.future.done():
            self._pending.pop(corr, None)
            return  # the request timed out or was cancelled; its late answer is dropped
        if error_code != 0:
            del self._pending[corr]
            pending.future.set_exception(for_code(error_code)(f"{self.address}: request failed"))
            return
        body = response_body(frame, at, pending.record_views)  # raises: _fail sees it pending
        response: Any = from_wire(pending.response_cls, body)
        del self._pending[corr]
        pending.future.set_result(response)

    def _fail(self, error: OdradekError) -> None:
        """Close once; fail every pending request and wake every waiter with `error`. The
        socket is closed and the writers woken first: failing an `InlineAnswer` runs its
        callbacks here, and whatever they do, the connection is closed by then."""
        if self._closed:
            return
        self._closed = True
        self._close_error = error
        self._closed_event.set()
        if self._reauth is not None and self._reauth is not _current_task():
            self._reauth.cancel()
        pending, self._pending = self._pending, {}
        self._writable.set()  # writers wake, see the connection closed, and raise
        if self._transport is not None:
            if self._transport.get_extra_info("sslcontext") is not None:
                self._transport.abort()  # TLS: no close_notify round trip keeping the socket
            else:
                self._transport.close()
        for p in pending.values():
            if not p.future.done():
                p.future.set_exception(type(error)(error.message))


def _current_task() -> asyncio.Task[object] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop (a close at interpreter exit)
        return None


def _write_frame(transport: Any, chunks: list[Any]) -> None:
    """One frame's pieces (codec.encode_request_chunks): one write, or one writelines."""
    if len(chunks) == 1:
        transport.write(chunks[0])
    else:
        transport.writelines(chunks)
