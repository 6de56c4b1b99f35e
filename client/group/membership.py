"""A consumer's membership in a group: coordinator discovery, join, heartbeats, commits.

The consumer (client/consumer.py) owns positions and the user's listener; this class owns the
protocol with the coordinator and the state of states.py:

- `join()` (Start up & discover coordinator / Stopped consumption): FindCoordinator to any
  broker, then JoinGroup on a connection of its own to the coordinator (a JoinGroup waits for
  the whole rebalance, and a broker answers a connection's requests in order, so it must not
  sit in front of fetches). Retriable failures rediscover and retry, with backoff, until
  `join_timeout_ms`. Returns the partitions to own.
- a background task heartbeats every `heartbeat_interval_ms` while Part of a group. REBALANCE_IN
  _PROGRESS / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID -> Stopped consumption (the consumer's next
  poll rejoins); NOT_COORDINATOR or a lost connection -> Rediscover coordinator, which keeps
  consuming while it looks for the new coordinator, then goes back to Part of a group.
  If the user has not polled for `max_poll_interval_ms` the member leaves the group (its
  partitions go to others) and rejoins on its next poll.
- `commit(offsets)` / `committed(tps)`: OffsetCommit (with generation and member id, so a fenced
  member's commit is refused) and OffsetFetch, to the coordinator.
- static membership (KIP-345), with `group_instance_id`: every request carries it; the member
  sends no LeaveGroup (on close nor after max_poll_interval_ms), so a restart within the session
  timeout gets its old partitions back without a rebalance. FENCED_INSTANCE_ID (another process
  took the instance id) stops consumption, and the next poll raises FencedInstanceIdError.

Time is read through the injected `monotonic_s` (the client edge passes the loop's clock).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from client.cluster import Cluster
from client.group.states import ConsumerState, check_transition
from client.types import TopicPartition
from protocol.api.group import (
    CommitPartition,
    CommitTopic,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TopicPartitions,
)
from protocol.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    NetworkError,
    OdradekError,
    RebalanceInProgressError,
    RequestTimedOutError,
    UnknownMemberIdError,
    UsageError,
    for_code,
)
from transport.connection import BrokerConnection

log = logging.getLogger("odradek.client.group")
NONE = 0
REJOIN_CODES = frozenset(
    {RebalanceInProgressError.code, IllegalGenerationError.code, UnknownMemberIdError.code}
)


@dataclass(frozen=True, slots=True)
class GroupSettings:
    group_id: str
    assignment_strategy: str = "range"
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000  # also the rebalance timeout the coordinator waits
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    join_timeout_ms: int = 300_000
    group_instance_id: str | None = None  # static membership (KIP-345); None: dynamic

    def check(self) -> None:
        if not self.group_id:
            raise UsageError("group_id must not be empty")
        if not 0 < self.heartbeat_interval_ms < self.session_timeout_ms:
            raise UsageError("heartbeat_interval_ms must be below session_timeout_ms")
        if self.max_poll_interval_ms < 1:
            raise UsageError("max_poll_interval_ms must be positive")


class GroupMembership:
    def __init__(
        self,
        cluster: Cluster,
        settings: GroupSettings,
        monotonic_s: Callable[[], float] | None = None,
    ) -> None:
        settings.check()
        self.cluster = cluster
        self.settings = settings
        self._now = monotonic_s or (lambda: asyncio.get_running_loop().time())
        self.state = ConsumerState.DOWN
        self.member_id = ""
        self.generation = -1
        self.assignment: list[TopicPartition] = []
        self.topics: list[str] = []
        self.pattern: str | None = None
        self.coordinator_id = -1
        self._conn: BrokerConnection | None = None
        self._finding = asyncio.Lock()  # held while the coordinator is looked up and connected
        self._last_poll_s = 0.0
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._closed = False
        self._fenced: FencedInstanceIdError | None = None  # another process took the instance id

    # ----- state ------------------------------------------------------------------------------

    def _move(self, target: ConsumerState) -> None:
        if target is not self.state:
            log.debug("%s: %s -> %s", self.settings.group_id, self.state.value, target.value)
        self.state = check_transition(self.state, target)

    def subscribe(self, topics: Iterable[str], pattern: str | None) -> None:
        self.topics, self.pattern = sorted(set(topics)), pattern
        if self.state is ConsumerState.DOWN:
            self._move(ConsumerState.DISCOVER)
        elif self.state in (ConsumerState.MEMBER, ConsumerState.REDISCOVER):
            self._move(ConsumerState.STOPPED)

    @property
    def needs_join(self) -> bool:
        return self.state in (ConsumerState.DISCOVER, ConsumerState.STOPPED)

    def rejoin_later(self) -> None:
        """The next poll rejoins (the assignment could not be taken up)."""
        if self.state in (ConsumerState.MEMBER, ConsumerState.REDISCOVER):
            self._move(ConsumerState.STOPPED)

    def polled(self) -> None:
        self._last_poll_s = self._now()

    # ----- coordinator ------------------------------------------------------------------------

    async def _coordinator(self) -> BrokerConnection:
        """The connection to the coordinator, found and opened when there is none. One lookup
        at a time: the heartbeat task and the consumer both rediscover after a coordinator
        dies, and two concurrent opens would leave one connection nobody closes."""
        async with self._finding:
            if self._conn is not None and not self._conn.closed:
                return self._conn
            resp: FindCoordinatorResponse = await self.cluster.send_to_any(
                FindCoordinatorRequest(self.settings.group_id),
                self.settings.request_timeout_ms,
                read=True,
            )
            if resp.error_code != NONE:
                raise for_code(resp.error_code)(resp.error_message)
            conn = await self.cluster.connect(resp.host, resp.port, max_in_flight=10)
            if self._closed and self.state is ConsumerState.DOWN:  # close() is done with it
                conn.abort()
                raise NetworkError(f"group {self.settings.group_id!r}: the consumer is closed")
            self._conn = conn
            self.coordinator_id = resp.node_id
            return conn

    def _drop_coordinator(self) -> None:
        if self._conn is not None:
            self._conn.abort()
        self._conn = None
        self.coordinator_id = -1

    async def _send(self, request: Any, timeout_ms: float | None = None) -> Any:
        conn = await self._coordinator()
        try:
            return await conn.send(request, timeout_ms or self.settings.request_timeout_ms)
        except (NetworkError, RequestTimedOutError):
            self._drop_coordinator()
            raise

    async def _call(self, request: Any, code_of: Callable[[Any], int]) -> Any:
        """Send to the coordinator, rediscovering it and retrying while the failure is
        retriable (it moved, is loading, the connection dropped), up to request_timeout_ms."""
        deadline = self._now() + self.settings.request_timeout_ms / 1000
        while True:
            try:
                resp = await self._send(request)
                code = code_of(resp)
            except OdradekError as exc:
                if not exc.retriable or self._now() > deadline:
                    raise
                resp, code = None, exc.code
            if code == NONE or not for_code(code).retriable:
                return resp
            if self._now() > deadline:
                raise for_code(code)(f"{type(request).__name__} kept failing")
            self._drop_coordinator()
            await asyncio.sleep(self.settings.retry_backoff_ms / 1000)

    # ----- join ---------------------------------------------------------------------------------

    async def join(self) -> list[TopicPartition]:
        """Join (or rejoin) the group; the partitions to own. Retries retriable failures."""
        deadline = self._now() + self.settings.join_timeout_ms / 1000
        while True:
            try:
                return await self._join_once()
            except OdradekError as exc:
                if not exc.retriable and exc.code not in REJOIN_CODES:
                    raise
                if self._now() > deadline:
                    raise RequestTimedOutError(f"could not join group: {exc}") from None
                if exc.code == UnknownMemberIdError.code:
                    self.member_id = ""
                elif exc.code not in REJOIN_CODES:
                    self._drop_coordinator()
                log.info("%s: join failed (%s); retrying", self.settings.group_id, exc)
                await asyncio.sleep(self.settings.retry_backoff_ms / 1000)

    async def _join_once(self) -> list[TopicPartition]:
        s = self.settings
        if self._fenced is not None:
            raise self._fenced
        request = JoinGroupRequest(
            s.group_id, s.session_timeout_ms, self.topics, self.member_id, s.assignment_strategy,
            s.max_poll_interval_ms, self.cluster.client_id or "", self.pattern,
            s.group_instance_id,
        )  # fmt: skip
        timeout_ms = s.max_poll_interval_ms + s.session_timeout_ms + s.request_timeout_ms
        resp: JoinGroupResponse = await self._send(request, timeout_ms)
        if resp.error_code == FencedInstanceIdError.code:
            self._fenced = FencedInstanceIdError(resp.error_message or _FENCED)
            raise self._fenced
        if resp.error_code != NONE:
            raise for_code(resp.error_code)(resp.error_message)
        self.member_id, self.generation = resp.member_id, resp.generation_id
        self.assignment = [TopicPartition(t.topic, p) for t in resp.partitions_to_own
                           for p in t.partitions]  # fmt: skip
        self._move(ConsumerState.MEMBER)
        self._last_poll_s = self._now()
        if self._heartbeat_task is None or self._heartbeat_task.done():
            self._heartbeat_task = asyncio.ensure_future(self._heartbeat_loop())
        log.info("%s: joined generation %d as %s with %d partitions", s.group_id,
                 self.generation, self.member_id, len(self.assignment))  # fmt: skip
        return list(self.assignment)

    # ----- heartbeats -----------------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        interval_s = self.settings.heartbeat_interval_ms / 1000
        while not self._closed:
            await asyncio.sleep(interval_s)
            try:
                await self.heartbeat_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never let the heartbeat task die silently
                log.warning("%s: heartbeat failed: %s", self.settings.group_id, exc)

    async def heartbeat_once(self) -> None:
        if self.state is ConsumerState.REDISCOVER:
            await self._rediscover()
            return
        if self.state is not ConsumerState.MEMBER:
            return
        if (self._now() - self._last_poll_s) * 1000 > self.settings.max_poll_interval_ms:
            log.warning("%s: no poll within max_poll_interval_ms: leaving the group",
                        self.settings.group_id)  # fmt: skip
            await self.leave()
            return
        request = HeartbeatRequest(self.settings.group_id, self.generation, self.member_id,
                                   self.settings.group_instance_id)  # fmt: skip
        try:
            resp: HeartbeatResponse = await self._send(request)
        except OdradekError:
            self._move(ConsumerState.REDISCOVER)
            return
        self.on_error_code(resp.error_code)

    def on_error_code(self, code: int) -> None:
        """React to a coordinator's answer (heartbeat or commit) as the state table says."""
        if code == NONE or self.state not in (ConsumerState.MEMBER, ConsumerState.REDISCOVER):
            return
        if code == FencedInstanceIdError.code:  # fatal: the next poll raises it
            log.error("%s: %s", self.settings.group_id, _FENCED)
            self._fenced = FencedInstanceIdError(_FENCED)
            self._move(ConsumerState.STOPPED)
        elif code in REJOIN_CODES:
            if code == UnknownMemberIdError.code:
                self.member_id = ""
            self._move(ConsumerState.STOPPED)
        elif for_code(code).retriable:  # NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, loading
            self._drop_coordinator()
            self._move(ConsumerState.REDISCOVER)

    async def _rediscover(self) -> None:
        try:
            await self._coordinator()
        except OdradekError as exc:
            log.info("%s: coordinator not found yet: %s", self.settings.group_id, exc)
            return
        self._move(ConsumerState.MEMBER)

    # ----- offsets --------------------------------------------------------------------------------

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        """Commit with this member's generation; raises the coordinator's error."""
        if not offsets:
            return
        by_topic: dict[str, list[CommitPartition]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(CommitPartition(tp.partition, offset))
        in_group = self.state is not ConsumerState.DOWN and bool(self.member_id)
        request = OffsetCommitRequest(
            self.settings.group_id, self.generation if in_group else -1,
            self.member_id if in_group else "",
            [CommitTopic(t, ps) for t, ps in by_topic.items()],
            self.settings.group_instance_id if in_group else None,
        )  # fmt: skip
        resp: OffsetCommitResponse = await self._call(request, _first_commit_code)
        for topic in resp.topics:
            for p in topic.partitions:
                if p.error_code != NONE:
                    self.on_error_code(p.error_code)
                    raise for_code(p.error_code)(f"commit of {topic.name}-{p.partition} refused")

    async def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = OffsetFetchRequest(
            self.settings.group_id, [TopicPartitions(t, ps) for t, ps in by_topic.items()]
        )
        resp: OffsetFetchResponse = await self._call(request, lambda r: int(r.error_code))
        if resp.error_code != NONE:
            raise for_code(resp.error_code)("OffsetFetch failed")
        out: dict[TopicPartition, int | None] = {}
        for topic in resp.topics:
            for p in topic.partitions:
                out[TopicPartition(topic.name, p.partition)] = p.offset if p.offset >= 0 else None
        return out

    # ----- leaving --------------------------------------------------------------------------------

    async def leave(self) -> None:
        """LeaveGroup (best effort); the next poll rejoins with a new member id. A static member
        sends none (Kafka's clients do not): it stays in the group until its session times
        out, so a restart within it keeps its partitions."""
        if self.member_id and self.settings.group_instance_id is None:
            with contextlib.suppress(OdradekError):
                await self._send(LeaveGroupRequest(self.settings.group_id, self.member_id))
        self.member_id, self.generation = "", -1
        if self.state in (ConsumerState.MEMBER, ConsumerState.REDISCOVER):
            self._move(ConsumerState.STOPPED)

    async def close(self, leave: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat_task
        if leave and self.state is not ConsumerState.DOWN:
            with contextlib.suppress(OdradekError, OSError):
                await self.leave()
        self.state = ConsumerState.DOWN
        self._drop_coordinator()


_FENCED = (
    "another consumer joined with this group_instance_id (static membership): this one "
    "is fenced and must be closed"
)


def _first_commit_code(resp: OffsetCommitResponse) -> int:
    for topic in resp.topics:
        for p in topic.partitions:
            if p.error_code != NONE:
                return p.error_code
    return NONE
