"""A broker's failed log directory, as the controller learns of it (Kafka's KIP-112, ZooKeeper).

The broker side (broker/storage_failures.py, through `ZkLogDirNotifier`): when one of its log
directories goes offline (broker/log/dir_failure.py) the broker creates a persistent sequential
znode

    /log_dir_event_notification/log_dir_event_<seq>
        {"version":1,"broker":<id>,"event":1,"registration_czxid":<czxid>,
         "partitions":[["<topic>",<partition>],...]}

(Kafka's layout; event 1 is LogDirFailure; `registration_czxid` and `partitions` are ours: the
czxid of the broker's /brokers/ids/<id> when it wrote the note, so a note older than the
broker's current registration, left by an incarnation that has since restarted, is ignored;
and the partitions whose log is in a failed directory, at most MAX_NOTE_PARTITIONS of them.
Kafka's controller learns those from the LeaderAndIsr answers it then asks for; a note without
the list, a Kafka-style one or one from a broker whose every directory failed, means all of
the broker's replicas).

The controller side (`on_log_dir_event`, a controller event like coordinator/controller/admin.py's
functions): it watches the children, reads every note, and for each live broker named treats
the replicas named (or all of that broker's) as offline, as Kafka's onReplicasBecomeOffline
does: each partition it led gets a new leader from the rest of its ISR (or goes offline, leader
-1, when there is none), and it leaves the ISR (never emptying one:
coordinator/controller/election.py); the replicas are listed in their partitions'
offline_replicas. A broker whose every replica is offline joins
`LogDirContext.offline_log_dirs` (never elected leader: `eligible_ids`); one with some replicas
offline (`offline_replicas`) stays eligible for the others, and should another election pick it
for an offline one, the broker refuses the LeaderAndIsr with KAFKA_STORAGE_ERROR and writes a
note again, which moves it away again. LeaderAndIsr goes to the replicas of the changed
partitions and UpdateMetadata to every live broker; then the notes are deleted. The marks are
dropped when the broker's registration goes away (a restart: its recovery brings the directory
back and it returns as a follower that truncates, catches up and rejoins the ISR).

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
from collections.abc import Collection
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
MAX_NOTE_PARTITIONS = 10_000  # partitions named in a note (~30 bytes each); past it: all


@dataclass(frozen=True, slots=True)
class LogDirEvent:
    broker_id: int
    registration_czxid: int | None  # None: written without it (a Kafka-style note)
    partitions: frozenset[TopicPartition] | None = None  # None: every replica of the broker


def encode_log_dir_event(
    broker_id: int,
    registration_czxid: int | None,
    partitions: Collection[TopicPartition] | None = None,
) -> bytes:
    body: dict[str, object] = {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE}
    if registration_czxid is not None:
        body["registration_czxid"] = registration_czxid
    if partitions is not None and len(partitions) <= MAX_NOTE_PARTITIONS:
        body["partitions"] = sorted([t, p] for t, p in partitions)
    return json.dumps(body, separators=(",", ":")).encode()


def decode_log_dir_event(data: bytes) -> LogDirEvent:
    """The note's broker (and partitions); ZkDataError if malformed or not a LogDirFailure
    event."""
    try:
        obj = json.loads(data)
        broker, event = int(obj["broker"]), int(obj["event"])
        czxid = obj.get("registration_czxid")
        czxid = None if czxid is None else int(czxid)
        named = obj.get("partitions")
        partitions = None
        if named is not None:
            if len(named) > MAX_NOTE_PARTITIONS:
                raise ValueError(f"over {MAX_NOTE_PARTITIONS} partitions")
            partitions = frozenset((str(t), int(p)) for t, p in named)
    except (ValueError, KeyError, TypeError) as exc:
        raise ZkDataError(f"bad log dir event notification: {exc}") from None
    if event != LOG_DIR_FAILURE:
        raise ZkDataError(f"unknown log dir event {event}")
    return LogDirEvent(broker, czxid, partitions)


def offline_by_broker(
    events: list[LogDirEvent], live_czxids: dict[int, int]
) -> dict[int, frozenset[TopicPartition] | None]:
    """What the notes of live brokers' current incarnations take offline, per broker: the
    partitions named, or None for all its replicas (a note whose registration czxid is not the
    broker's current one came before a restart)."""
    out: dict[int, frozenset[TopicPartition] | None] = {}
    for e in events:
        czxid = live_czxids.get(e.broker_id)
        if czxid is None or (e.registration_czxid is not None and e.registration_czxid != czxid):
            continue
        if e.broker_id in out and out[e.broker_id] is None:
            continue
        if e.partitions is None:
            out[e.broker_id] = None
        else:
            out[e.broker_id] = (out.get(e.broker_id) or frozenset()) | e.partitions
    return dict(sorted(out.items()))


def brokers_with_failed_dirs(events: list[LogDirEvent], live_czxids: dict[int, int]) -> list[int]:
    """The live brokers whose current incarnation reported a failed log directory."""
    return list(offline_by_broker(events, live_czxids))


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

    offline_log_dirs: set[int] = field(default_factory=set)  # every replica offline
    # replicas in a failed log directory of a broker whose other directories serve on
    offline_replicas: dict[int, set[TopicPartition]] = field(default_factory=dict)

    @property
    def eligible_ids(self) -> set[int]:
        """Brokers that may be elected leader: live, not shutting down, log directory online."""
        return set(self.live) - self.shutting_down - self.offline_log_dirs

    def partition_state_msg(self, tp: TopicPartition, is_new: bool = False) -> PartitionStateMsg:
        msg = super().partition_state_msg(tp, is_new)
        extra = [r for r in msg.replicas if r in self.offline_log_dirs
                 or tp in self.offline_replicas.get(r, ())]  # fmt: skip
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

    async def notify_log_dir_failure(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> None:
        stat = await self.zk.stat(paths.broker_path(self.broker_id))
        czxid = None if stat is None else stat.czxid
        data = encode_log_dir_event(self.broker_id, czxid, partitions)
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
    offline: dict[int, set[TopicPartition]] = {}
    for b, named in offline_by_broker(events, live_czxids).items():
        if b in ctx.offline_log_dirs:
            continue  # every replica offline already
        if named is None:
            ctx.offline_log_dirs.add(b)
            ctx.offline_replicas.pop(b, None)
            offline[b] = set(ctx.partitions_on(b))
        else:  # named again: maybe elected since (the broker refused); moved away again
            offline[b] = {tp for tp in named if b in ctx.replicas(tp)}
            ctx.offline_replicas.setdefault(b, set()).update(offline[b])
    if any(offline.values()):
        await _replicas_offline(controller, offline)
    for child in children:
        with contextlib.suppress(ZkNoNode):
            await zk.delete(f"{LOG_DIR_EVENT_NOTIFICATION}/{child}")
    if len(children) == MAX_NOTES_PER_EVENT:
        controller.enqueue_log_dir_event()  # more notes wait


async def _replicas_offline(
    controller: LogDirControllerOps, offline: dict[int, set[TopicPartition]]
) -> None:
    """Take each broker's replicas named in `offline` offline: new leaders, smaller ISRs."""
    ctx = controller.ctx
    for b, tps_of_b in offline.items():
        log.warning("log directory offline on broker %d: %s replicas offline", b,
                    "all its" if b in ctx.offline_log_dirs else len(tps_of_b))  # fmt: skip
    tps = sorted({tp for named in offline.values() for tp in named if tp[0] not in ctx.deleting})
    await controller.refresh_unclean({tp[0] for tp in tps})
    eligible = ctx.eligible_ids
    decisions: dict[TopicPartition, Decide] = {}
    for tp in tps:
        replicas = ctx.replicas(tp)
        failed = [b for b, named in offline.items() if tp in named and b in replicas]
        for b in failed:
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
