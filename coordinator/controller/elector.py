"""Controller election (seed 002): every broker tries to create the ephemeral /controller znode.

How it works: `ControllerElector.start()` watches /controller and the session state; every
change wakes one reconcile task, which compares the world with what we are doing:
- /controller missing: create it ({"brokerid": N, "timestamp": ..., "version": 1}) and bump
  /controller_epoch (created as 1 if missing, else a set conditional on its version) in one
  ZooKeeper transaction (so /controller never exists at the epoch it replaces); the winner
  starts a `Controller` (coordinator/controller/core.py) with that epoch. Losers get
  ZkNodeExists and keep watching.
- /controller owned by our session but no controller running (we were SUSPENDED and the
  session survived): start a Controller again at the current epoch (it reloads everything).
- /controller owned by another session: make sure we are not acting; remember its broker id.

Session states: on SUSPENDED the controller stops acting at once (the session may already be
gone and another broker may be controller); on CONNECTED we check whether /controller is still
ours. On LOST our ephemeral /controller is gone; we rejoin the election after reconnecting.
If the controller stops itself (fenced because another controller bumped the epoch, ZooKeeper
trouble in the middle of an event, a failed start), the elector reconciles again after a pause:
a controller that still owns /controller starts afresh from ZooKeeper's state.

`stop()` stops the controller and deletes /controller if it is ours, so another broker takes
over at once instead of after the session timeout.

While another broker is controller, a task (`fast_death.watch_controller`) holds a connection
to it; if the controller's ports refuse connections (its process is gone), that /controller
node is deleted and the election runs at once (coordinator/controller/fast_death.py says why it is
safe).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.topics import ensure_layout
from coordinator.cluster.zk import (
    OpCreate,
    OpSet,
    WatchHandle,
    ZkBadVersion,
    ZkClient,
    ZkConnectionLost,
    ZkError,
    ZkNodeExists,
    ZkNoNode,
    ZkState,
)
from coordinator.cluster.zk_paths import ControllerInfo
from coordinator.controller.channel import BrokerChannel, ControllerChannel
from coordinator.controller.core import Controller, ControllerConfig, Event
from coordinator.controller.fast_death import watch_controller
from protocol.clock import Clock, SystemClock

__all__ = ["Controller", "ControllerConfig", "ControllerElector", "bump_controller_epoch"]

log = logging.getLogger(__name__)

ChannelFactory = Callable[[int, Callable[[int], None]], ControllerChannel]
Sleep = Callable[[float], Awaitable[None]]
RETRY_DELAY_S = 0.5
EPOCH_RETRIES = 5


def default_channel_factory(
    broker_id: int, on_overflow: Callable[[int], None]
) -> ControllerChannel:
    return BrokerChannel(broker_id, on_overflow=on_overflow)


async def bump_controller_epoch(
    zk: ZkClient, create_controller: bytes | None = None
) -> tuple[int, int]:
    """Increment /controller_epoch (create it as 1 if missing), conditionally on its version.
    With `create_controller`, the ephemeral /controller holding it is created in the same
    transaction, as Kafka registers its controller: /controller never exists at the epoch it
    replaces, so a broker that judged the previous controller dead, its epoch read before, can
    never delete the winner's node (coordinator/controller/fast_death.py; the node is at version 0
    like the dead one's). Raises ZkNodeExists (path /controller) when another broker holds
    /controller.
    Returns (epoch, /controller_epoch's znode version)."""
    register = [] if create_controller is None else [
        OpCreate(paths.CONTROLLER, create_controller, ephemeral=True)
    ]  # fmt: skip
    for _ in range(EPOCH_RETRIES):
        bump: OpCreate | OpSet
        try:
            data, version = await zk.get(paths.CONTROLLER_EPOCH)
        except ZkNoNode:
            epoch, bump = 1, OpCreate(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(1))
        else:
            epoch = paths.decode_controller_epoch(data) + 1
            bump = OpSet(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(epoch), version)
        try:
            results = await zk.transaction([*register, bump])
        except (ZkBadVersion, ZkNodeExists, ZkNoNode) as exc:
            if exc.path == paths.CONTROLLER_EPOCH:
                continue  # another broker moved the epoch between our read and our write
            raise
        return epoch, 0 if isinstance(bump, OpCreate) else results[-1].version
    raise ZkBadVersion("/controller_epoch kept changing", paths.CONTROLLER_EPOCH)


async def read_controller_epoch(zk: ZkClient) -> tuple[int, int]:
    data, version = await zk.get(paths.CONTROLLER_EPOCH)
    return paths.decode_controller_epoch(data), version


class ControllerElector:
    """Joins the election for one broker; runs a Controller while it wins."""

    def __init__(
        self,
        zk: ZkClient,
        broker_id: int,
        *,
        clock: Clock | None = None,
        channel_factory: ChannelFactory = default_channel_factory,
        config: ControllerConfig | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.clock = clock or SystemClock()
        self.channel_factory = channel_factory
        self.config = config or ControllerConfig()
        self._sleep = sleep
        self.controller: Controller | None = None
        self.controller_id: int | None = None  # who holds /controller, as last seen
        self._wake = asyncio.Event()
        self._suspended = False
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._watch: WatchHandle | None = None
        self._ctrl_watch: tuple[int, int, asyncio.Task[bool]] | None = None  # (id, czxid, task)

    @property
    def is_controller(self) -> bool:
        return self.controller is not None and self.controller.active

    @property
    def active_controller(self) -> Controller | None:
        """The Controller while we are the controller (for the controller-only admin APIs)."""
        return self.controller if self.is_controller else None

    @property
    def controller_epoch(self) -> int | None:
        """Our epoch while we are the controller, else None."""
        return self.controller.epoch if self.is_controller and self.controller else None

    def set_default_unclean(self, enabled: bool) -> None:
        """The broker default of unclean.leader.election.enable changed (a dynamic broker
        config): for the controller running now, and every one this broker runs later."""
        self.config = dataclasses.replace(self.config, default_unclean=enabled)
        if self.controller is not None:
            self.controller.set_default_unclean(enabled)

    def unclean_enabled(self) -> None:
        """A topic's unclean.leader.election.enable was set to true (Kafka's
        enableTopicUncleanLeaderElection): the controller, if this is it, elects its offline
        partitions now."""
        if self.controller is not None:
            self.controller.enqueue(Event.UNCLEAN_ENABLED)

    async def start(self) -> None:
        await ensure_layout(self.zk)
        self.zk.add_state_listener(self._on_state)
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._watch = await self.zk.watch_data(paths.CONTROLLER, self._on_controller_node)
        self._kick()

    async def stop(self) -> None:
        """Stop acting as controller and leave the election; /controller is released if ours."""
        self._stopping = True
        self.zk.remove_state_listener(self._on_state)
        if self._watch is not None:
            self._watch.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._unwatch_controller()
        was_controller = self.controller is not None
        await self._resign("stopping")
        if was_controller:
            with contextlib.suppress(ZkError):
                stat = await self.zk.stat(paths.CONTROLLER)
                if stat is not None and stat.ephemeral_owner == self.zk.session_id:
                    await self.zk.delete(paths.CONTROLLER, stat.version)

    # ----- callbacks (on the loop) ----------------------------------------------------------

    def _kick(self) -> None:
        self._wake.set()

    def _on_state(self, state: ZkState) -> None:
        if state in ("SUSPENDED", "LOST"):
            self._suspended = True
            if self.controller is not None:
                self.controller.active = False  # stop acting now; torn down by _reconcile
            log.warning("broker %d: ZooKeeper session %s", self.broker_id, state)
        else:
            self._suspended = False
        self._kick()

    def _on_controller_node(self, data: bytes | None, _version: int | None) -> None:
        if data is None:
            self.controller_id = None
        else:
            with contextlib.suppress(ValueError):
                self.controller_id = ControllerInfo.decode(data).broker_id
        self._kick()

    def _on_controller_stopped(self) -> None:
        self._kick()  # fenced, or ZooKeeper trouble: _reconcile tears it down and decides again

    # ----- the reconcile task ---------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._reconcile()
            except ZkConnectionLost as exc:
                log.info(
                    "broker %d: election paused, ZooKeeper unavailable: %s", self.broker_id, exc
                )
                await self._resign("connection lost")
            except Exception:
                log.exception("broker %d: controller election step failed", self.broker_id)
                await self._sleep(RETRY_DELAY_S)
                self._kick()

    async def _reconcile(self) -> None:
        if self.controller is not None and not self.controller.active:
            await self._resign("stopped acting")
            if not self._suspended:
                await self._sleep(RETRY_DELAY_S)  # it stopped itself: do not spin
        if self._stopping or self._suspended or not self.zk.connected:
            return
        try:
            data, stat = await self.zk.get_with_stat(paths.CONTROLLER)
        except ZkNoNode:
            await self._try_become()
            return
        with contextlib.suppress(ValueError):
            self.controller_id = ControllerInfo.decode(data).broker_id
        if stat.ephemeral_owner != self.zk.session_id:
            await self._resign("another broker is controller")
            other = self.controller_id is not None and self.controller_id != self.broker_id
            if other and self.config.fast_death_detection and self.controller_id is not None:
                self._watch_controller(self.controller_id, stat.czxid)
        elif self.controller is None:
            epoch, version = await read_controller_epoch(self.zk)
            await self._begin(epoch, version)  # ours still (the session survived a SUSPENDED)

    def _watch_controller(self, controller_id: int, czxid: int) -> None:
        if self._ctrl_watch is not None:
            watched_id, watched_czxid, task = self._ctrl_watch
            if (watched_id, watched_czxid) == (controller_id, czxid) and not task.done():
                return
            task.cancel()
        task = asyncio.get_running_loop().create_task(
            watch_controller(self.zk, controller_id, czxid, sleep=self._sleep)
        )
        self._ctrl_watch = (controller_id, czxid, task)

    async def _unwatch_controller(self) -> None:
        if self._ctrl_watch is not None:
            task = self._ctrl_watch[2]
            self._ctrl_watch = None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _try_become(self) -> None:
        await self._unwatch_controller()  # whoever it watched is gone from /controller
        info = ControllerInfo(self.broker_id, self.clock.time_ms())
        try:
            epoch, version = await bump_controller_epoch(self.zk, create_controller=info.encode())
        except ZkNodeExists:  # (the epoch's own races are retried inside)
            self._kick()  # someone else won: read who
            return
        self.controller_id = self.broker_id
        await self._begin(epoch, version)

    async def _begin(self, epoch: int, epoch_zk_version: int) -> None:
        def on_overflow(broker_id: int) -> None:
            if self.controller is not None:
                self.controller.enqueue(Event.RESYNC, broker_id)

        channel = self.channel_factory(self.broker_id, on_overflow)
        self.controller = Controller(
            self.zk,
            self.broker_id,
            epoch,
            epoch_zk_version,
            channel,
            config=self.config,
            on_stopped=self._on_controller_stopped,
            sleep=self._sleep,
        )
        log.info("broker %d is the controller, epoch %d", self.broker_id, epoch)
        await self.controller.start()

    async def _resign(self, why: str) -> None:
        controller, self.controller = self.controller, None
        if controller is not None:
            log.info("broker %d stops being controller (epoch %d): %s", self.broker_id,
                     controller.epoch, why)  # fmt: skip
            await controller.stop()
