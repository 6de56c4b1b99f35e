"""Zombie fencing: a broker cut off from ZooKeeper stops acknowledging writes on its own.

Why: when the network between a broker and ZooKeeper fails while the broker runs, kazoo only
reports SUSPENDED and keeps retrying; it hears LOST only once it reaches the server again. The
server meanwhile expires the session `session_timeout_ms` after it last heard from us, the
controller elects other leaders, and a broker that went on leading would acknowledge writes
nobody will ever read, and answer reads (a coordinator's OffsetFetch) from state others have
moved past (a zombie). It cannot ask the server whether the session is gone, so it fences itself
*before* the server can expire it: at `heard_at + session_timeout - guard`, where `heard_at` is
the send time of the last request the server answered (so the server heard us at or after it).
It resigns every leadership (`Partition.resign`: produces get NOT_LEADER_FOR_PARTITION, parked
acks=all produces fail, nothing more is acknowledged; the group coordinator sees the lost
leadership on its next request), as the ISR writer does when ZooKeeper shows a newer leader.

`heard_at` comes from a probe: a one-node read every `session_timeout / 6` while connected
(kazoo's own pings are not visible to us). Measuring from SUSPENDED instead would be too late:
kazoo notices a silent connection only about two thirds of a session timeout after its last
answer, and the server expires the session one timeout after it.

`ZkFence` is the decision, a table of states driven by session states, probe answers and an
injected clock (no I/O, tested without a cluster). Each call returns what the edge must do:

    state       what it does                                 next
    IN_SESSION  leads as the controller says                 SUSPENDED (SUSPENDED), FENCED (LOST)
    SUSPENDED   connection lost; the session may live:       IN_SESSION (CONNECTED: the session
                leads on for now                             survived), FENCED (LOST, or tick
                                                             past heard_at + timeout - guard)
    FENCED      leads nothing ("resign" on every tick, so a  IN_SESSION (CONNECTED after LOST: a
                LeaderAndIsr that arrives meanwhile is       new session; "rejoin"); stays on
                undone); waits for a connection              CONNECTED in the old session: "bounce"

Rejoining: after LOST, the CONNECTED of the new session is a clean rejoin by the existing paths
(coordinator/cluster/registration.py registers again, the controller sees the broker come back and
sends it LeaderAndIsr; it follows and catches up). If instead the old session survived (the
server was down or paused longer than our timeout, so nobody expired it), the controller does
not know we resigned: we "bounce", closing the session ourselves (`ZkClient.expire_session`),
which turns this into the LOST case (a changed registration czxid is a bounce to the
controller). A bounce that fails is tried again every `bounce_retry_ms` while still connected.

`ZkFenceWatcher` is the edge: a ZooKeeper state listener, the probe and a ticking task on the
loop; it resigns through the callback it is given (the daemon passes `resign_leaderships`).

The price: ZooKeeper itself down (or unreachable from every broker) for about a session timeout
fences every broker, as if each had been cut off; they bounce and rejoin when it is back.

Left open: a process paused or stalled past its deadline (SIGSTOP, the zombie case) handles the
requests that arrived meanwhile before its next tick fences it, so it may still acknowledge an
acks=1 produce then, as Kafka's old leader may. acks=all stays safe: its followers moved to the
new leader, so its high watermark does not move.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Literal

from protocol.clock import Clock

if TYPE_CHECKING:
    from broker.replica_manager import ReplicaManager
    from coordinator.cluster.zk import ZkClient, ZkState

log = logging.getLogger("odradek.broker.fence")

FenceAction = Literal["none", "resign", "bounce", "rejoin"]
BOUNCE_RETRY_MS = 1000
TICK_MS_MAX = 250
TICK_MS_MIN = 20
PROBES_PER_TIMEOUT = 6


class FenceState(Enum):
    IN_SESSION = "in_session"
    SUSPENDED = "suspended"
    FENCED = "fenced"


@dataclass(slots=True)
class ZkFence:
    """Is the broker fenced? A pure state machine over session states and monotonic time."""

    session_timeout_ms: int
    heard_at_ms: int  # the server heard from us at or after this moment
    guard_ms: int = -1  # fence this long before the server may expire us (-1: a fifth)
    bounce_retry_ms: int = BOUNCE_RETRY_MS
    state: FenceState = FenceState.IN_SESSION
    session_lost: bool = False  # FENCED: ZooKeeper said LOST, the next CONNECTED is a new session
    bounce_due_ms: int | None = None  # FENCED, connected in the old session: when to bounce

    def __post_init__(self) -> None:
        assert self.session_timeout_ms > 0, "session_timeout_ms must be positive"
        if self.guard_ms < 0:
            self.guard_ms = self.session_timeout_ms // 5

    @property
    def fenced(self) -> bool:
        return self.state is FenceState.FENCED

    @property
    def fence_at_ms(self) -> int:
        """When a broker still disconnected fences: before the server may expire the session."""
        return self.heard_at_ms + self.session_timeout_ms - self.guard_ms

    def on_heard(self, sent_at_ms: int) -> None:
        """A request sent at `sent_at_ms` was answered: the server heard us then or later."""
        self.heard_at_ms = max(self.heard_at_ms, sent_at_ms)

    def on_state(self, zk_state: ZkState, now_ms: int) -> FenceAction:
        """A session state change seen at `now_ms`; what to do about it."""
        if zk_state == "LOST":
            was_fenced = self.fenced
            self._fence(lost=True)
            return "none" if was_fenced else "resign"
        if zk_state == "SUSPENDED":
            if self.state is FenceState.IN_SESSION:
                self.state = FenceState.SUSPENDED
            self.bounce_due_ms = None  # not connected: nothing to bounce now
            return "none"
        # CONNECTED: the server answered our handshake just now
        self.on_heard(now_ms)
        if self.state is not FenceState.FENCED:
            self.state = FenceState.IN_SESSION
            return "none"
        if self.session_lost:
            self.state = FenceState.IN_SESSION
            self.session_lost = False
            self.bounce_due_ms = None
            return "rejoin"
        self.bounce_due_ms = now_ms + self.bounce_retry_ms
        return "bounce"

    def on_tick(self, now_ms: int) -> FenceAction:
        """Time passed; fence when disconnected and the server may expire us soon."""
        if self.state is FenceState.SUSPENDED:
            if now_ms >= self.fence_at_ms:
                self._fence(lost=False)
                return "resign"
            return "none"
        if self.state is FenceState.FENCED:
            if self.bounce_due_ms is not None and now_ms >= self.bounce_due_ms:
                self.bounce_due_ms = now_ms + self.bounce_retry_ms
                return "bounce"
            return "resign"  # undo any leadership handed to us while fenced
        return "none"

    def _fence(self, lost: bool) -> None:
        self.state = FenceState.FENCED
        self.session_lost = self.session_lost or lost
        if lost:
            self.bounce_due_ms = None


def resign_leaderships(replicas: ReplicaManager) -> int:
    """Stop leading every partition this broker leads; how many it led."""
    led = [p for p in replicas.partitions.values() if p.is_leader]
    for p in led:
        p.resign()
    return len(led)


class ZkFenceWatcher:
    """Feeds `ZkFence` from the session's state listener, the probe and a tick, and acts on its
    answers."""

    def __init__(
        self,
        zk: ZkClient,
        resign: Callable[[], int],
        clock: Clock,
        session_timeout_ms: int | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.zk = zk
        timeout_ms = zk.session_timeout_ms if session_timeout_ms is None else session_timeout_ms
        self.fence = ZkFence(timeout_ms, heard_at_ms=clock.monotonic_ms())
        self._resign = resign
        self._clock = clock
        self._sleep = sleep
        self._tick_ms = max(TICK_MS_MIN, min(TICK_MS_MAX, self.fence.guard_ms // 4))
        self._probe_ms = max(TICK_MS_MIN, timeout_ms // PROBES_PER_TIMEOUT)
        self._tasks: list[asyncio.Task[None]] = []
        self._bounce: asyncio.Task[None] | None = None

    @property
    def fenced(self) -> bool:
        return self.fence.fenced

    def start(self) -> None:
        """Start watching a connected session."""
        self.fence.on_heard(self._clock.monotonic_ms())
        self.zk.add_state_listener(self._on_state)
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._ticks()), loop.create_task(self._probes())]

    async def stop(self) -> None:
        self.zk.remove_state_listener(self._on_state)
        for task in (*self._tasks, self._bounce):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _on_state(self, state: ZkState) -> None:
        self._act(self.fence.on_state(state, self._clock.monotonic_ms()), state)

    async def _ticks(self) -> None:
        while True:
            await self._sleep(self._tick_ms / 1000)
            self._act(self.fence.on_tick(self._clock.monotonic_ms()), "tick")

    async def _probes(self) -> None:
        """Read one node now and then; an answer moves `heard_at` to when it was asked."""
        while True:
            sent = self._clock.monotonic_ms()
            if self.zk.connected:
                try:
                    async with asyncio.timeout(2 * self._probe_ms / 1000):
                        await self.zk.exists("/")
                    self.fence.on_heard(sent)
                except Exception:  # not heard (a timeout too): the tick decides
                    pass
            waited = self._clock.monotonic_ms() - sent
            await self._sleep(max(0, self._probe_ms - waited) / 1000)

    def _act(self, action: FenceAction, why: str) -> None:
        if action == "resign":
            led = self._resign()
            if led or why != "tick":
                cause = "ZooKeeper session LOST"
                if why != "LOST":
                    cause = "ZooKeeper unreachable: the session may expire any moment"
                log.warning(
                    "fenced (%s): resigned %d leadership(s); "
                    "acknowledging nothing until rejoined", cause, led,
                )  # fmt: skip
        elif action == "rejoin":
            log.info("ZooKeeper session renewed: rejoining (the controller will assign roles)")
        elif action == "bounce" and (self._bounce is None or self._bounce.done()):
            self._bounce = asyncio.get_running_loop().create_task(self._expire_session())

    async def _expire_session(self) -> None:
        log.warning("reconnected in a session assumed expired: closing it to rejoin as new")
        try:
            await self.zk.expire_session()
        except Exception as exc:  # still fenced; the tick tries again
            log.warning("could not close the old ZooKeeper session: %s", exc)
