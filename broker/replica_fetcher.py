"""Followers pull from leaders: one fetcher task per leader broker, batching all its partitions.

`ReplicaFetcherManager` maps leader broker id -> `ReplicaFetcher`. LeaderAndIsr makes a
partition a follower (`add`: it moves to its leader's fetcher) or a leader (`remove`); a fetcher
left without partitions stops. Each fetcher owns one connection to its leader and loops:

    1. partitions that must truncate (every partition just added): one OffsetForLeaderEpoch
       request for all of them, each asking for the latest epoch in its own log; cut each log
       where replication_decisions.truncation_step says (KIP-101; KIP-279 asks again while the
       answer names an older epoch the follower does not have). Never by the follower's HW.
    2. otherwise one Fetch (replica_id = this broker, current_leader_epoch = the leadership it
       follows, fetch offset = its log end) for every partition not backing off. The leader
       long-polls it (replica_fetch_wait_max_ms / replica_fetch_min_bytes). The answer's bytes go
       to Log.append_as_follower unchanged (same offsets, same epochs: a byte copy, no decoding);
       the follower's HW becomes min(leader HW, own LEO), never backwards, and its log start
       offset rises to the leader's (DeleteRecords; `follower_log_start`), deleting the closed
       segments below it. Its next fetch reports it, which a waiting DeleteRecords needs.

Per-partition errors: FENCED_LEADER_EPOCH (the leader moved past our epoch) drops the partition
until the next LeaderAndIsr; OFFSET_OUT_OF_RANGE truncates to the leader's end or restarts at its
log start (replication_decisions.out_of_range_restart); others (UNKNOWN_LEADER_EPOCH: the leader
has not heard of this epoch yet, NOT_LEADER_FOR_PARTITION, ...) back off for
replica_fetch_backoff_ms and retry. A disk failure while appending or truncating
(OSError / KafkaStorageError) marks the partition `storage_failed`, stops fetching it, and is
reported to `on_storage_failure` (the replica manager takes the partition's log directory offline,
broker/log/dir_failure.py, and tells the controller, which drops this replica from the ISRs; the
leader would otherwise drop it by lag). A network failure closes the connection and
the whole fetcher backs off and reconnects. Backoffs and long polls are measured on the event
loop's clock (this is the network edge); the ISR decisions use the injected clock.

Inline rounds: the fetcher's task does not wake for each answer. A fetch is written with
`send_now` and an `InlineAnswer` (transport/connection.py) whose callback runs inside the read
that brings the answer: it applies the answer and writes the next fetch there, in the same loop
step (`_follow`, `_next_inline`), so a follower confirms an append (its next fetch offset) one
loop turn sooner than a task woken by a future would. The chain hands back to `run` when the
next round needs it (nothing ready, a truncation, stopping, an error) and to an awaited `send`
when no in-flight slot is free. Each fetch's timeout is a loop timer that fails its answer.

`ReplicaFetcherManager.steps` counts each follower step: from a fetch answer's arrival to the
next fetch request sent (appending its records, moving the HW, building the request). It is
the follower's share of an acks=all Produce's remote time at the leader, which waits for this
next request (exported as odradek_replica_fetcher_step_seconds, broker/metrics_state.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from broker.fetch_session_handler import FetchSessionHandler, SessionRequest
from broker.histograms import BucketCounts
from broker.log.appends import UnexpectedAppendOffsetError
from broker.partition import Partition
from broker.replication_decisions import (
    follower_high_watermark,
    out_of_range_restart,
    truncation_step,
)
from protocol.api.fetch import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
)
from protocol.api.metadata import BrokerInfo
from protocol.api.replication import (
    EpochEndOffset,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
)
from protocol.errors import (
    FencedLeaderEpochError,
    KafkaStorageError,
    OdradekError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    for_code,
)
from transport.connection import InlineAnswer

log = logging.getLogger("odradek.broker.replica_fetcher")
NONE = 0
Key = tuple[str, int]
SOCKET_TIMEOUT_MS = 30_000  # Kafka's replica.socket.timeout.ms


class Connection(Protocol):
    async def send(self, request: Any, timeout_ms: float | None = ...) -> Any: ...

    def send_now(self, request: Any, answer: Any = ...) -> Any:
        """Write now and return `answer`, settled when the response comes; None when that
        would mean waiting (no free in-flight slot, or the socket above its mark)."""

    async def close(self) -> None: ...


Connector = Callable[[str, int, int], Awaitable[Connection]]
"""(host, port, this broker's id) -> an open connection (transport/connection.py in the daemon)."""


async def default_connector(host: str, port: int, broker_id: int) -> Connection:
    from transport.connection import BrokerConnection

    return await BrokerConnection.connect(
        host, port, client_id=f"replica-fetcher-{broker_id}", max_in_flight=2
    )


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    fetch_max_bytes: int = 1 << 20  # per partition (replica.fetch.max.bytes)
    response_max_bytes: int = 10 << 20  # per request (replica.fetch.response.max.bytes)
    wait_max_ms: int = 500
    min_bytes: int = 1
    backoff_ms: int = 1000


@dataclass(slots=True)
class FetchState:
    partition: Partition
    leader_epoch: int  # the leadership being followed: current_leader_epoch on every request
    truncating: bool = True
    retry_at_ms: int = 0
    _asked: FetchPartition | None = None  # the last one built: kept while nothing moved

    def fetch_partition(self, max_bytes: int) -> FetchPartition:
        """What to ask the leader for (the same object while the log has not moved, which the
        fetch session compares first)."""
        log = self.partition.log
        end = log.log_end_offset
        fp = self._asked
        if fp is None or fp.fetch_offset != end or fp.log_start_offset != log.log_start_offset:
            fp = self._asked = FetchPartition(
                self.partition.index, end, max_bytes, self.leader_epoch, log.log_start_offset
            )
        return fp

    def asked(self, fp: FetchPartition | None) -> bool:
        """`fp` is what this state last asked for (so an answer to it is this state's)."""
        return fp is not None and fp is self._asked


@dataclass(frozen=True, slots=True)
class _Built:
    """One fetch request and what it asked for (`wanted` per partition, the session's view)."""

    request: FetchRequest
    wanted: dict[Key, FetchPartition]
    asked: SessionRequest


def _now_ms() -> int:
    """Backoffs run on the event loop's clock: this module is the network edge."""
    return int(asyncio.get_running_loop().time() * 1000)


class ReplicaFetcher:
    """Fetches every partition this broker follows from one leader broker."""

    def __init__(
        self,
        manager: ReplicaFetcherManager,
        leader_id: int,
    ) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.partitions: dict[Key, FetchState] = {}
        self._wake = asyncio.Event()
        self._conn: Connection | None = None
        self.session = FetchSessionHandler()  # KIP-227: each request names what moved
        self._answered_at: float | None = None  # when the last fetch answer arrived
        self._stopped = False
        self.inline_fetches = 0  # fetches written inside the read of the answer before them
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.run(), name=f"replica-fetcher-{self.leader_id}")

    def add(self, p: Partition) -> None:
        self.partitions[(p.topic, p.index)] = FetchState(p, p.leader_epoch)
        self._wake.set()

    def remove(self, key: Key) -> None:
        self.partitions.pop(key, None)

    async def stop(self) -> None:
        self._stopped = True
        self._wake.set()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self._close()

    async def _close(self) -> None:
        self._answered_at = None
        self.session.reset()  # the leader may or may not have taken the request in flight
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    # ----- the loop -------------------------------------------------------------------------

    async def run(self) -> None:
        settings = self.manager.settings
        while not self._stopped:
            ready = self._ready()
            if not ready:
                await self._idle()
                continue
            try:
                conn = await self._connection()
                truncating = [s for s in ready if s.truncating]
                if truncating:
                    self._answered_at = None  # not a step: a truncation's round trip between
                    await self._truncate(conn, truncating)
                else:
                    await self._fetch(conn, ready)
            except (OdradekError, OSError) as exc:
                log.warning("fetching from broker %d: %s", self.leader_id, exc)
                await self._close()
                await asyncio.sleep(settings.backoff_ms / 1000)

    def _ready(self) -> list[FetchState]:
        now = _now_ms()
        return [s for s in self.partitions.values() if s.retry_at_ms <= now]

    async def _idle(self) -> None:
        """Nothing to fetch: wait for a partition to be added or a backoff to end."""
        self._answered_at = None
        self._wake.clear()
        waits = [s.retry_at_ms for s in self.partitions.values()]
        timeout = None
        if waits:
            timeout = max(1, min(waits) - _now_ms()) / 1000
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._wake.wait()

    async def _connection(self) -> Connection:
        if self._conn is None:
            host, port = self.manager.address_of(self.leader_id)
            self._conn = await self.manager.connect(host, port, self.manager.broker_id)
        return self._conn

    def _current(self, key: Key, state: FetchState) -> bool:
        """The answer still concerns what we follow (no LeaderAndIsr changed it meanwhile)."""
        p = state.partition
        return (
            self.partitions.get(key) is state
            and not p.is_leader
            and p.leader_id == self.leader_id
            and p.leader_epoch == state.leader_epoch
        )

    def _backoff(self, state: FetchState) -> None:
        state.retry_at_ms = _now_ms() + self.manager.settings.backoff_ms

    def _storage_failed(self, key: Key, state: FetchState, exc: BaseException) -> None:
        log.error("%s-%d: disk failure, no longer fetching it: %s", key[0], key[1], exc)
        state.partition.storage_failed = True
        self.manager.remove(key)
        if self.manager.on_storage_failure is not None:
            self.manager.on_storage_failure(exc, f"replication of {key[0]}-{key[1]}", key)

    # ----- truncation -----------------------------------------------------------------------

    async def _truncate(self, conn: Connection, states: list[FetchState]) -> None:
        by_topic: dict[str, list[OffsetForLeaderPartition]] = {}
        for s in states:
            epoch = s.partition.log.epochs.latest_epoch
            if epoch is None:  # nothing in the log carries an epoch: nothing to compare
                s.truncating = False
                continue
            by_topic.setdefault(s.partition.topic, []).append(
                OffsetForLeaderPartition(s.partition.index, s.leader_epoch, epoch)
            )
        if not by_topic:
            return
        request = OffsetsForLeaderEpochRequest(
            self.manager.broker_id,
            [OffsetForLeaderTopic(t, parts) for t, parts in by_topic.items()],
        )
        asked = {(s.partition.topic, s.partition.index): s for s in states}
        response = await conn.send(request, timeout_ms=SOCKET_TIMEOUT_MS)
        for topic in response.topics:
            for answer in topic.partitions:
                key = (topic.name, answer.partition)
                state = asked.get(key)
                if state is not None and self._current(key, state):
                    self._apply_epoch_answer(key, state, answer)

    def _apply_epoch_answer(self, key: Key, state: FetchState, answer: EpochEndOffset) -> None:
        if answer.error_code != NONE:
            self._partition_error(key, state, answer.error_code)
            return
        plog = state.partition.log
        own_end = plog.end_offset_for_epoch(answer.leader_epoch)
        step = truncation_step(plog.log_end_offset, answer.leader_epoch, answer.end_offset, own_end)
        try:
            if step.offset < plog.log_end_offset:
                log.info(
                    "%s-%d: truncating from %d to %d (leader %d: epoch %d ends at %d)",
                    key[0], key[1], plog.log_end_offset, step.offset, self.leader_id,
                    answer.leader_epoch, answer.end_offset,
                )  # fmt: skip
                plog.truncate_to(step.offset)
        except (OSError, KafkaStorageError) as exc:
            self._storage_failed(key, state, exc)
            return
        p = state.partition
        p.high_watermark = min(p.high_watermark, plog.log_end_offset)
        state.truncating = not step.done

    # ----- fetching -------------------------------------------------------------------------

    async def _fetch(self, conn: Connection, states: list[FetchState]) -> None:
        """Fetch rounds: each answer is applied, and the next fetch written, inside the read
        that brought it (`_follow`), until a round needs this loop (module docstring)."""
        built: _Built | None = self._request(states)
        while built is not None:
            answer = InlineAnswer()
            if conn.send_now(built.request, answer) is None:  # no free slot, or socket full
                response = await conn.send(built.request, timeout_ms=self._timeout_ms())
                self._answered(response, built)
                return
            rounds: asyncio.Future[_Built | None] = asyncio.get_running_loop().create_future()
            self._follow(conn, answer, built, rounds)
            built = await rounds

    def _timeout_ms(self) -> int:
        return self.manager.settings.wait_max_ms + SOCKET_TIMEOUT_MS

    def _request(self, states: list[FetchState]) -> _Built:
        """The next fetch of `states`; counts the follower step that ends with it."""
        settings = self.manager.settings
        max_bytes = settings.fetch_max_bytes
        wanted = {(s.partition.topic, s.partition.index): s.fetch_partition(max_bytes)
                  for s in states}  # fmt: skip
        asked = self.session.build(wanted)
        request = FetchRequest(
            self.manager.broker_id, settings.wait_max_ms, settings.min_bytes,
            settings.response_max_bytes, asked.topics, asked.session_id, asked.epoch,
            asked.forgotten,
        )  # fmt: skip
        if self._answered_at is not None:
            self.manager.steps.record(self.manager.now() - self._answered_at)
        self._answered_at = None
        return _Built(request, wanted, asked)

    def _follow(
        self, conn: Connection, answer: InlineAnswer, built: _Built,
        rounds: asyncio.Future[_Built | None],
    ) -> None:  # fmt: skip
        """When `answer` comes (inside the connection's read), apply it and write the next
        fetch there (`_next_inline`); `rounds` ends the chain: None when the next round needs
        the loop (nothing ready, a truncation, stopping), a request built but not yet sent
        (no free slot), or the failure (a timeout, a lost connection)."""
        timeout_ms = self._timeout_ms()
        timer = asyncio.get_running_loop().call_later(
            timeout_ms / 1000, self._time_out, answer, timeout_ms
        )

        def on_answer(done: InlineAnswer) -> None:
            timer.cancel()
            if rounds.done():  # the fetcher stopped (its task was cancelled)
                return
            try:
                self._answered(done.result(), built)
                self._next_inline(conn, rounds)
            except Exception as exc:  # handed to the fetcher's task, as an await raises it
                if not rounds.done():
                    rounds.set_exception(exc)

        answer.add_done_callback(on_answer)

    def _time_out(self, answer: InlineAnswer, timeout_ms: int) -> None:
        answer.set_exception(RequestTimedOutError(
            f"broker {self.leader_id}: no Fetch response within {timeout_ms} ms"
        ))  # fmt: skip

    def _next_inline(self, conn: Connection, rounds: asyncio.Future[_Built | None]) -> None:
        """The next fetch, written in the step that applied the answer before it, as long as
        it is a plain fetch on the same connection; else back to the loop in `run`."""
        ready = self._ready()
        if self._stopped or conn is not self._conn or not ready or any(s.truncating for s in ready):
            rounds.set_result(None)
            return
        built = self._request(ready)
        answer = InlineAnswer()
        if conn.send_now(built.request, answer) is None:
            rounds.set_result(built)  # `_fetch` sends it, waiting for a slot
            return
        self.inline_fetches += 1
        self._follow(conn, answer, built, rounds)

    def _answered(self, response: FetchResponse, built: _Built) -> None:
        self._answered_at = self.manager.now()
        if not self.session.on_response(built.asked, response):
            log.info("fetch session with broker %d: %s; starting a new one", self.leader_id,
                     for_code(response.error_code).name)  # fmt: skip
            return
        # Answers go to the FetchState they were asked for (the one whose FetchPartition is
        # in `wanted`): a LeaderAndIsr that arrives while the request is in flight replaces
        # the state (a new epoch), and an answer to the old epoch (e.g. FENCED_LEADER_EPOCH)
        # must not drop the new one.
        wanted = built.wanted
        for topic in response.topics:
            for answer in topic.partitions:
                key = (topic.name, answer.partition)
                state = self.partitions.get(key)
                fp = wanted.get(key)
                if state is not None and state.asked(fp) and self._current(key, state):
                    assert fp is not None
                    self._apply_fetch_answer(key, state, answer, fp.fetch_offset)

    def _apply_fetch_answer(
        self, key: Key, state: FetchState, answer: FetchPartitionResponse, fetch_offset: int
    ) -> None:
        p = state.partition
        if answer.error_code == OffsetOutOfRangeError.code:
            self._out_of_range(key, state, answer, fetch_offset)
            return
        if answer.error_code != NONE:
            self._partition_error(key, state, answer.error_code)
            return
        if p.log.log_end_offset != fetch_offset:
            return  # the log moved under this answer (a truncation): fetch again
        try:
            if answer.records:
                p.log.append_as_follower(answer.records)
        except UnexpectedAppendOffsetError as exc:
            log.warning("%s-%d: %s", key[0], key[1], exc)
            state.truncating = True
            return
        except (OSError, KafkaStorageError) as exc:
            self._storage_failed(key, state, exc)
            return
        hw = follower_high_watermark(answer.high_watermark, p.log.log_end_offset)
        p.high_watermark = max(p.high_watermark, hw)
        start = follower_log_start(
            answer.log_start_offset, p.log.log_start_offset, p.high_watermark
        )
        try:
            if start is not None and p.log.advance_log_start_offset(start):
                log.info("%s-%d: log start offset now %d (the leader's)", key[0], key[1], start)
        except (OSError, KafkaStorageError) as exc:
            self._storage_failed(key, state, exc)

    def _out_of_range(
        self, key: Key, state: FetchState, answer: FetchPartitionResponse, fetch_offset: int
    ) -> None:
        action, offset = out_of_range_restart(
            fetch_offset, answer.log_start_offset, answer.log_end_offset
        )
        plog = state.partition.log
        log.warning(
            "%s-%d: offset %d out of range on leader %d [%d, %d]: %s at %d",
            key[0], key[1], fetch_offset, self.leader_id, answer.log_start_offset,
            answer.log_end_offset, action, offset,
        )  # fmt: skip
        try:
            if action == "truncate":
                plog.truncate_to(offset)
            else:
                plog.truncate_fully_and_start_at(offset)
        except (OSError, KafkaStorageError) as exc:
            self._storage_failed(key, state, exc)
            return
        p = state.partition
        p.high_watermark = min(p.high_watermark, plog.log_end_offset)

    def _partition_error(self, key: Key, state: FetchState, code: int) -> None:
        if code == FencedLeaderEpochError.code:
            log.info("%s-%d: epoch %d fenced by broker %d", key[0], key[1], state.leader_epoch,
                     self.leader_id)  # fmt: skip
            self.manager.remove(key)
            return
        log.debug("%s-%d: error %d from broker %d, backing off", key[0], key[1], code,
                  self.leader_id)  # fmt: skip
        self._backoff(state)


def follower_log_start(leader_log_start: int, own_log_start: int, own_hw: int) -> int | None:
    """Where a follower's log should start after the leader said where its own starts (after
    DeleteRecords or retention), as Kafka's follower does: the leader's, bounded by the
    follower's HW; None when it does not move forward."""
    start = min(leader_log_start, own_hw)
    return start if start > own_log_start else None


class ReplicaFetcherManager:
    def __init__(
        self,
        broker_id: int,
        settings: FetcherSettings,
        connect: Connector = default_connector,
        on_storage_failure: Callable[[BaseException, str, Key], object] | None = None,
        now: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.broker_id = broker_id
        self.now = now
        self.steps = BucketCounts()  # follower steps, seconds (module docstring)
        self.settings = settings
        self.connect = connect
        self.on_storage_failure = on_storage_failure  # (error, what was being done, partition)
        self.addresses: dict[int, tuple[str, int]] = {}
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._leader_of: dict[Key, int] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    def update_brokers(self, brokers: Iterable[BrokerInfo]) -> None:
        for b in brokers:
            self.addresses[b.node_id] = (b.host, b.port)

    def address_of(self, broker_id: int) -> tuple[str, int]:
        address = self.addresses.get(broker_id)
        if address is None:
            raise OSError(f"the address of broker {broker_id} is not known yet")
        return address

    def fetching(self, key: Key) -> bool:
        return key in self._leader_of

    def add(self, p: Partition) -> None:
        """Follow `p.leader_id` from `p`'s log end, truncating first."""
        key = (p.topic, p.index)
        self.remove(key)
        if p.leader_id < 0 or p.leader_id == self.broker_id or p.storage_failed:
            return
        fetcher = self.fetchers.get(p.leader_id)
        if fetcher is None:
            fetcher = self.fetchers[p.leader_id] = ReplicaFetcher(self, p.leader_id)
            fetcher.start()
        fetcher.add(p)
        self._leader_of[key] = p.leader_id

    def remove(self, key: Key) -> None:
        leader = self._leader_of.pop(key, None)
        fetcher = self.fetchers.get(leader) if leader is not None else None
        if fetcher is None:
            return
        fetcher.remove(key)
        if not fetcher.partitions:
            del self.fetchers[fetcher.leader_id]
            task = asyncio.create_task(fetcher.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def shutdown(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        self._leader_of.clear()
        await asyncio.gather(*(f.stop() for f in fetchers), *self._stopping)
