"""The controller's channel to the brokers: one connection and one ordered queue per live broker.

How it works: `BrokerChannel.add_broker(id, host, port)` starts a sender task for that broker.
`send(id, request, on_response)` appends to the broker's bounded queue and returns at once (the
controller's event loop never waits on a broker). The sender takes requests one at a time, in
order (LeaderAndIsr before the UpdateMetadata that follows it, as Kafka's RequestSendThread
does), connects on demand with `transport.connection.BrokerConnection`, and on a network error or
time-out reconnects with exponential backoff and sends the same request again, until it is
answered or the broker is removed. An error answer (for example STALE_CONTROLLER_EPOCH) is handed
to `on_response` and not retried.

Death watch: when `on_unreachable` is set (the controller sets it), each broker's sender also
keeps its connection open while idle and calls `on_unreachable(broker_id)` the moment it drops
or cannot be opened (again after each backoff): a SIGKILLed broker's kernel closes the socket
at once, and the controller probes its ports (coordinator/controller/fast_death.py).

Limits: `queue_max` requests per broker. When a queue is full the channel drops that broker's
queue and calls `on_overflow(broker_id)`; the controller then sends that broker its full state
again (one LeaderAndIsr and one UpdateMetadata), which supersedes everything dropped.

`send_leaders_first(channel, requests, leaders)`: LeaderAndIsr to the new leaders first, to the
others once every leader answered (or after `LEADERS_FIRST_WAIT_S`, if one does not), so
followers never ask a leader-to-be for data before it knows it leads. The followers' requests
are queued at once behind a gate (`send(..., gate=)`), so per-broker order is kept: a later
StopReplica can never overtake an earlier LeaderAndIsr.

`RecordingChannel` implements the same interface and only records what would be sent (and
answers every request at once with None): the controller's logic is tested with it, without
brokers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from protocol.errors import NetworkError, OdradekError, RequestTimedOutError
from transport.connection import BrokerConnection

log = logging.getLogger(__name__)

ResponseCallback = Callable[[int, Any], None]  # (broker id, response or OdradekError)
Connect = Callable[[str, int], Awaitable[BrokerConnection]]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_QUEUE_MAX = 1000
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
BACKOFF_MIN_MS = 50
BACKOFF_MAX_MS = 2000
FLUSH_POLL_S = 0.005
LEADERS_FIRST_WAIT_S = 0.5  # followers' LeaderAndIsr waits at most this for the leaders' answers


class ControllerChannel(Protocol):
    def add_broker(self, broker_id: int, host: str, port: int) -> None: ...

    def remove_broker(self, broker_id: int) -> None: ...

    def send(
        self,
        broker_id: int,
        request: Any,
        on_response: ResponseCallback | None = None,
        gate: asyncio.Event | None = None,
    ) -> None: ...

    async def close(self) -> None: ...

    async def flush(self, timeout_s: float) -> bool: ...


@dataclass
class _Queued:
    request: Any
    on_response: ResponseCallback | None
    gate: asyncio.Event | None = None  # delivered only once set; later requests wait behind it


class _BrokerSender:
    """One broker's queue, connection and sender task."""

    def __init__(self, channel: BrokerChannel, broker_id: int, host: str, port: int) -> None:
        self.channel = channel
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.queue: asyncio.Queue[_Queued] = asyncio.Queue(channel.queue_max)
        self.conn: BrokerConnection | None = None
        self.busy = False  # a request taken from the queue is being delivered
        self._connecting = asyncio.Lock()
        loop = asyncio.get_running_loop()
        self.task = loop.create_task(self._run())
        self.watch = loop.create_task(self._watch()) if channel.on_unreachable else None

    @property
    def idle(self) -> bool:
        return not self.busy and self.queue.empty()

    async def _run(self) -> None:
        while True:
            item = await self.queue.get()
            self.busy = True
            try:
                if item.gate is not None:
                    await item.gate.wait()
                response = await self._deliver(item.request)
            finally:
                self.busy = False
            if item.on_response is not None:
                try:
                    item.on_response(self.broker_id, response)
                except Exception:
                    log.exception("controller response callback failed")

    async def _deliver(self, request: Any) -> Any:
        """Send until answered; returns the response or the error the broker answered with."""
        backoff_ms = BACKOFF_MIN_MS
        while True:
            try:
                conn = await self._connection()
                return await conn.send(request, timeout_ms=self.channel.request_timeout_ms)
            except (NetworkError, RequestTimedOutError) as exc:
                log.info("broker %d: %s; retrying in %d ms", self.broker_id, exc, backoff_ms)
                await self._drop_connection()
            except OdradekError as exc:  # the broker answered with an error: not retried
                return exc
            await self.channel.sleep(backoff_ms / 1000)
            backoff_ms = min(backoff_ms * 2, BACKOFF_MAX_MS)

    async def _connection(self) -> BrokerConnection:
        async with self._connecting:  # the sender and the watch share one connection
            if self.conn is None or self.conn.closed:
                self.conn = await self.channel.connect(self.host, self.port)
            return self.conn

    async def _watch(self) -> None:
        """Hold a connection open; report the broker each time it drops or fails to open."""
        backoff_ms = BACKOFF_MIN_MS
        while True:
            try:
                conn = await self._connection()
            except (NetworkError, RequestTimedOutError):
                self.channel.report_unreachable(self.broker_id)
                await self.channel.sleep(backoff_ms / 1000)
                backoff_ms = min(backoff_ms * 2, BACKOFF_MAX_MS)
                continue
            backoff_ms = BACKOFF_MIN_MS
            await conn.wait_closed()
            self.channel.report_unreachable(self.broker_id)

    async def _drop_connection(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None

    async def close(self) -> None:
        for task in (self.task, self.watch):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self._drop_connection()


class BrokerChannel:
    """The real channel (see the module docstring)."""

    def __init__(
        self,
        controller_id: int,
        *,
        on_overflow: Callable[[int], None] | None = None,
        queue_max: int = DEFAULT_QUEUE_MAX,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        connect: Connect | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.controller_id = controller_id
        self.on_overflow = on_overflow
        # set before add_broker: each sender then watches its connection (see the docstring)
        self.on_unreachable: Callable[[int], None] | None = None
        self.queue_max = queue_max
        self.request_timeout_ms = request_timeout_ms
        self.connect: Connect = connect or self._connect
        self.sleep = sleep
        self._senders: dict[int, _BrokerSender] = {}
        self._closing: set[asyncio.Task[None]] = set()

    async def _connect(self, host: str, port: int) -> BrokerConnection:
        return await BrokerConnection.connect(
            host, port, client_id=f"controller-{self.controller_id}"
        )

    def report_unreachable(self, broker_id: int) -> None:
        if self.on_unreachable is not None and broker_id in self._senders:
            try:
                self.on_unreachable(broker_id)
            except Exception:
                log.exception("controller unreachable callback failed")

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        old = self._senders.get(broker_id)
        if old is not None and (old.host, old.port) == (host, port):
            return
        if old is not None:
            self.remove_broker(broker_id)
        self._senders[broker_id] = _BrokerSender(self, broker_id, host, port)

    def remove_broker(self, broker_id: int) -> None:
        sender = self._senders.pop(broker_id, None)
        if sender is not None:
            task = asyncio.get_running_loop().create_task(sender.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    def send(
        self,
        broker_id: int,
        request: Any,
        on_response: ResponseCallback | None = None,
        gate: asyncio.Event | None = None,
    ) -> None:
        sender = self._senders.get(broker_id)
        if sender is None:
            log.warning("no channel to broker %d; %s dropped", broker_id, type(request).__name__)
            return
        try:
            sender.queue.put_nowait(_Queued(request, on_response, gate))
        except asyncio.QueueFull:
            log.warning("queue to broker %d is full: dropped; full resync", broker_id)
            while not sender.queue.empty():
                sender.queue.get_nowait()
            if self.on_overflow is not None:
                self.on_overflow(broker_id)

    async def flush(self, timeout_s: float) -> bool:
        """Wait until every queued request has been answered (a controller about to resign
        lets its last LeaderAndIsr requests arrive); False if that took over `timeout_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not all(sender.idle for sender in self._senders.values()):
            if loop.time() >= deadline:
                return False
            await self.sleep(FLUSH_POLL_S)
        return True

    def queued(self, broker_id: int) -> int:
        sender = self._senders.get(broker_id)
        return 0 if sender is None else sender.queue.qsize()

    async def close(self) -> None:
        for broker_id in list(self._senders):
            self.remove_broker(broker_id)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


def send_leaders_first(
    channel: ControllerChannel,
    requests: dict[int, Any],
    leaders: set[int],
    wait_s: float = LEADERS_FIRST_WAIT_S,
) -> None:
    """Send `requests` (broker id -> request): the brokers in `leaders` get theirs at once; the
    others' are queued now (so whatever is sent to them later still comes after) behind a gate
    that opens when all of those leaders have answered or `wait_s` has passed."""
    first = [b for b in requests if b in leaders]
    rest = [b for b in requests if b not in leaders]
    if not first or not rest:
        for b, request in requests.items():
            channel.send(b, request)
        return
    gate = asyncio.Event()
    waiting = set(first)
    timer = asyncio.get_running_loop().call_later(wait_s, gate.set)

    def answered(broker_id: int, _response: Any) -> None:
        waiting.discard(broker_id)
        if not waiting:
            timer.cancel()
            gate.set()

    for b in first:
        channel.send(b, requests[b], answered)
    for b in rest:
        channel.send(b, requests[b], None, gate)


@dataclass
class RecordingChannel:
    """Records (broker id, request) instead of sending; answers each at once with None."""

    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    sent: list[tuple[int, Any]] = field(default_factory=list)
    closed: bool = False

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        self.brokers[broker_id] = (host, port)

    def remove_broker(self, broker_id: int) -> None:
        self.brokers.pop(broker_id, None)

    def send(
        self,
        broker_id: int,
        request: Any,
        on_response: ResponseCallback | None = None,
        gate: asyncio.Event | None = None,
    ) -> None:
        assert broker_id in self.brokers, f"send to unknown broker {broker_id}"
        self.sent.append((broker_id, request))
        if on_response is not None:
            on_response(broker_id, None)

    async def close(self) -> None:
        self.closed = True

    async def flush(self, timeout_s: float) -> bool:
        return True  # nothing is ever in flight

    def of_type(self, cls: type) -> list[tuple[int, Any]]:
        return [(b, r) for b, r in self.sent if isinstance(r, cls)]

    def clear(self) -> None:
        self.sent.clear()
