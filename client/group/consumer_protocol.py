"""A native consumer on KIP-848's consumer group protocol (`group_protocol="consumer"`).

The coordinator assigns (coordinator/group/consumer_group.py); the member only heartbeats
and reconciles, as Kafka's AsyncKafkaConsumer does:

- a background task sends ConsumerGroupHeartbeat every `heartbeat_interval_ms` the coordinator
  answers (and at once after a reconciliation, to report what the member now owns). The
  member id is made here (a uuid, as Kafka's v1); the epoch starts at 0 (join), then is the one
  the coordinator answers. An answer with an assignment sets the member's target.
- the consumer's poll step (`ConsumerProtocolGroup._rejoin`, through ConsumerGroup.
  ensure_active) reconciles owned -> target with `reconcile_step`: first the partitions it no
  longer owns (their positions committed with auto commit, then on_partitions_revoked for
  exactly those, then dropped and reported), then the new ones (each from its committed
  offset, on_partitions_assigned for the increment), then the owned set is reported.
- FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID (`heartbeat_action` -> REJOIN): the next poll drops
  every partition without committing (on_partitions_lost if the listener has it, else
  on_partitions_revoked) and the member rejoins with epoch 0. So does a member that has not
  polled within max_poll_interval_ms (it leaves first, with epoch -1).
- RETRY codes (coordinator moved, loading, a lost connection) rediscover the coordinator;
  any other code is FATAL: the next poll raises it with the coordinator's message (a classic
  group with members answers GROUP_ID_NOT_FOUND, for instance).
- close() leaves with epoch -1, or -2 for a static member (group_instance_id): its partitions
  stay its own until its session expires or it comes back.
- commits carry the member epoch as the generation (OffsetCommit's KIP-848 check). One
  refused with STALE_MEMBER_EPOCH (the coordinator moved the member to a newer epoch whose
  heartbeat answer it has not read yet) is retried at the newer epoch, as Kafka's consumer
  does: the member heartbeats at once to learn it, until request_timeout_ms; a member fenced
  or gone meanwhile gets the refusal.

Connection, OffsetCommit and OffsetFetch are GroupMembership's (membership.py); this module
adds the heartbeat protocol on top, moving along states.py's table: Discover (joining),
Part of a group, Rediscover, Stopped (fenced: partitions to drop before rejoining).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from client.cluster import Cluster
from client.group.consumer_group import Assignee, ConsumerGroup, _call
from client.group.membership import GroupMembership, GroupSettings
from client.group.states import ConsumerState
from client.subscription import SubscriptionState
from client.types import TopicPartition
from protocol.api.group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    NotCoordinatorError,
    OdradekError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UsageError,
    for_code,
)

log = logging.getLogger("odradek.client.group")
CLASSIC, CONSUMER = "classic", "consumer"
GROUP_PROTOCOLS = (CLASSIC, CONSUMER)
NONE = 0
UNKNOWN_MEMBER_ID = UnknownMemberIdError.code
FENCED_MEMBER_EPOCH = FencedMemberEpochError.code
RETRY_CODES = frozenset(
    {
        CoordinatorLoadInProgressError.code,
        CoordinatorNotAvailableError.code,
        NotCoordinatorError.code,
    }
)
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
# AsyncConsumer arguments that belong to the classic protocol only (librdkafka refuses them too)
CLASSIC_ONLY = ("session_timeout_ms", "heartbeat_interval_ms", "assignment_strategy")


class GroupProtocolError(UsageError, ValueError):
    """group_protocol is unknown, or a setting does not apply to it."""


def check_group_protocol(group_protocol: str, given: Iterable[str]) -> None:
    """Refuse an unknown protocol, and classic-only settings given with "consumer"."""
    if group_protocol not in GROUP_PROTOCOLS:
        raise GroupProtocolError(
            f"group_protocol must be one of {', '.join(GROUP_PROTOCOLS)}, not {group_protocol!r}"
        )
    wrong = sorted(set(given) & set(CLASSIC_ONLY))
    if group_protocol == CONSUMER and wrong:
        raise GroupProtocolError(
            f"{', '.join(wrong)} cannot be set with group_protocol='consumer': the coordinator "
            "decides the session timeout, heartbeat interval and assignor (see "
            "group_remote_assignor)"
        )


# ----- pure decisions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One reconciliation: what to give up first, what to keep, what to take after."""

    revoke: frozenset[TopicPartition]
    keep: frozenset[TopicPartition]
    add: frozenset[TopicPartition]


def reconcile_step(owned: Iterable[TopicPartition], target: Iterable[TopicPartition]) -> Step:
    own, want = frozenset(owned), frozenset(target)
    return Step(own - want, own & want, want - own)


class Action(Enum):
    OK = "ok"
    REJOIN = "rejoin"  # drop every partition (lost), rejoin with epoch 0
    RETRY = "retry"  # find the coordinator again, heartbeat again after the backoff
    FATAL = "fatal"  # stop; the next poll raises the coordinator's error


def heartbeat_action(code: int) -> Action:
    if code == NONE:
        return Action.OK
    if code in (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID):
        return Action.REJOIN
    if code in RETRY_CODES or for_code(code).retriable:
        return Action.RETRY
    return Action.FATAL


def to_wire(tps: Iterable[TopicPartition]) -> list[TopicPartitions]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(tps):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [TopicPartitions(t, ps) for t, ps in by_topic.items()]


def from_wire(parts: Iterable[TopicPartitions]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t.topic, p) for t in parts for p in t.partitions)


# ----- the membership ---------------------------------------------------------------------------


class ConsumerProtocolMembership(GroupMembership):
    def __init__(
        self, cluster: Cluster, settings: GroupSettings, server_assignor: str | None = None
    ) -> None:
        super().__init__(cluster, settings)
        self.server_assignor = server_assignor
        self.member_id = str(uuid.uuid4())
        self.generation = 0  # the member epoch; 0: joining
        self.target: frozenset[TopicPartition] | None = None  # the coordinator's, not yet ours
        self.owned: frozenset[TopicPartition] = frozenset()  # what we hold (reported)
        self.interval_s = settings.heartbeat_interval_ms / 1000
        self.fenced = False  # drop everything, then rejoin with epoch 0
        self.fatal: OdradekError | None = None
        self._wake = asyncio.Event()
        self._answered = asyncio.Event()  # set by the first answer (or a fatal error)
        self._heard = asyncio.Event()  # set after every heartbeat, answered or not

    @property
    def epoch(self) -> int:
        return self.generation

    @property
    def needs_join(self) -> bool:
        """The poll step has work: start, raise, drop after a fence, or reconcile."""
        return (
            self.fatal is not None
            or self.fenced
            or self._heartbeat_task is None
            or (self.target is not None and self.target != self.owned)
        )

    def subscribe(self, topics: Iterable[str], pattern: str | None) -> None:
        self.topics, self.pattern = sorted(set(topics)), pattern
        if self.state is ConsumerState.DOWN:
            self._move(ConsumerState.DISCOVER)
        self._wake.set()  # the new subscription goes out with the next heartbeat

    async def start(self, timeout_s: float) -> None:
        """Start heartbeating; wait (up to timeout_s) for the coordinator's first answer."""
        if self._heartbeat_task is None:
            self._heartbeat_task = asyncio.ensure_future(self._loop())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._answered.wait(), timeout_s)

    def report(self, owned: Iterable[TopicPartition]) -> None:
        self.owned = frozenset(owned)
        self._wake.set()

    def rejoin(self) -> None:
        """After the partitions were dropped: join again with epoch 0."""
        self.fenced, self.generation, self.target, self.owned = False, 0, None, frozenset()
        if self.state is ConsumerState.STOPPED:
            self._move(ConsumerState.DISCOVER)
        self._wake.set()

    # ----- heartbeats ---------------------------------------------------------------------------

    async def _loop(self) -> None:
        while not self._closed:
            self._wake.clear()
            if not self.fenced and self.fatal is None:
                try:
                    await self._tick()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # never let the heartbeat task die silently
                    log.warning("%s: heartbeat failed: %s", self.settings.group_id, exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval_s)

    async def _tick(self) -> None:
        idle_ms = (self._now() - self._last_poll_s) * 1000
        if self.generation > 0 and idle_ms > self.settings.max_poll_interval_ms:
            log.warning("%s: no poll within max_poll_interval_ms: leaving the group",
                        self.settings.group_id)  # fmt: skip
            await self._leave_once()
            self._fence()
            return
        await self.heartbeat_once()

    def _request(self, epoch: int) -> ConsumerGroupHeartbeatRequest:
        s = self.settings
        return ConsumerGroupHeartbeatRequest(
            s.group_id, self.member_id, epoch, s.group_instance_id, s.max_poll_interval_ms,
            list(self.topics), self.pattern, self.server_assignor, to_wire(self.owned),
            self.cluster.client_id or "",
        )  # fmt: skip

    async def heartbeat_once(self) -> None:
        try:
            await self._heartbeat()
        finally:
            self._heard.set()

    async def _heartbeat(self) -> None:
        resp: ConsumerGroupHeartbeatResponse | None
        try:
            resp = await self._send(self._request(self.generation))
            code = resp.error_code
        except OdradekError as exc:
            if not exc.retriable:  # the broker cannot serve it (an old one, say): stop here
                self.fatal = exc
                self._answered.set()
                return
            resp, code = None, exc.code
        action = heartbeat_action(code)
        if action is Action.OK and resp is not None:
            self._accept(resp)
        elif action is Action.REJOIN:
            log.info("%s: member %s fenced (%s): rejoining", self.settings.group_id,
                     self.member_id, for_code(code).name)  # fmt: skip
            self._fence()
        elif action is Action.RETRY:
            self._drop_coordinator()
            if self.state is ConsumerState.MEMBER:
                self._move(ConsumerState.REDISCOVER)
            await asyncio.sleep(self.settings.retry_backoff_ms / 1000)
        else:
            message = resp.error_message if resp is not None else None
            self.fatal = for_code(code)(message)
            log.error("%s: the coordinator refused this member: %s", self.settings.group_id,
                      self.fatal)  # fmt: skip
            self._answered.set()

    def _accept(self, resp: ConsumerGroupHeartbeatResponse) -> None:
        if resp.member_id:
            self.member_id = resp.member_id
        self.generation = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self.interval_s = resp.heartbeat_interval_ms / 1000
        if resp.assignment is not None:
            self.target = from_wire(resp.assignment)
        if self.state in (ConsumerState.DISCOVER, ConsumerState.REDISCOVER):
            self._move(ConsumerState.MEMBER)
        self._answered.set()

    def _fence(self) -> None:
        self.fenced = True
        self.target = None
        if self.state in (ConsumerState.MEMBER, ConsumerState.REDISCOVER):
            self._move(ConsumerState.STOPPED)

    def on_error_code(self, code: int) -> None:
        """A commit's answer: a fenced member rejoins (its commit is refused)."""
        if heartbeat_action(code) is Action.REJOIN:
            self._fence()

    # ----- commits ------------------------------------------------------------------------------

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        """GroupMembership's commit, retried at the newer epoch after STALE_MEMBER_EPOCH."""
        deadline_s = self._now() + self.settings.request_timeout_ms / 1000
        while True:
            sent = self.generation
            try:
                await super().commit(offsets)
                return
            except StaleMemberEpochError:
                if not await self._newer_epoch(sent, deadline_s):
                    raise
            log.info("%s: commit at stale epoch %d retried at epoch %d",
                     self.settings.group_id, sent, self.generation)  # fmt: skip

    def _in_group(self) -> bool:
        return (self.generation > 0 and not self.fenced and self.fatal is None
                and self._heartbeat_task is not None and not self._closed)  # fmt: skip

    async def _newer_epoch(self, stale: int, deadline_s: float) -> bool:
        """Heartbeat now until the coordinator answers an epoch other than `stale`; False when
        the member was fenced or left meanwhile, or `deadline_s` passed."""
        while self._in_group() and self.generation == stale:
            remaining_s = deadline_s - self._now()
            if remaining_s <= 0:
                return False
            self._heard.clear()
            self._wake.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._heard.wait(), remaining_s)
            if self.generation == stale:  # answered, not moved yet: back off before asking
                await asyncio.sleep(self.settings.retry_backoff_ms / 1000)
        return self._in_group()

    # ----- leaving ------------------------------------------------------------------------------

    async def _leave_once(self) -> None:
        static = self.settings.group_instance_id is not None
        epoch = STATIC_LEAVE_EPOCH if static else LEAVE_EPOCH
        with contextlib.suppress(OdradekError, OSError):
            await self._send(self._request(epoch))

    async def leave(self) -> None:
        if self.generation > 0:
            await self._leave_once()
        self.generation = 0


# ----- the consumer's side -----------------------------------------------------------------------


class ConsumerProtocolGroup(ConsumerGroup):
    """ConsumerGroup whose poll step reconciles towards the coordinator's target."""

    membership: ConsumerProtocolMembership

    def __init__(
        self,
        consumer: Assignee,
        cluster: Cluster,
        subs: SubscriptionState,
        settings: GroupSettings,
        enable_auto_commit: bool,
        auto_commit_interval_ms: int,
        server_assignor: str | None = None,
    ) -> None:
        membership = ConsumerProtocolMembership(cluster, settings, server_assignor)
        super().__init__(
            consumer, cluster, subs, settings, enable_auto_commit, auto_commit_interval_ms,
            membership,
        )  # fmt: skip

    async def _rejoin(self) -> None:
        m = self.membership
        if m._heartbeat_task is None:
            await m.start(m.settings.request_timeout_ms / 1000)
        if m.fatal is not None:
            raise m.fatal
        if m.fenced:
            await self._drop_all()
            m.rejoin()
            return
        if m.target is not None and m.target != m.owned:
            await self._reconcile(m.target)

    async def _drop_all(self) -> None:
        lost = self.consumer.assignment()
        self.consumer.apply_assignment(())
        if lost and self.listener is not None:
            on_lost = getattr(self.listener, "on_partitions_lost", None)
            await _call(on_lost or self.listener.on_partitions_revoked, lost)

    async def _reconcile(self, target: frozenset[TopicPartition]) -> None:
        m = self.membership
        step = reconcile_step(self.consumer.assignment(), target)
        if step.revoke:
            if self.enable_auto_commit:
                positions = {tp: o for tp, o in self.positions().items() if tp in step.revoke}
                try:
                    await self.commit(positions)
                except OdradekError as exc:
                    log.info("commit before revoking refused: %s", exc)
            await _call(self.listener.on_partitions_revoked if self.listener else None,
                        set(step.revoke))  # fmt: skip
            self.consumer.apply_assignment(step.keep)
            m.report(step.keep)
        if step.add:
            try:
                committed = await m.committed(step.add)
            except BaseException:
                m.report(step.keep)  # owns only what it kept; retried next poll
                raise
            self.consumer.apply_assignment(step.keep | step.add)
            for tp in sorted(step.add):
                offset = committed.get(tp)
                if offset is not None:
                    self.consumer.seek(tp, offset)
                else:
                    self.subs.request_reset(tp)
        m.report(target)
        self.rebalances += 1
        if step.add:
            await _call(self.listener.on_partitions_assigned if self.listener else None,
                        set(step.add))  # fmt: skip
