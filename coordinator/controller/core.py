"""The controller's work once elected: one broker's authority over leaders, acting on ZooKeeper
changes. (The election itself is coordinator/controller/elector.py.)

How it works: `Controller.start()` queues a STARTUP event and starts one task that runs events
one at a time from a single bounded queue (events.py, Kafka's ControllerEventManager). ZooKeeper
watches (/brokers/ids, /brokers/topics, /admin/delete_topics, /isr_change_notification children)
only enqueue an event kind; an event kind already queued is not queued twice, and each handler
re-reads ZooKeeper, so nothing is lost by coalescing and the queue stays small. This module holds
the loop, STARTUP, RESYNC and CALL; the other events' handlers are functions of the controller as
event_ops.py `EventOps` describes it: broker_changes.py, topic_changes.py, partition_changes.py,
log_dirs.py, admin.py. ZooKeeper reads are loader.py's, requests to brokers requests.py's.

- STARTUP: load live brokers, topics, assignments (with topic ids: a topic from before KIP-516
  gets one written into its znode, as Kafka's controller backfills them; a topic created without
  one later gets one at TOPIC_CHANGE the same way), configs and partition states; elect leaders
  for new partitions and for partitions whose leader is gone; send every live broker
  LeaderAndIsr for its partitions and the full UpdateMetadata (this also tells them our epoch).
  An existing `__consumer_offsets` is given its enforced configs (coordinator/internal_topics.py).
- BROKER_CHANGE (broker_changes.py): diff the registrations (a changed czxid is a bounce:
  death plus return). Death: each partition it led gets a new leader from ISR ∩ live
  (coordinator/controller/election.py), or goes offline (leader -1, ISR kept); it leaves the
  ISR of the others. Return: offline and new partitions it can lead are elected; it gets
  LeaderAndIsr for all its replicas and the full metadata; the others get the new broker list
  and the changed partitions.
- TOPIC_CHANGE (topic_changes.py, as the next two): new topics get their state znodes
  (leader = first live replica, leader epoch 0) and LeaderAndIsr(is_new) to their replicas,
  UpdateMetadata to everyone.
- PARTITION_MODIFICATIONS: each topic's /brokers/topics/<t> has a data watch (Kafka's
  PartitionModificationsHandler); partitions found there that the context lacks were added
  (CreatePartitions, coordinator/cluster/topics.py) and start as a new topic's do. Other changes of
  the znode are this controller's own reassignment writes, already in the context.
- TOPIC_DELETION: StopReplica(delete_partitions) to live replicas, delete the topic's znodes and
  then the /admin marker, UpdateMetadata(deleted_topics) to everyone.
- ISR_CHANGE (partition_changes.py): leaders wrote ISR changes and announced them under
  /isr_change_notification (coordinator/cluster/isr.py): re-read those partitions,
  UpdateMetadata to everyone, delete the notes.
- LOG_DIR_EVENT: a broker's log directory failed (/log_dir_event_notification children,
  coordinator/controller/log_dirs.py): its replicas go offline as if it had died (new leaders,
  out of the ISRs), though it stays registered; it is never elected until it restarts.
- RESYNC(broker): the channel dropped requests; send that broker its full state again.
- BROKER_PROBED_DEAD(broker): the channel lost its connection to a broker and every port it
  registered refused a new one (coordinator/controller/fast_death.py): that registration (czxid)
  counts as gone, and BROKER_CHANGE runs as if ZooKeeper had dropped it; seconds before the session
  expires. Timeouts and hangs stay with ZooKeeper.
- CALL(id): a request that only the controller answers (controlled shutdown, preferred leader
  election, reassignments: coordinator/controller/admin.py) runs as an event, in order with the
  rest, and its answer goes back through a future (`Controller.call`).
- AUTO_REBALANCE: every `leader_imbalance_check_interval_s` (injected sleep), brokers whose
  leader imbalance is above the threshold get their preferred leaderships back
  (coordinator/controller/preferred.py).

Brokers in a controlled shutdown are never elected leader (`ctx.eligible_ids`). Reassignments
in progress (/admin/reassign_partitions, coordinator/controller/reassignment.py) move on after
STARTUP, BROKER_CHANGE and ISR_CHANGE events.

State znode writes go through coordinator/controller/state_writer.py: batched ZooKeeper
transactions that also check the /controller_epoch version this controller wrote, so a replaced
controller writes
nothing (it stops and calls `on_stopped`), and conditional on each znode's version (a conflict
re-reads and decides again). LeaderAndIsr and UpdateMetadata go out batched: one request per
broker per event, carrying all its partitions. Every request carries our id and epoch.
LeaderAndIsr goes to the partitions' new leaders first and to the other brokers once those
answered (requests.py, channel.py `send_leaders_first`): a follower that asked a leader-to-be
too early would back off for replica_fetch_backoff_ms, which is most of a controlled
failover's pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.isr import ISR_CHANGE_NOTIFICATION
from coordinator.cluster.topics import ensure_layout
from coordinator.cluster.zk import ZkClient, ZkConnectionLost
from coordinator.controller.admin import auto_rebalance, load_reassignments
from coordinator.controller.broker_changes import on_broker_change, on_probed_dead
from coordinator.controller.channel import BrokerChannel, ControllerChannel
from coordinator.controller.context import TopicPartition
from coordinator.controller.events import Event, EventQueue, PendingCalls, Watches
from coordinator.controller.fast_death import DeathProber
from coordinator.controller.loader import ZkLoader
from coordinator.controller.log_dirs import (
    LOG_DIR_EVENT_NOTIFICATION,
    LogDirContext,
    on_log_dir_event,
)
from coordinator.controller.partition_changes import (
    elect_where_needed,
    on_isr_change,
    on_unclean_enabled,
    reconcile,
)
from coordinator.controller.requests import Requests
from coordinator.controller.state_writer import ControllerFenced, StateWriter
from coordinator.controller.topic_changes import (
    on_partition_modifications,
    on_topic_change,
    on_topic_deletion,
)
from coordinator.internal_topics import enforce_offsets_topic_config
from protocol.errors import NotControllerError

__all__ = ["Controller", "ControllerConfig", "Event"]

log = logging.getLogger(__name__)
T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    replicated: bool = False  # issue 4 turns this on: new partitions start with ISR = live replicas
    event_queue_max: int = 1024
    default_unclean: bool = False  # broker default for unclean.leader.election.enable
    auto_leader_rebalance_enable: bool = False  # the daemon turns it on (Kafka's default: on)
    leader_imbalance_check_interval_s: float = 300.0
    leader_imbalance_per_broker_percentage: int = 10
    max_pending_calls: int = 64  # admin requests waiting for the controller at once
    # act on refused connections (coordinator/controller/fast_death.py); the daemon turns it on,
    # tests whose registrations name ports nobody listens on leave it off
    fast_death_detection: bool = False


class Controller:
    def __init__(
        self,
        zk: ZkClient,
        broker_id: int,
        epoch: int,
        epoch_zk_version: int,
        channel: ControllerChannel,
        *,
        config: ControllerConfig | None = None,
        on_stopped: Callable[[], None] | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.channel = channel
        self.config = config or ControllerConfig()
        self.ctx = LogDirContext(epoch, epoch_zk_version)
        self.writer = StateWriter(zk, self.ctx)
        self._on_stopped = on_stopped
        self._queue = EventQueue(self.config.event_queue_max)
        self._calls = PendingCalls()
        self.watches = Watches(zk, self.enqueue)
        self.loader = ZkLoader(
            zk, self.ctx, self.writer, self.watches, default_unclean=self.config.default_unclean
        )
        self.requests = Requests(self.ctx, channel, broker_id)
        self._task: asyncio.Task[None] | None = None
        self.active = False
        self.events_processed = 0
        self._sleep = sleep
        self._rebalance_task: asyncio.Task[None] | None = None
        self._proofs: dict[int, int] = {}  # proven dead by a probe, not yet acted on
        self.prober = DeathProber(self.ctx.live.get, self._on_proven_dead)
        if self.config.fast_death_detection and isinstance(channel, BrokerChannel):
            channel.on_unreachable = self.prober.suspect

    @property
    def epoch(self) -> int:
        return self.ctx.epoch

    # ----- lifecycle and events -------------------------------------------------------------

    async def start(self) -> None:
        self.active = True
        self.enqueue(Event.STARTUP)
        self._task = asyncio.get_running_loop().create_task(self._run())
        if self.config.auto_leader_rebalance_enable:
            self._rebalance_task = asyncio.get_running_loop().create_task(self._rebalance_timer())

    async def stop(self) -> None:
        """Stop acting: no more events, no more requests. Idempotent."""
        self.active = False
        self.watches.cancel_all()
        for task in (self._task, self._rebalance_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self._rebalance_task = None
        self._calls.fail_all()
        await self.prober.close()
        await self.channel.close()

    async def call(self, fn: Callable[[], Awaitable[T]], timeout_s: float) -> T:
        """Run `fn` as a controller event (in order with ZooKeeper's events) and return its
        result. NotControllerError if this controller stops or is too busy; TimeoutError."""
        if not self.active or len(self._calls) >= self.config.max_pending_calls:
            raise NotControllerError("the controller is stopping or busy")
        call_id, future = self._calls.add(fn)
        self.enqueue(Event.CALL, call_id)
        if (Event.CALL, call_id) not in self._queue:
            self._calls.discard(call_id)
            raise NotControllerError("the controller's event queue is full")
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(future)
        except TimeoutError:
            future.cancel()  # not run any more if it has not started
            raise

    async def _rebalance_timer(self) -> None:
        while self.active:
            await self._sleep(self.config.leader_imbalance_check_interval_s)
            self.enqueue(Event.AUTO_REBALANCE)

    def enqueue(self, event: Event, arg: int | None = None) -> None:
        if self.active:
            self._queue.put((event, arg))

    def enqueue_log_dir_event(self) -> None:
        self.enqueue(Event.LOG_DIR_EVENT)

    def set_default_unclean(self, enabled: bool) -> None:
        """The broker default of unclean.leader.election.enable changed (dynamic broker config):
        read at the next election, and turned on, offline partitions are elected now."""
        self.loader.default_unclean = enabled
        if enabled:
            self.enqueue(Event.UNCLEAN_ENABLED)

    def _on_proven_dead(self, broker_id: int, czxid: int) -> None:
        self._proofs[broker_id] = czxid
        self.enqueue(Event.BROKER_PROBED_DEAD, broker_id)

    async def wait_idle(self, timeout_s: float) -> None:
        """Wait until the queue is empty and no event runs (tests and orderly shutdown)."""
        await self._queue.wait_idle(timeout_s)

    async def _run(self) -> None:
        handlers: dict[Event, Callable[[], Awaitable[None]]] = {
            Event.STARTUP: self._on_startup,
            Event.BROKER_CHANGE: partial(on_broker_change, self),
            Event.TOPIC_CHANGE: partial(on_topic_change, self),
            Event.TOPIC_DELETION: partial(on_topic_deletion, self),
            Event.PARTITION_MODIFICATIONS: partial(on_partition_modifications, self),
            Event.ISR_CHANGE: partial(on_isr_change, self),
            Event.LOG_DIR_EVENT: partial(on_log_dir_event, self),
            Event.AUTO_REBALANCE: partial(auto_rebalance, self),
            Event.UNCLEAN_ENABLED: partial(on_unclean_enabled, self),
        }
        while self.active:
            event, arg = await self._queue.get()
            try:
                if event is Event.RESYNC:
                    if arg in self.ctx.live:
                        self.requests.send_full_state([arg])
                elif event is Event.CALL:
                    await self._calls.run(arg)
                elif event is Event.BROKER_PROBED_DEAD:
                    await on_probed_dead(self, arg, self._proofs.pop(arg or 0, None))
                else:
                    await handlers[event]()
            except ControllerFenced:
                log.warning("controller %d fenced at epoch %d", self.broker_id, self.epoch)
                self._stop_acting()
                return
            except ZkConnectionLost as exc:
                # What was written and what was sent may now differ: start again from ZooKeeper.
                log.warning("controller event %s: ZooKeeper unavailable (%s)", event.value, exc)
                self._stop_acting()
                return
            except Exception:
                log.exception("controller event %s failed", event.value)
                if event is Event.STARTUP:  # no state, no watches: this controller is useless
                    self._stop_acting()
                    return
            self.events_processed += 1
        self._queue.set_idle()

    def _stop_acting(self) -> None:
        """Stop on our own (fenced, ZooKeeper lost, failed start); the elector decides what next."""
        self.active = False
        self._queue.set_idle()
        self._calls.fail_all()
        if self._on_stopped is not None:
            self._on_stopped()

    # ----- STARTUP --------------------------------------------------------------------------

    async def _on_startup(self) -> None:
        await ensure_layout(self.zk)
        live = await self.loader.read_live_brokers()
        for b in live.values():
            self.ctx.live[b.broker_id] = b
            self.channel.add_broker(b.broker_id, b.registration.host, b.registration.port)
        for topic in await self.zk.get_children(paths.BROKER_TOPICS):
            await self.loader.load_topic(topic)
        await enforce_offsets_topic_config(self.zk)  # a cluster made before it was compacted
        await elect_where_needed(self, self.ctx.partitions(), decide=reconcile)
        self.requests.send_full_state(sorted(self.ctx.live))
        await load_reassignments(self)
        await self.zk.ensure_path(ISR_CHANGE_NOTIFICATION)
        await self.zk.ensure_path(LOG_DIR_EVENT_NOTIFICATION)
        for path, event in (
            (paths.BROKER_IDS, Event.BROKER_CHANGE),
            (paths.BROKER_TOPICS, Event.TOPIC_CHANGE),
            (paths.ADMIN_DELETE_TOPICS, Event.TOPIC_DELETION),
            (ISR_CHANGE_NOTIFICATION, Event.ISR_CHANGE),
            (LOG_DIR_EVENT_NOTIFICATION, Event.LOG_DIR_EVENT),
        ):
            await self.watches.watch_children(path, event)
        log.info(
            "controller %d started at epoch %d: %d brokers, %d topics",
            self.broker_id, self.epoch, len(self.ctx.live), len(self.ctx.assignments),
        )  # fmt: skip

    # ----- for admin.py, log_dirs.py and the event handlers (event_ops.py) -----------------

    async def refresh_unclean(self, topics: set[str]) -> None:
        await self.loader.refresh_unclean(topics)

    def send_leader_and_isr(
        self,
        changed: list[TopicPartition],
        *,
        full_for: Sequence[int] = (),
        is_new: bool = False,
    ) -> None:
        self.requests.send_leader_and_isr(changed, full_for=full_for, is_new=is_new)

    def send_update_metadata(
        self, brokers: list[int], tps: list[TopicPartition], deleted_topics: list[str] | None = None
    ) -> None:
        self.requests.send_update_metadata(brokers, tps, deleted_topics)
