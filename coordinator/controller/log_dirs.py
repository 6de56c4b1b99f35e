"""A broker's failed log directory, as the controller learns of it (Kafka's KIP-112, ZooKeeper).

The broker side (broker/storage_failures.py, through `ZkLogDirNotifier`): when its log directory
goes offline (broker/log/dir_failure.py) the broker creates a persistent sequential znode

    /log_dir_event_notification/log_dir_event_<seq>
        {"version":1,"broker":<id>,"event":1,"registration_czxid":<czxid>}

(Kafka's layout; event 1 is LogDirFailure; `registration_czxid` is ours: the czxid of the
broker's /brokers/ids/<id> when it wrote the note, so a note older than the broker's current
registration, left by an incarnation that has since restarted, is ignored).

The controller side (`on_log_dir_event`, a controller event like coordinator/controller/admin.py's
functions): it watches the children, reads every note, and for each live broker named treats all
of that broker's replicas as offline, as Kafka's onReplicasBecomeOffline does: the broker joins
`LogDirContext.offline_log_dirs` (never elected leader: `eligible_ids`; listed in every
partition's offline_replicas), each partition it led gets a new leader from the rest of its ISR
(or goes offline, leader -1, when there is none), and it leaves every ISR (never emptying one:
coordinator/controller/election.py). LeaderAndIsr goes to the replicas of the changed partitions and
UpdateMetadata to every live broker; then the notes are deleted. The mark is dropped when the
broker's registration goes away (a restart: its recovery brings the directory back and it
returns as a follower that truncates, catches up and rejoins the ISR).

A new controller does not know the mark: it learns it again when the broker, told by a
LeaderAndIsr that it leads or is in an ISR, refuses with KAFKA_STORAGE_ERROR and writes a note.

`offline_log_dirs` belongs in coordinator/controller/context.py's ControllerContext; it lives in a
subclass here only because this change does not own that module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import ZkClient, ZkNoNode
from coordinator.cluster.zk_paths import LeaderIsrState, ZkDataError
from coordinator.controller.context import ControllerContext, ControllerOps, Decide, TopicPartition
from coordinator.controller.election import after_brokers_died
from coordinator.controller.states import ReplicaState
from protocol.api.controller import PartitionState as PartitionStateMsg

log = logging.getLogger(__name__)

LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE = 1  # Kafka's LogDirEventNotificationHandler.LogDirFailureEvent
MAX_NOTES_PER_EVENT = 1000  # notes read per controller event; the rest wait for the next


@dataclass(frozen=True, slots=True)
class LogDirEvent:
    broker_id: int
    registration_czxid: int | None  # None: written without it (a Kafka-style note)


def encode_log_dir_event(broker_id: int, registration_czxid: int | None) -> bytes:
    body: dict[str, int] = {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE}
    if registration_czxid is not None:
        body["registration_czxid"] = registration_czxid
    return json.dumps(body, separators=(",", ":")).encode()


def decode_log_dir_event(data: bytes) -> LogDirEvent:
    """The note's broker; ZkDataError if malformed or not a LogDirFailure event."""
    try:
        obj = json.loads(data)
        broker, event = int(obj["broker"]), int(obj["event"])
        czxid = obj.get("registration_czxid")
        czxid = None if czxid is None else int(czxid)
    except (ValueError, KeyError, TypeError) as exc:
        raise ZkDataError(f"bad log dir event notification: {exc}") from None
    if event != LOG_DIR_FAILURE:
        raise ZkDataError(f"unknown log dir event {event}")
    return LogDirEvent(broker, czxid)


def brokers_with_failed_dirs(events: list[LogDirEvent], live_czxids: dict[int, int]) -> list[int]:
    """The live brokers whose current incarnation reported a failed log directory: a note
    whose registration czxid is not the broker's current one came before a restart."""
    failed = {
        e.broker_id
        for e in events
        if e.broker_id in live_czxids
        and (e.registration_czxid is None or e.registration_czxid == live_czxids[e.broker_id])
    }
    return sorted(failed)


def after_log_dir_failure(
    s: LeaderIsrState,
    *,
    replicas: list[int],
    failed: list[int],
    eligible: set[int],
    unclean: bool,
) -> tuple[int, list[int]] | None:
    """(leader, isr) to write when `failed` brokers' replicas went offline: as if they had
    died (election.after_brokers_died), though they are still registered."""
    return after_brokers_died(s.leader, s.isr, replicas, failed, eligible - set(failed), unclean)


@dataclass
class LogDirContext(ControllerContext):
    """ControllerContext plus the live brokers whose log directory is offline."""

    offline_log_dirs: set[int] = field(default_factory=set)

    @property
    def eligible_ids(self) -> set[int]:
        """Brokers that may be elected leader: live, not shutting down, log directory online."""
        return set(self.live) - self.shutting_down - self.offline_log_dirs

    def partition_state_msg(self, tp: TopicPartition, is_new: bool = False) -> PartitionStateMsg:
        msg = super().partition_state_msg(tp, is_new)
        extra = [r for r in msg.replicas if r in self.offline_log_dirs]
        if not extra:
            return msg
        offline = sorted({*msg.offline_replicas, *extra})
        return dataclasses.replace(msg, offline_replicas=offline)


class LogDirControllerOps(ControllerOps, Protocol):
    """The Controller (coordinator/controller/core.py) as the controller side below uses it."""

    @property
    def ctx(self) -> LogDirContext: ...

    async def refresh_unclean(self, topics: set[str]) -> None: ...

    def enqueue_log_dir_event(self) -> None: ...


# ----- the broker side ------------------------------------------------------------------------


class ZkLogDirNotifier:
    """The broker's LogDirNotifier (broker/storage_failures.py)."""

    def __init__(self, zk: ZkClient, broker_id: int) -> None:
        self.zk = zk
        self.broker_id = broker_id

    async def notify_log_dir_failure(self) -> None:
        stat = await self.zk.stat(paths.broker_path(self.broker_id))
        data = encode_log_dir_event(self.broker_id, None if stat is None else stat.czxid)
        await self.zk.ensure_path(LOG_DIR_EVENT_NOTIFICATION)
        path = f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}"
        await self.zk.create(path, data, sequence=True)


# ----- the controller side --------------------------------------------------------------------


async def on_log_dir_event(controller: LogDirControllerOps) -> None:
    """Read the notes, take the named brokers' replicas offline, delete the notes."""
    zk, ctx = controller.zk, controller.ctx
    children = sorted(await zk.get_children(LOG_DIR_EVENT_NOTIFICATION))[:MAX_NOTES_PER_EVENT]
    events: list[LogDirEvent] = []
    for child in children:
        try:
            data, _ = await zk.get(f"{LOG_DIR_EVENT_NOTIFICATION}/{child}")
            events.append(decode_log_dir_event(data))
        except (ZkNoNode, ZkDataError) as exc:
            log.warning("skipping log dir event notification %s: %s", child, exc)
    live_czxids = {b: x.czxid for b, x in ctx.live.items()}
    failed = [b for b in brokers_with_failed_dirs(events, live_czxids)
              if b not in ctx.offline_log_dirs]  # fmt: skip
    if failed:
        await _replicas_offline(controller, failed)
    for child in children:
        with contextlib.suppress(ZkNoNode):
            await zk.delete(f"{LOG_DIR_EVENT_NOTIFICATION}/{child}")
    if len(children) == MAX_NOTES_PER_EVENT:
        controller.enqueue_log_dir_event()  # more notes wait


async def _replicas_offline(controller: LogDirControllerOps, failed: list[int]) -> None:
    ctx = controller.ctx
    ctx.offline_log_dirs.update(failed)
    log.warning("log directory offline on broker(s) %s: their replicas are offline", failed)
    tps = sorted({tp for b in failed for tp in ctx.partitions_on(b) if tp[0] not in ctx.deleting})
    await controller.refresh_unclean({tp[0] for tp in tps})
    eligible = ctx.eligible_ids
    decisions: dict[TopicPartition, Decide] = {}
    for tp in tps:
        replicas = ctx.replicas(tp)
        for b in failed:
            if b in replicas:
                ctx.move_replica(tp, b, ReplicaState.OFFLINE)
        if tp in ctx.leadership:
            decisions[tp] = partial(
                after_log_dir_failure, replicas=replicas, failed=failed, eligible=eligible,
                unclean=ctx.unclean[tp[0]],
            )  # fmt: skip
    changed = await controller.writer.update_states(decisions)
    controller.send_leader_and_isr(changed)
    # every broker learns the new leaders and the offline replicas of all of the failed
    # brokers' partitions
    controller.send_update_metadata(sorted(ctx.live), [tp for tp in tps if tp in ctx.leadership])
