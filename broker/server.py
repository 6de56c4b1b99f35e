"""The broker's TCP server: one `asyncio.Protocol` per connection, requests pipelined.

A server is one front door: a `Door` (broker/doors.py) turns a frame into a request and its
handler, and a handler's result into the bytes to send. The daemon opens two servers over the
same services: the native door (msgpack) and the Kafka door (Kafka's wire protocol), each
reaching one operation per API through its codec (broker/apis.py). Everything below is the
same for both.

Per connection:
- A `Session` (broker/session.py) made when the connection is accepted: the listener and its
  security protocol, the peer, the principal. The door sees it (`route`, and `admit`, the one
  place every request passes before its handler) and every handler gets it:
  `handler(ctx, request, session)`.
- Bytes go through `FrameDecoder` (max `socket_request_max_bytes`; before a SASL listener's
  connection has logged in, `sasl_server_max_receive_size`, as Kafka) and the door. Each
  request gets a slot at the tail of `pending`, then its handler runs: inline when it returns a
  value; a `Deferred` (broker/deferred.py: a parked fetch) is answered from its listener, in
  the loop iteration that completes it; any other awaitable runs as a task. Every request ends
  in `_finished` (one place: its answer or its failure), whichever way it ran. A finished
  slot holds its encoded chunks; `_flush` writes the done slots at the head of `pending`, so
  answers leave strictly in request order whatever order handlers finish in. Bytes of several
  answers are joined into one write.
- Limits: at most `max_inflight_requests_per_connection` unanswered requests and
  `max_inflight_bytes_per_connection` of their frames; at either bound (or while the transport's
  write buffer is above its high-water mark) reading pauses, and resumes once below. One read
  (<= 256 KiB) may overshoot the bound by its frames; never more.
- Bad input (framing error, undecodable envelope, wrong type, unknown api or version): the done
  answers at the head are written, every other pending request is dropped, the door's refusal
  goes out (native: INVALID_REQUEST or UNSUPPORTED_VERSION when the correlation id is readable;
  Kafka: nothing, as Kafka) and the connection closes. Nothing reaches any handler, so nothing
  reaches any log.
- A handler's exception answers that request as the door says (native: its error code, or
  UNKNOWN_SERVER_ERROR, and the connection carries on; Kafka: the API's own error answer where
  the adapter gives one, else the connection closes). A handler that raises `Refusal` (a failed
  SASL exchange, after its delay) has its `reply` sent after the answers before it, then the
  connection closes.
- Client quotas (broker/quota/, KIP-219): a request's throttle (its produce or fetch bytes over
  producer/consumer_byte_rate, asked for by the handler through `ctx.quotas`; its time on the
  loop over request_percentage, measured here around the handler call for every request but
  the exempt ones) goes into its answer's throttle field, and once that answer is written the
  connection is muted (not read) for that long: one timer per connection, cancelled on close.
- Close: however the connection ends (the peer's close or death, a refusal, idleness, the
  broker stopping), its tasks are cancelled and its session's close hooks run once
  (`Session.closed()`: a share session's member gives back its acquired records, as Kafka's
  ConnectionDisconnectListener).
- Idle: `BrokerServer.check_idle()` closes connections with nothing pending and no traffic for
  `connections_max_idle_ms` by the injected clock; a periodic task calls it.

Bounded steps (issue 34): one loop step does a bounded share of a connection's work, so that a
busy connection cannot hold the loop (and every other connection, the replica fetchers' and
the long polls' wake-ups) for a whole read. Frames read go to `backlog`; a step dispatches at
most STEP_FRAMES_MAX of them and STEP_FRAME_BYTES_MAX of their bytes (at least one frame), and
none while the in-flight bounds or a quota mute hold (Kafka mutes a channel until its request
is answered); the rest goes on in a `call_soon` step, and reading waits while a backlog is
left. Log data goes STEP_SEND_BYTES_MAX per step (broker/connection_out.py).

TLS listeners (SSL, SASL_SSL) run TLS without I/O (broker/security/tls.py `TlsChannel`): socket
bytes are fed in and plaintext comes out; answers are encrypted in `_write`.
On an SSL listener the client certificate's subject, mapped by
ssl_principal_mapping_rules, is the session's principal. A connection whose first bytes are not
its listener's protocol (a TLS ClientHello on a plaintext listener, plaintext on a TLS one,
HTTP on either), or whose TLS handshake fails, is closed at once with one log line per peer
host per minute (protocol/log_limit.py), however often the client retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import ssl
import time
from collections import deque
from typing import Any, cast

from broker import slow_steps
from broker.connection_out import STEP_SEND_BYTES_MAX, ConnectionOut
from broker.context import BrokerContext
from broker.deferred import Deferred
from broker.doors import Door, NativeDoor
from broker.quota.throttle import ChannelMute, request_exempt, with_throttle
from broker.security.tls import (
    SNIFF_BYTES,
    ListenerTls,
    NoMatchingRule,
    TlsChannel,
    sniff,
    wrong_protocol_line,
)
from broker.session import PLAINTEXT, Refusal, Session
from protocol.clock import Clock
from protocol.codec import Chunk, FileSlice
from protocol.errors import ProtocolError
from protocol.framing import FrameDecoder
from protocol.log_limit import LogLimit
from protocol.principal import KafkaPrincipal

log = logging.getLogger("odradek.broker.server")

IDLE_CHECK_MAX_INTERVAL_S = 1.0
# The work one loop step may do for a connection (see "Bounded steps" above)
STEP_FRAMES_MAX = 8  # requests dispatched per step
STEP_FRAME_BYTES_MAX = 64 * 1024  # their frames' bytes (one larger frame still goes alone)
WRONG_PROTOCOL_LOG_INTERVAL_MS = 60_000  # one line per peer host per minute (and per refusal)


class _Slot:
    """One request's place in the answer order."""

    __slots__ = ("chunks", "done", "request_bytes", "throttle_ms")

    def __init__(self, request_bytes: int) -> None:
        self.request_bytes = request_bytes
        self.throttle_ms = 0  # client quotas: mute the connection this long once answered
        self.done = False
        self.chunks: list[Chunk] = []


class Connection(ConnectionOut, asyncio.Protocol):
    def __init__(self, server: BrokerServer) -> None:
        config = server.ctx.config
        self.server = server
        self.door = server.door
        self.ctx = server.ctx
        self.clock = server.clock
        self.decoder = FrameDecoder(config.socket_request_max_bytes)
        self.frame_max_bytes = config.socket_request_max_bytes
        # Kafka's sasl.server.max.receive.size: what a connection may send before it logs in
        self.pre_auth_frame_max_bytes = min(
            config.sasl_server_max_receive_size, config.socket_request_max_bytes
        )
        self.max_requests = config.max_inflight_requests_per_connection
        self.max_bytes = config.max_inflight_bytes_per_connection
        self.use_sendfile = config.fetch_use_sendfile
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sock_fd = -1
        self.pending: deque[_Slot] = deque()
        self.backlog: deque[bytes] = deque()  # frames read, not yet dispatched (bounded steps)
        self.dispatch_handle: asyncio.Handle | None = None  # the next step's dispatch
        self.drain_handle: asyncio.Handle | None = None  # the next step's log data
        self.inflight_bytes = 0
        self.tasks: set[asyncio.Future[Any] | Deferred[Any]] = set()  # cancelled on close
        self.reading_paused = False
        self.writing_paused = False
        self.closed = False
        self.last_active_ms = self.clock.monotonic_ms()
        self.peer = "?"
        self.session = Session(server.listener, server.security_protocol)
        # TLS listeners: the TLS session, pumped by data_received and _write (no I/O inside)
        self.tls: TlsChannel | None = None if server.tls is None else server.tls.channel()
        self.sniffing = True  # the first SNIFF_BYTES are checked for a wrong protocol
        self.prefix = b""
        # answers' chunks behind log data over TLS, written as the socket drains (_drain_out)
        self.out: deque[Chunk] = deque()
        self.slice_reads = 0  # log data chunks read for TLS (tests count them)
        self.send_steps = 0  # loop steps that sent log data from `out` (tests count them)
        self.send_step_bytes_max = 0  # the most log data one of them sent
        self.mute: ChannelMute | None = None  # client quotas' throttle (KIP-219)

    # ----- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport is not a subclass of asyncio.Transport: no isinstance check
        self.transport = tr = cast(asyncio.Transport, transport)
        peername = tr.get_extra_info("peername")
        self.peer = str(peername)
        if isinstance(peername, tuple):
            self.session = Session.accepted(
                self.server.listener, self.server.security_protocol, str(peername[0]),
                int(peername[1]),
            )  # fmt: skip
        sock = tr.get_extra_info("socket")
        self.sock_fd = sock.fileno() if sock is not None else -1
        if len(self.server.connections) >= self.ctx.config.max_connections:
            log.warning("refusing %s: %d connections open", self.peer, len(self.server.connections))
            self.closed = True
            tr.abort()
            return
        self.server.connections.add(self)
        self.loop = asyncio.get_running_loop()
        self.mute = ChannelMute(self.loop, self._check_bounds)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        for task in list(self.tasks):
            task.cancel()
        self.tasks.clear()
        self.pending.clear()
        self._cancel_steps()
        if self.mute is not None:
            self.mute.cancel()
        self.ctx.quotas.take_mute(self.session)  # a throttle asked for and never applied
        self.session.closed()  # its hooks (a share session's member gives back its records)

    def pause_writing(self) -> None:
        self.writing_paused = True
        self._check_bounds()

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.out and self.drain_handle is None:
            self._drain_out()
        self._check_bounds()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_active_ms = self.clock.monotonic_ms()
        if self.sniffing or self.tls is not None:
            data = self._receive_secure(data)
            if not data:
                return
        if not self.session.authenticated:  # a SASL listener's connection, not logged in yet
            self.decoder.max_frame_bytes = self.pre_auth_frame_max_bytes
        elif self.decoder.max_frame_bytes != self.frame_max_bytes:
            self.decoder.max_frame_bytes = self.frame_max_bytes
        try:
            frames = self.decoder.feed(data)
        except ProtocolError as exc:
            self._fatal(Refusal(str(exc)))
            return
        self.backlog.extend(frames)
        self._dispatch()

    def _dispatch(self) -> None:
        """One step's requests from the backlog: at most STEP_FRAMES_MAX frames and
        STEP_FRAME_BYTES_MAX of their bytes (at least one frame), none while the in-flight
        bounds or a quota mute hold; what is left waits for the next step (_check_bounds)."""
        self.dispatch_handle = None
        backlog = self.backlog
        frames = step_bytes = 0
        while backlog and not self._dispatch_held():
            size = len(backlog[0])
            if frames and (frames >= STEP_FRAMES_MAX or step_bytes + size > STEP_FRAME_BYTES_MAX):
                break
            frames += 1
            step_bytes += size
            self._on_frame(backlog.popleft())
            if self.closed:
                return
        self._flush()
        self._check_bounds()

    def _dispatch_held(self) -> bool:
        return (
            len(self.pending) >= self.max_requests
            or self.inflight_bytes >= self.max_bytes
            or (self.mute is not None and self.mute.muted)
        )

    # ----- requests -------------------------------------------------------------------------

    def _on_frame(self, frame: bytes) -> None:
        session = self.session
        try:
            request, handler = self.door.route(frame, session)
            self.door.admit(session, request)
        except Refusal as refusal:
            self._fatal(refusal)
            return
        notes = slow_steps.NOTES
        if notes is not None and len(notes) < 64:  # debug mode: a slow step names its requests
            notes.append((self.door, request))
        slot = _Slot(len(frame))
        self.pending.append(slot)
        self.inflight_bytes += slot.request_bytes
        metered = self.ctx.quotas.request.enabled and not request_exempt(
            request.header.api_key, request.body
        )
        started_ns = time.perf_counter_ns() if metered else 0
        failure: Exception | None = None
        try:
            result = handler(self.ctx, request, session)
        except Exception as exc:
            result, failure = None, exc
        if metered:  # request_percentage: the time this request held the loop
            used_ns = time.perf_counter_ns() - started_ns
            slot.throttle_ms = self.ctx.quotas.handled(session, used_ns, self.clock.monotonic_ms())
        if failure is not None:
            self._finished(slot, request, None, failure)
            return
        if type(result) is Deferred:
            deferred: Deferred[Any] = result
            self.tasks.add(deferred)
            deferred.add_listener(
                lambda v, e: self._deferred_done(deferred, slot, request, v, e), first=True
            )  # the answer is written before the request metrics look at it
        elif inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self.tasks.add(task)
            task.add_done_callback(lambda t: self._task_done(t, slot, request))
        else:
            self._finished(slot, request, result, None)

    def _task_done(self, task: asyncio.Future[Any], slot: _Slot, request: Any) -> None:
        self.tasks.discard(task)
        if self.closed or task.cancelled():
            return
        exc = task.exception()
        self._finished(slot, request, None if exc else task.result(), exc)
        self._flush()
        self._check_bounds()

    def _deferred_done(
        self, deferred: Deferred[Any], slot: _Slot, request: Any, result: Any,
        exc: BaseException | None,
    ) -> None:  # fmt: skip
        """Runs inside whatever completed it (an append, a timer): answer and write now."""
        self.tasks.discard(deferred)
        if self.closed:
            return
        self._finished(slot, request, result, exc)
        self._flush()
        self._check_bounds()

    def _finished(self, slot: _Slot, request: Any, result: Any, exc: BaseException | None) -> None:
        """Where every request ends: its result encoded into its slot, or its failure."""
        slot.throttle_ms = max(slot.throttle_ms, self.ctx.quotas.take_mute(self.session))
        if exc is not None:
            self._fail_request(slot, request, exc)
        else:
            self._encode(slot, request, result)

    def _encode(self, slot: _Slot, request: Any, result: Any) -> None:
        if slot.throttle_ms > 0:  # the answer says how long the client is throttled
            result = with_throttle(result, slot.throttle_ms)
        try:
            if result is not None:  # None: no response (produce with acks=0)
                slot.chunks = self.door.encode(request, result)
        except Exception as exc:  # a handler built a response that does not encode: a bug
            self._fail_request(slot, request, exc)
            return
        slot.done = True

    def _fail_request(self, slot: _Slot, request: Any, exc: BaseException) -> None:
        if isinstance(exc, Refusal):  # the handler's last answer (a failed SASL exchange)
            slot.done = True
            self._flush_until(slot)
            self._fatal(exc)
            return
        chunks = self.door.failure(request, exc, self.peer)
        if chunks is None:
            slot.done = True
            self._flush_until(slot)
            self._fatal(Refusal(f"{self.door.describe(request)} failed: {exc}"))
            return
        slot.chunks = chunks
        slot.done = True

    def _flush_until(self, failed: _Slot) -> None:
        """Drop `failed` (and what follows) so that only the answers before it are flushed."""
        while self.pending and self.pending[-1] is not failed:
            self.pending.pop()
        if self.pending:
            self.pending.pop()

    def _fatal(self, refusal: Refusal) -> None:
        """Bad input: answer what is done, then the refusal's reply (if any), then close. The
        line saying why is INFO once a minute per peer host (a client retrying bad frames in a
        loop cannot flood the log), DEBUG otherwise or when the door logged it already."""
        first = not refusal.logged and self.server.refusal_log.allow(self.session.peer_host)
        log.log(logging.INFO if first else logging.DEBUG,
                "closing %s: %s", self.peer, refusal.why)  # fmt: skip
        self._flush()
        for task in list(self.tasks):
            task.cancel()
        self.tasks.clear()
        self.pending.clear()
        self._cancel_steps()
        self.closed = True
        assert self.transport is not None
        if refusal.reply is not None:
            self._write(refusal.reply)
        self.transport.close()

    # ----- writing --------------------------------------------------------------------------

    def _flush(self) -> None:
        """Write every done slot at the head of `pending`, in order."""
        pending = self.pending
        if not pending or not pending[0].done or self.transport is None:
            return
        out: list[bytes] = []
        mute_ms = 0
        budget = STEP_SEND_BYTES_MAX  # log data sent at once; the rest queues in `out`
        while pending and pending[0].done:
            slot = pending.popleft()
            self.inflight_bytes -= slot.request_bytes
            mute_ms = max(mute_ms, slot.throttle_ms)
            for chunk in slot.chunks:
                if type(chunk) is bytes and not self.out:
                    out.append(chunk)
                    continue
                if out:
                    self._write(b"".join(out))
                    out = []
                if (
                    self.out
                    or self.tls is not None
                    or not isinstance(chunk, FileSlice)
                    or (chunk.length > budget)
                ):
                    self.out.append(chunk)  # later steps send it, and what follows it
                    continue
                budget -= chunk.length
                if not self._send_slice(chunk):
                    return
        if out:
            self._write(b"".join(out) if len(out) > 1 else out[0])
        if self.out and self.drain_handle is None:
            self._drain_out()
        self.last_active_ms = self.clock.monotonic_ms()
        if mute_ms > 0 and self.mute is not None:  # KIP-219: answered first, then muted
            self.mute.mute(mute_ms)

    def _receive_secure(self, data: bytes) -> bytes:
        """A connection's first bytes checked for a wrong protocol; then, on a TLS listener,
        socket bytes through the TLS session. Returns the plaintext (b"": none, or closed)."""
        if self.sniffing:
            self.prefix += data[: SNIFF_BYTES - len(self.prefix)]
            what = sniff(self.prefix, self.tls is not None)
            if what is not None:
                self._wrong_protocol(what)
                return b""
            self.sniffing = len(self.prefix) < SNIFF_BYTES
        tls = self.tls
        if tls is None:
            return data
        assert self.transport is not None
        was_done = tls.handshake_done
        try:
            plain = tls.feed(data)
        except ssl.SSLError as exc:
            self.transport.write(tls.outgoing())  # the alert telling the client why
            self._wrong_protocol(f"a TLS handshake that failed ({exc.reason or exc})")
            return b""
        handshake = tls.outgoing()
        if handshake:
            self.transport.write(handshake)
        if tls.handshake_done and not was_done and not self._tls_established():
            return b""
        if tls.peer_closed:  # the client's close_notify: answered with ours, then closed
            self.transport.write(tls.close_notify())
            self._abort(gracefully=True)
            return b""
        return plain

    def _tls_established(self) -> bool:
        """On SSL listeners the client certificate's mapped subject is the principal."""
        assert self.server.tls is not None and self.tls is not None
        try:
            name = self.server.tls.principal_name(self.tls)
        except NoMatchingRule as exc:
            self._wrong_protocol(f"a client certificate no rule maps ({exc})")
            return False
        if name is not None:
            self.session.principal = KafkaPrincipal.user(name)
        return True

    def _wrong_protocol(self, what: str) -> None:
        """Close at once; one log line per peer host per minute, however often it retries."""
        if self.server.wrong_protocol_log.allow(self.session.peer_host):
            log.warning(wrong_protocol_line(self.session, what, self.door.name))
        self.closed = True
        self.out.clear()
        self._cancel_steps()
        if self.transport is not None:
            self.transport.close()

    def _abort(self, gracefully: bool = False) -> None:
        """Close now, dropping every pending request; `gracefully`: after what is written."""
        self.closed = True
        self.out.clear()
        for task in list(self.tasks):
            task.cancel()
        self.tasks.clear()
        self.pending.clear()
        self._cancel_steps()
        if self.transport is None:
            return
        if gracefully:
            self.transport.close()
        else:
            self.transport.abort()

    def _cancel_steps(self) -> None:
        """Closing: drop the requests not yet dispatched and the steps scheduled."""
        self.backlog.clear()
        for handle in (self.dispatch_handle, self.drain_handle):
            if handle is not None:
                handle.cancel()
        self.dispatch_handle = self.drain_handle = None

    def _check_bounds(self) -> None:
        if self.closed or self.transport is None:
            return
        held = self._dispatch_held()
        over = (
            held
            or self.writing_paused
            or bool(self.out)  # log data still being written: read no more for now
            or bool(self.backlog)  # requests read and not yet dispatched
        )
        if over and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        elif not over and self.reading_paused:
            self.reading_paused = False
            self.transport.resume_reading()
        if self.backlog and not held and self.dispatch_handle is None and self.loop is not None:
            self.dispatch_handle = self.loop.call_soon(self._dispatch)

    def close_if_idle(self, now_ms: int, idle_ms: int) -> bool:
        busy = self.pending or self.out or self.backlog
        if self.closed or busy or now_ms - self.last_active_ms < idle_ms:
            return False
        log.info("closing %s: idle for %d ms", self.peer, now_ms - self.last_active_ms)
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        return True


class BrokerServer:
    """Accepts connections on (host, port) for one door; `port` 0 picks a free one (`.port`).

    Without `door`, `host` and `port` it is the native door on the config's host and port.
    `listener` and `security_protocol` name the listener its connections' sessions came in on."""

    def __init__(
        self,
        ctx: BrokerContext,
        clock: Clock,
        door: Door | None = None,
        host: str | None = None,
        port: int | None = None,
        listener: str = PLAINTEXT,
        security_protocol: str = PLAINTEXT,
        tls: ListenerTls | None = None,  # SSL and SASL_SSL listeners
    ) -> None:
        self.ctx = ctx
        self.clock = clock
        self.tls = tls
        self.wrong_protocol_log = LogLimit(WRONG_PROTOCOL_LOG_INTERVAL_MS, clock.monotonic_ms)
        self.refusal_log = LogLimit(WRONG_PROTOCOL_LOG_INTERVAL_MS, clock.monotonic_ms)
        self.door = NativeDoor() if door is None else door
        self.listener = listener
        self.security_protocol = security_protocol
        self.host = ctx.config.host if host is None else host
        self.connections: set[Connection] = set()
        self._server: asyncio.Server | None = None
        self._idle_task: asyncio.Task[None] | None = None
        self.port = ctx.config.port if port is None else port

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: Connection(self), self.host, self.port, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._idle_task = asyncio.create_task(self._reap_idle())
        log.info("%s listener %s (%s) on %s:%d", self.door.name, self.listener,
                 self.security_protocol, self.host, self.port)  # fmt: skip

    def check_idle(self) -> int:
        """Close idle connections now; return how many were closed."""
        now = self.clock.monotonic_ms()
        idle_ms = self.ctx.config.connections_max_idle_ms
        return sum(1 for c in list(self.connections) if c.close_if_idle(now, idle_ms))

    async def _reap_idle(self) -> None:
        interval_s = min(IDLE_CHECK_MAX_INTERVAL_S, self.ctx.config.connections_max_idle_ms / 4000)
        while True:
            await asyncio.sleep(interval_s)
            self.check_idle()

    def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()

    async def stop(self) -> None:
        """Stop accepting, close every connection, wait for the listener to be gone."""
        self.stop_accepting()
        if self._idle_task is not None:
            self._idle_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_task
        for conn in list(self.connections):
            conn._abort()
        if self._server is not None:
            await self._server.wait_closed()
