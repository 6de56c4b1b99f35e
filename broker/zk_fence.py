"""Zombie fencing: a broker cut off from ZooKeeper stops acknowledging writes on its own.

Why: when the network between a broker and ZooKeeper fails while the broker runs, kazoo only
reports SUSPENDED and keeps retrying; it hears LOST only once it reaches the server again. The
server meanwhile expires the session after `session_timeout_ms`, the controller elects other
leaders, and a broker that went on leading would acknowledge writes nobody will ever read (a
zombie). It cannot ask the server whether the session is gone, so once `fence_after_ms` (the
session timeout) has passed since the connection dropped, it assumes so and fences itself: it
resigns every leadership (`Partition.resign`: produces get NOT_LEADER_FOR_PARTITION, parked
acks=all produces fail, nothing more is acknowledged), as the ISR writer does when ZooKeeper
shows a newer leader.

`ZkFence` is the decision, a table of states driven by session states and an injected clock
(no I/O, tested without a cluster). Each call returns what the edge must do:

    state       what it does                                 next
    IN_SESSION  leads as the controller says                 SUSPENDED (SUSPENDED), FENCED (LOST)
    SUSPENDED   connection lost at `suspended_at_ms`; the    IN_SESSION (CONNECTED: the session
                session may live: leads on for now           survived), FENCED (LOST, or tick
                                                             past suspended_at + fence_after)
    FENCED      leads nothing ("resign" on every tick, so a  IN_SESSION (CONNECTED after LOST: a
                LeaderAndIsr that arrives meanwhile is       new session; "rejoin"); stays on
                undone); waits for a connection              CONNECTED in the old session: "bounce"

Rejoining: after LOST, the CONNECTED of the new session is a clean rejoin by the existing paths
(coordinator/registration.py registers again, the controller sees the broker come back and
sends it LeaderAndIsr; it follows and catches up). If instead the old session survived (the
server was down or paused longer than our timeout, so nobody expired it), the controller does
not know we resigned: we "bounce", closing the session ourselves (`ZkClient.expire_session`),
which turns this into the LOST case (a changed registration czxid is a bounce to the
controller). A bounce that fails is tried again every `bounce_retry_ms` while still connected.

`ZkFenceWatcher` is the edge: a ZooKeeper state listener plus a ticking task on the loop; it
resigns through the callback it is given (the daemon passes `resign_leaderships`).

Left open, as in Kafka with ZooKeeper: between the server expiring the session and the fence,
an acks=1 produce may still be acknowledged by the old leader (acks=all is not: its followers
have moved to the new leader, so its high watermark does not move).
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
    from coordinator.zk import ZkClient, ZkState

log = logging.getLogger("odradek.broker.fence")

FenceAction = Literal["none", "resign", "bounce", "rejoin"]
BOUNCE_RETRY_MS = 1000
TICK_MS_MAX = 250
TICK_MS_MIN = 20


class FenceState(Enum):
    IN_SESSION = "in_session"
    SUSPENDED = "suspended"
    FENCED = "fenced"


@dataclass(slots=True)
class ZkFence:
    """Is the broker fenced? A pure state machine over session states and monotonic time."""

    fence_after_ms: int
    bounce_retry_ms: int = BOUNCE_RETRY_MS
    state: FenceState = FenceState.IN_SESSION
    suspended_at_ms: int = 0
    session_lost: bool = False  # FENCED: ZooKeeper said LOST, the next CONNECTED is a new session
    bounce_due_ms: int | None = None  # FENCED, connected in the old session: when to bounce

    def __post_init__(self) -> None:
        assert self.fence_after_ms > 0, "fence_after_ms must be positive"

    @property
    def fenced(self) -> bool:
        return self.state is FenceState.FENCED

    def on_state(self, zk_state: ZkState, now_ms: int) -> FenceAction:
        """A session state change seen at `now_ms`; what to do about it."""
        if zk_state == "LOST":
            was_fenced = self.fenced
            self._fence(lost=True)
            return "none" if was_fenced else "resign"
        if zk_state == "SUSPENDED":
            if self.state is FenceState.IN_SESSION:
                self.state = FenceState.SUSPENDED
                self.suspended_at_ms = now_ms
            self.bounce_due_ms = None  # not connected: nothing to bounce now
            return "none"
        # CONNECTED
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
        """Time passed; fence when the connection has been gone for `fence_after_ms`."""
        if self.state is FenceState.SUSPENDED:
            if now_ms - self.suspended_at_ms >= self.fence_after_ms:
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
    """Feeds `ZkFence` from the session's state listener and a tick, and acts on its answers."""

    def __init__(
        self,
        zk: ZkClient,
        resign: Callable[[], int],
        clock: Clock,
        fence_after_ms: int | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.zk = zk
        self.fence = ZkFence(zk.session_timeout_ms if fence_after_ms is None else fence_after_ms)
        self._resign = resign
        self._clock = clock
        self._sleep = sleep
        self._tick_ms = max(TICK_MS_MIN, min(TICK_MS_MAX, self.fence.fence_after_ms // 10))
        self._ticker: asyncio.Task[None] | None = None
        self._bounce: asyncio.Task[None] | None = None

    @property
    def fenced(self) -> bool:
        return self.fence.fenced

    def start(self) -> None:
        self.zk.add_state_listener(self._on_state)
        self._ticker = asyncio.get_running_loop().create_task(self._ticks())

    async def stop(self) -> None:
        self.zk.remove_state_listener(self._on_state)
        for task in (self._ticker, self._bounce):
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

    def _act(self, action: FenceAction, why: str) -> None:
        if action == "resign":
            led = self._resign()
            if led or why != "tick":
                cause = "ZooKeeper session LOST"
                if why != "LOST":
                    cause = f"no ZooKeeper for {self.fence.fence_after_ms} ms, session assumed gone"
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
