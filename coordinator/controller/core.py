"""The controller's work once elected: one broker's authority over leaders, acting on ZooKeeper
changes. (The election itself is coordinator/controller/elector.py.)

How it works: `Controller.start()` queues a STARTUP event and starts one task that runs events
one at a time from a single bounded queue (events.py, Kafka's ControllerEventManager). Watches
(/brokers/ids, /brokers/topics, /admin/delete_topics, /isr_change_notification children) only
enqueue an event kind; an event kind already queued is not queued twice, and each handler
re-reads ZooKeeper, so nothing is lost by coalescing and the queue stays small.

- STARTUP: load live brokers, topics, assignments (with topic ids: a topic from before KIP-516
  gets one written into its znode, as Kafka's controller backfills them; a topic created without
  one later gets one at TOPIC_CHANGE the same way), configs and partition states; elect leaders
  for new partitions and for partitions whose leader is gone; send every live broker
  LeaderAndIsr for its partitions and the full UpdateMetadata (this also tells them our epoch).
  An existing `__consumer_offsets` is given its enforced configs (coordinator/internal_topics.py).
- BROKER_CHANGE: diff the registrations (a changed czxid is a bounce: death plus return).
  Death: each partition it led gets a new leader from ISR ∩ live
  (coordinator/controller/election.py), or
  goes offline (leader -1, ISR kept); it leaves the ISR of the others. Return: offline and new
  partitions it can lead are elected; it gets LeaderAndIsr for all its replicas and the full
  metadata; the others get the new broker list and the changed partitions.
- TOPIC_CHANGE: new topics get their state znodes (leader = first live replica, leader epoch 0)
  and LeaderAndIsr(is_new) to their replicas, UpdateMetadata to everyone.
- PARTITION_MODIFICATIONS: each topic's /brokers/topics/<t> has a data watch (Kafka's
  PartitionModificationsHandler); partitions found there that the context lacks were added
  (CreatePartitions, coordinator/cluster/topics.py) and start as a new topic's do. Other changes of
  the znode are this controller's own reassignment writes, already in the context.
- TOPIC_DELETION: StopReplica(delete_partitions) to live replicas, delete the topic's znodes and
  then the /admin marker, UpdateMetadata(deleted_topics) to everyone.
- ISR_CHANGE: leaders wrote ISR changes and announced them under /isr_change_notification
  (coordinator/cluster/isr.py): re-read those partitions, UpdateMetadata to everyone, delete the
  notes.
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
answered (requests.py): a follower that asked a leader-to-be too early would
back off for replica_fetch_backoff_ms, which is most of a controlled failover's pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.isr import ISR_CHANGE_NOTIFICATION, decode_isr_change
from coordinator.cluster.topics import ensure_layout
from coordinator.cluster.zk import (
    OpSet,
    ZkBadVersion,
    ZkClient,
    ZkConnectionLost,
    ZkNoNode,
)
from coordinator.cluster.zk_paths import BrokerRegistration, LeaderIsrState, ZkDataError
from coordinator.controller.admin import (
    advance_reassignments,
    auto_rebalance,
    load_reassignments,
)
from coordinator.controller.channel import BrokerChannel, ControllerChannel
from coordinator.controller.context import LiveBroker, TopicPartition, diff_brokers
from coordinator.controller.election import (
    after_brokers_died,
    initial_isr,
    reconcile_at_failover,
    reelect_if_leaderless,
)
from coordinator.controller.events import Event, EventQueue, PendingCalls, Watches
from coordinator.controller.fast_death import DeathProber, without_probed_dead
from coordinator.controller.log_dirs import (
    LOG_DIR_EVENT_NOTIFICATION,
    LogDirContext,
    on_log_dir_event,
)
from coordinator.controller.requests import Requests, stated
from coordinator.controller.state_writer import ControllerFenced, Decide, StateWriter
from coordinator.controller.states import PartitionState, ReplicaState
from coordinator.internal_topics import enforce_offsets_topic_config
from protocol.api.controller import (
    StopReplicaRequest,
    TopicPartitionRef,
)
from protocol.errors import NotControllerError
from protocol.topic_ids import encode_topic_id, new_topic_id

log = logging.getLogger(__name__)
T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

UNCLEAN_CONFIG = "unclean.leader.election.enable"
BACKFILL_ATTEMPTS = 5  # version conflicts while giving an old topic its id, before giving up
SPLIT_SHRINKS_ABOVE = 200  # ISR shrinks at a death: more are written after the new leaders


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
        self.requests = Requests(self.ctx, channel, broker_id)
        self._task: asyncio.Task[None] | None = None
        self.active = False
        self.events_processed = 0
        self._sleep = sleep
        self._rebalance_task: asyncio.Task[None] | None = None
        self.probed_dead: dict[int, int] = {}  # broker -> registration czxid proven dead
        self._proofs: dict[int, int] = {}  # proven by a probe, not yet acted on
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

    async def wait_idle(self, timeout_s: float) -> None:
        """Wait until the queue is empty and no event runs (tests and orderly shutdown)."""
        await self._queue.wait_idle(timeout_s)

    async def _run(self) -> None:
        handlers: dict[Event, Callable[[], Awaitable[None]]] = {
            Event.STARTUP: self._on_startup,
            Event.BROKER_CHANGE: self._on_broker_change,
            Event.TOPIC_CHANGE: self._on_topic_change,
            Event.TOPIC_DELETION: self._on_topic_deletion,
            Event.PARTITION_MODIFICATIONS: self._on_partition_modifications,
            Event.ISR_CHANGE: self._on_isr_change,
            Event.LOG_DIR_EVENT: partial(on_log_dir_event, self),
            Event.AUTO_REBALANCE: partial(auto_rebalance, self),
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
                    await self._on_probed_dead(arg)
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
        live = await self._read_live_brokers()
        for b in live.values():
            self.ctx.live[b.broker_id] = b
            self.channel.add_broker(b.broker_id, b.registration.host, b.registration.port)
        for topic in await self.zk.get_children(paths.BROKER_TOPICS):
            await self._load_topic(topic)
        await enforce_offsets_topic_config(self.zk)  # a cluster made before it was compacted
        await self._elect_where_needed(self.ctx.partitions(), decide=_reconcile)
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

    def enqueue_log_dir_event(self) -> None:
        self.enqueue(Event.LOG_DIR_EVENT)

    async def _read_live_brokers(self) -> dict[int, LiveBroker]:
        out: dict[int, LiveBroker] = {}
        for child in await self.zk.get_children(paths.BROKER_IDS):
            try:
                data, stat = await self.zk.get_with_stat(paths.broker_path(int(child)))
                reg = BrokerRegistration.decode(data)
            except (ZkNoNode, ValueError) as exc:
                log.warning("skipping broker registration %s: %s", child, exc)
                continue
            out[int(child)] = LiveBroker(int(child), reg, stat.czxid)
        live, self.probed_dead = without_probed_dead(out, self.probed_dead)
        return live

    async def _load_topic(self, topic: str) -> None:
        try:
            data, _ = await self.zk.get(paths.topic_path(topic))
        except ZkNoNode:
            return
        decoded = paths.TopicAssignment.decode(data)
        assignment = decoded.partitions
        topic_id = decoded.topic_id or await self._backfill_topic_id(topic)
        self.ctx.add_topic(topic, assignment, await self._read_unclean(topic), topic_id)
        if await self.zk.exists(paths.partitions_path(topic)) is not None:
            states = await asyncio.gather(*(self._read_state(topic, p) for p in assignment))
            for p, state in zip(assignment, states, strict=True):
                if state is not None:  # else it stays NewPartition: elected later
                    self.ctx.set_leadership((topic, p), *state)
        self._replicas_online([(topic, p) for p in assignment])
        await self.watches.watch_topic(topic)

    async def _backfill_topic_id(
        self, topic: str, known: uuid.UUID | None = None
    ) -> uuid.UUID | None:
        """A topic from before ids (KIP-516) gets one, as Kafka's controller gives it: written
        into its assignment znode (fenced, conditional on the version read; a concurrent
        change re-reads). `known`: the id the topic had, put back into a znode that lost it
        (rewritten by a tool that does not know ids). None if the topic vanished meanwhile."""
        for _ in range(BACKFILL_ATTEMPTS):
            try:
                data, version = await self.zk.get(paths.topic_path(topic))
            except ZkNoNode:
                return None
            decoded = paths.TopicAssignment.decode(data)
            if decoded.topic_id is not None:
                return decoded.topic_id
            topic_id = known or new_topic_id()
            written = paths.TopicAssignment(decoded.partitions, topic_id).encode()
            try:
                await self.writer.fenced([OpSet(paths.topic_path(topic), written, version)])
            except (ZkBadVersion, ZkNoNode):
                continue
            what = "restored" if known else "assigned"
            log.info("topic %s had no topic id: %s %s", topic, what, encode_topic_id(topic_id))
            return topic_id
        log.warning("topic %s: no topic id written, its znode kept changing", topic)
        return None

    def _replicas_online(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            for r in self.ctx.replicas(tp):
                target = ReplicaState.ONLINE if r in self.ctx.live else ReplicaState.OFFLINE
                self.ctx.move_replica(tp, r, target)

    async def _read_state(self, topic: str, p: int) -> tuple[LeaderIsrState, int] | None:
        try:
            raw, version = await self.zk.get(paths.partition_state_path(topic, p))
        except ZkNoNode:
            return None
        return LeaderIsrState.decode(raw), version

    async def _read_unclean(self, topic: str) -> bool:
        try:
            data, _ = await self.zk.get(paths.topic_config_path(topic))
            config = paths.TopicConfig.decode(data).config
        except (ZkNoNode, ValueError):
            config = {}
        default = "true" if self.config.default_unclean else "false"
        return config.get(UNCLEAN_CONFIG, default).lower() == "true"

    # ----- elections and writes -------------------------------------------------------------

    async def _elect_where_needed(
        self, tps: list[TopicPartition], decide: Callable[..., Any] | None = None
    ) -> list[TopicPartition]:
        """New partitions get their first state; partitions without a live leader are elected
        again (`decide` replaces that rule, e.g. at failover). Returns those whose state znode
        changed."""
        live = self.ctx.eligible_ids
        fresh: dict[TopicPartition, LeaderIsrState] = {}
        decisions: dict[TopicPartition, Decide] = {}
        for tp in tps:
            if tp[0] in self.ctx.deleting:
                continue
            replicas = self.ctx.replicas(tp)
            if tp in self.ctx.leadership:
                decisions[tp] = partial(
                    decide or _reelect, replicas=replicas, live=live,
                    unclean=self.ctx.unclean[tp[0]],
                )  # fmt: skip
                continue
            leader = next((r for r in replicas if r in live), None)
            if leader is None:
                log.warning("%s-%d: no live replica among %s; stays new", *tp, replicas)
                continue
            isr = initial_isr(replicas, live, leader, self.config.replicated)
            fresh[tp] = LeaderIsrState(leader, 0, self.epoch, isr)
        await self.writer.create_states(fresh)
        return [*fresh, *await self.writer.update_states(decisions)]

    # ----- BROKER_CHANGE --------------------------------------------------------------------

    async def _on_broker_change(self) -> None:
        current = await self._read_live_brokers()
        dead, new = diff_brokers(
            {b: x.czxid for b, x in self.ctx.live.items()}, {b: x.czxid for b, x in current.items()}
        )
        if not dead and not new:
            return
        log.info("brokers: dead %s, new %s", dead, new)
        changed: list[TopicPartition] = []
        for b in dead:
            del self.ctx.live[b]
            self.ctx.shutting_down.discard(b)
            self.ctx.offline_log_dirs.discard(b)  # a restart recovers the log directory
            self.channel.remove_broker(b)
        if dead:
            changed += await self._on_brokers_dead(dead)
        for b in new:
            self.ctx.live[b] = current[b]
            reg = current[b].registration
            self.channel.add_broker(b, reg.host, reg.port)
        if new:
            changed += await self._on_brokers_back(new)
        changed = list(dict.fromkeys(changed))
        self.send_leader_and_isr(changed, full_for=new)
        self.send_update_metadata([b for b in sorted(self.ctx.live) if b not in new], changed)
        self.send_update_metadata(new, stated(self.ctx))
        await advance_reassignments(self)

    def _on_proven_dead(self, broker_id: int, czxid: int) -> None:
        self._proofs[broker_id] = czxid
        self.enqueue(Event.BROKER_PROBED_DEAD, broker_id)

    async def _on_probed_dead(self, broker_id: int | None) -> None:
        czxid = self._proofs.pop(broker_id or 0, None)
        known = self.ctx.live.get(broker_id or 0)
        if broker_id is None or known is None or known.czxid != czxid:
            return  # gone already, or registered again since the probe: nothing proven
        log.warning("broker %d refuses connections on every port: dead", broker_id)
        self.probed_dead[broker_id] = known.czxid
        await self._on_broker_change()

    async def _on_brokers_dead(self, dead: list[int]) -> list[TopicPartition]:
        """New leaders for the partitions the dead led; with many other partitions to shrink
        (over SPLIT_SHRINKS_ABOVE), those elections are written and sent first (LeaderAndIsr
        and UpdateMetadata), then the ISR shrinks, returned for the caller to send (Kafka's
        onBrokerFailure: OnlinePartition elections before OfflineReplica). With few, one
        round of writes and one request per broker is as fast."""
        await self.refresh_unclean({t for b in dead for t, _ in self.ctx.partitions_on(b)})
        live = self.ctx.eligible_ids
        leaderless: dict[TopicPartition, Decide] = {}
        shrinks: dict[TopicPartition, Decide] = {}
        for tp in self.ctx.partitions():
            replicas = self.ctx.replicas(tp)
            for b in dead:
                if b in replicas:
                    self.ctx.move_replica(tp, b, ReplicaState.OFFLINE)
            if tp in self.ctx.leadership and tp[0] not in self.ctx.deleting:
                decide = partial(
                    _after_death, replicas=replicas, dead=dead, live=live,
                    unclean=self.ctx.unclean[tp[0]],
                )  # fmt: skip
                (leaderless if self.ctx.leader_of(tp) in dead else shrinks)[tp] = decide
        if not leaderless or len(shrinks) <= SPLIT_SHRINKS_ABOVE:
            return await self.writer.update_states({**leaderless, **shrinks})
        elected = await self.writer.update_states(leaderless)
        self.send_leader_and_isr(elected)
        self.send_update_metadata(sorted(self.ctx.live), elected)
        log.info("brokers %s dead: %d partitions have new leaders (sent)", dead, len(elected))
        return await self.writer.update_states(shrinks)

    async def _on_brokers_back(self, new: list[int]) -> list[TopicPartition]:
        for b in new:
            for tp in self.ctx.partitions_on(b):
                if tp[0] not in self.ctx.deleting:
                    self.ctx.move_replica(tp, b, ReplicaState.ONLINE)
        offline = {tp[0] for tp in self.ctx.partitions() if self.ctx.leader_of(tp) == -1}
        await self.refresh_unclean(offline)
        return await self._elect_where_needed(self.ctx.partitions())

    async def refresh_unclean(self, topics: set[str]) -> None:
        """Read unclean.leader.election.enable again where an election may need it, so a
        change of /config/topics/<t> counts without a controller restart (Kafka reads it when
        it elects)."""
        for topic in sorted(topics):
            if topic in self.ctx.assignments:
                self.ctx.unclean[topic] = await self._read_unclean(topic)

    # ----- TOPIC_CHANGE and TOPIC_DELETION --------------------------------------------------

    async def _on_topic_change(self) -> None:
        names = set(await self.zk.get_children(paths.BROKER_TOPICS))
        for gone in [t for t in self.ctx.assignments if t not in names]:
            self.ctx.remove_topic(gone)
            self.watches.unwatch_topic(gone)
        added = sorted(t for t in names if t not in self.ctx.assignments)
        for topic in added:
            await self._load_topic(topic)
        await self._start_new_partitions([tp for tp in self.ctx.partitions() if tp[0] in added])

    async def _start_new_partitions(self, tps: list[TopicPartition]) -> None:
        """New partitions (a new topic's, or added to one): their first state znodes,
        LeaderAndIsr(is_new) to their replicas, UpdateMetadata to every live broker."""
        changed = await self._elect_where_needed(tps)
        if changed:
            self.send_leader_and_isr(changed, is_new=True)
            self.send_update_metadata(sorted(self.ctx.live), changed)

    async def _on_topic_deletion(self) -> None:
        marked = await self.zk.get_children(paths.ADMIN_DELETE_TOPICS)
        deleted: list[str] = []
        for topic in marked:
            if topic in self.ctx.assignments:
                self.ctx.deleting.add(topic)
                self._stop_replicas(topic)
                deleted.append(topic)
            await self._delete_topic_znodes(topic)
            self.ctx.remove_topic(topic)
            self.watches.unwatch_topic(topic)
        if deleted:
            self.send_update_metadata(sorted(self.ctx.live), [], deleted_topics=deleted)

    def _stop_replicas(self, topic: str) -> None:
        per_broker: dict[int, list[TopicPartitionRef]] = {}
        for p in sorted(self.ctx.assignments[topic]):
            tp = (topic, p)
            if self.ctx.partition_state(tp) is not PartitionState.NON_EXISTENT:
                if self.ctx.partition_state(tp) is not PartitionState.OFFLINE:
                    self.ctx.move_partition(tp, PartitionState.OFFLINE)
                self.ctx.move_partition(tp, PartitionState.NON_EXISTENT)
            for r in self.ctx.replicas(tp):
                self.ctx.move_replica(tp, r, ReplicaState.OFFLINE)
                self.ctx.move_replica(tp, r, ReplicaState.DELETION_STARTED)
                if r in self.ctx.live:
                    per_broker.setdefault(r, []).append(TopicPartitionRef(topic, p))
        for b, refs in sorted(per_broker.items()):
            self.channel.send(b, StopReplicaRequest(self.broker_id, self.epoch, True, refs))

    async def _delete_topic_znodes(self, topic: str) -> None:
        for path, recursive in (
            (paths.topic_path(topic), True),
            (paths.topic_config_path(topic), False),
            (paths.delete_topic_path(topic), False),
        ):
            with contextlib.suppress(ZkNoNode):
                await self.zk.delete(path, recursive=recursive)

    # ----- PARTITION_MODIFICATIONS -----------------------------------------------------------

    async def _on_partition_modifications(self) -> None:
        topics = self.watches.take_modified()
        added: list[TopicPartition] = []
        for topic in sorted(topics):
            known = self.ctx.assignments.get(topic)
            if known is None or topic in self.ctx.deleting:
                continue
            try:
                data, _ = await self.zk.get(paths.topic_path(topic))
            except ZkNoNode:
                continue  # deleted: TOPIC_CHANGE / TOPIC_DELETION handle it
            decoded = paths.TopicAssignment.decode(data)
            assignment = decoded.partitions
            if decoded.topic_id is None and topic in self.ctx.topic_ids:
                await self._backfill_topic_id(topic, self.ctx.topic_ids[topic])
            new = {p: r for p, r in assignment.items() if p not in known}
            if not new:
                continue
            self.ctx.add_topic(topic, {**known, **new}, self.ctx.unclean[topic])
            tps = [(topic, p) for p in sorted(new)]
            self._replicas_online(tps)
            added += tps
            log.info("topic %s: partitions %s added", topic, sorted(new))
        await self._start_new_partitions(added)

    # ----- ISR_CHANGE ----------------------------------------------------------------------

    async def _on_isr_change(self) -> None:
        """Leaders changed ISRs (coordinator/cluster/isr.py): re-read those state znodes, tell every
        broker with UpdateMetadata, then delete the notifications."""
        children = await self.zk.get_children(ISR_CHANGE_NOTIFICATION)
        named: set[TopicPartition] = set()
        for child in children:
            try:
                data, _ = await self.zk.get(f"{ISR_CHANGE_NOTIFICATION}/{child}")
                named.update(decode_isr_change(data))
            except (ZkNoNode, ZkDataError) as exc:
                log.warning("skipping ISR change notification %s: %s", child, exc)
        fresh: list[TopicPartition] = []
        for tp in sorted(named):
            if tp[1] not in self.ctx.assignments.get(tp[0], {}) or tp[0] in self.ctx.deleting:
                continue
            state = await self._read_state(*tp)
            if state is not None:
                self.ctx.set_leadership(tp, *state)
                fresh.append(tp)
        if fresh:
            self.send_update_metadata(sorted(self.ctx.live), fresh)
        for child in children:
            with contextlib.suppress(ZkNoNode):
                await self.zk.delete(f"{ISR_CHANGE_NOTIFICATION}/{child}")
        moving = [tp for tp in fresh if tp in self.ctx.reassignments]
        if moving:
            await advance_reassignments(self, moving)

    # ----- requests -------------------------------------------------------------------------

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


def _reelect(
    s: LeaderIsrState, *, replicas: list[int], live: set[int], unclean: bool
) -> tuple[int, list[int]] | None:
    return reelect_if_leaderless(s.leader, s.isr, replicas, live, unclean)


def _reconcile(
    s: LeaderIsrState, *, replicas: list[int], live: set[int], unclean: bool
) -> tuple[int, list[int]] | None:
    return reconcile_at_failover(s.leader, s.isr, replicas, live, unclean)


def _after_death(
    s: LeaderIsrState, *, replicas: list[int], dead: list[int], live: set[int], unclean: bool
) -> tuple[int, list[int]] | None:
    return after_brokers_died(s.leader, s.isr, replicas, dead, live, unclean)
