"""One partition as this broker sees it: its Log plus the leadership state the controller sent.

Replica roles (a table, as STYLE.md asks; transitions happen on LeaderAndIsr/StopReplica, and
`resign` when ZooKeeper shows a newer leader epoch than ours):

    role      what it does                                            next
    LEADER    accepts produce, serves fetch, tracks followers, ISR    FOLLOWER, OFFLINE, (removed)
    FOLLOWER  fetches from the leader (broker/replica_fetcher.py)     LEADER, OFFLINE, (removed)
    OFFLINE   its log directory failed (broker/log/dir_failure.py):   (removed; a restart)
              neither leads nor follows, every request for it gets
              KAFKA_STORAGE_ERROR

The high watermark (HW) is a field of its own, advanced only by `advance_high_watermark`, a pure
function of the ISR members' log end offsets: the smallest of them, never going backwards. The
leader learns its followers' offsets from their fetches (`record_follower_fetch`, which also
says when a follower may rejoin the ISR); the ISR itself changes only through `apply_isr`,
after the change is in ZooKeeper (isr_changes.py writes it). A follower's HW is set by its
fetcher from the leader's answers.

Waiters: a long-polling consumer fetch parks one future on every partition it reads (`waiters`,
woken when the HW moves: consumers see data only below it); a follower's fetch parks on
`replica_waiters`, woken by appends. acks=all produces wait in `produce_waiters`
(broker/delayed_produce.py), completed as the HW passes their batches and failed when this
broker stops leading. A DeleteRecords waits on `log_start_waiters` until the low watermark
(`low_watermark`: the smallest log start offset over the leader and its live followers, which
report theirs in each fetch) reaches the new log start, as Kafka's DelayedDeleteRecords.
"""

from __future__ import annotations

import asyncio
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from broker.delayed_produce import ProduceWaiters
from broker.replication_decisions import (
    FollowerState,
    may_join_isr,
    out_of_sync_replicas,
    record_fetch,
)
from broker.replication_timeline import AppendEnds, append_ends
from protocol.errors import LogDirOfflineError, NotLeaderForPartitionError

if TYPE_CHECKING:
    from broker.log.log import Log

MIN_WAITERS_BEFORE_PRUNE = 8


class Waiter(Protocol):
    """What a partition wakes: an asyncio.Future[None], or a parked fetch's waiter
    (broker/delayed_fetch.py). `done()` ones are skipped and pruned."""

    def done(self) -> bool: ...

    def set_result(self, result: None, /) -> None: ...


UNKNOWN_OFFSET = -1


class Role(Enum):
    LEADER = "leader"
    FOLLOWER = "follower"
    OFFLINE = "offline"


def advance_high_watermark(
    current_hw: int, leader_id: int, isr: Iterable[int], log_end_offsets: Mapping[int, int]
) -> int:
    """The new HW: min log end offset over the ISR, never below the current HW.

    A member whose offset is unknown holds the HW where it is (it has not proven it has
    anything yet). The leader's own offset must be in `log_end_offsets`.
    """
    lowest: int | None = None
    for replica in isr:
        leo = log_end_offsets.get(replica)
        if leo is None:
            return current_hw
        lowest = leo if lowest is None else min(lowest, leo)
    if lowest is None:
        lowest = log_end_offsets[leader_id]
    return max(current_hw, lowest)


def low_watermark(
    leader_log_start: int,
    leader_id: int,
    replicas: Iterable[int],
    follower_log_starts: Mapping[int, int],
    alive: Container[int],
) -> int:
    """Kafka's lowWatermarkIfLeader: the smallest log start offset over the leader and every
    live follower (in the ISR or not). A live follower not heard from since this leadership
    counts as -1 (unknown), so a DeleteRecords waits for its first fetch."""
    lowest = leader_log_start
    for replica in replicas:
        if replica != leader_id and replica in alive:
            lowest = min(lowest, follower_log_starts.get(replica, UNKNOWN_OFFSET))
    return lowest


@dataclass(slots=True)
class Partition:
    topic: str
    index: int
    log: Log
    local_broker_id: int
    role: Role = Role.FOLLOWER
    leader_id: int = -1
    leader_epoch: int = -1
    controller_epoch: int = -1
    zk_version: int = -1
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    high_watermark: int = 0
    leader_epoch_start_offset: int = 0
    followers: dict[int, FollowerState] = field(default_factory=dict)
    follower_log_starts: dict[int, int] = field(default_factory=dict)  # from their fetches
    isr_update_in_flight: bool = False
    storage_failed: bool = False  # a follower whose disk write failed stops fetching
    waiters: list[Waiter] = field(default_factory=list)
    replica_waiters: list[Waiter] = field(default_factory=list)
    log_start_waiters: list[Waiter] = field(default_factory=list)
    produce_waiters: ProduceWaiters = field(init=False)
    append_ends: AppendEnds = field(default_factory=append_ends)  # broker/replication_timeline.py

    def __post_init__(self) -> None:
        self.produce_waiters = ProduceWaiters((self.topic, self.index))

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def min_insync_replicas(self) -> int:
        return self.log.config.min_insync_replicas

    @property
    def follower_log_end_offsets(self) -> dict[int, int]:
        return {r: s.log_end_offset for r, s in self.followers.items() if s.log_end_offset >= 0}

    # ----- role changes ---------------------------------------------------------------------

    def become_leader(
        self,
        leader_epoch: int,
        isr: list[int],
        replicas: list[int],
        zk_version: int,
        now_ms: int = 0,
    ) -> None:
        # the same leadership sent again (a new controller re-sends every state): keep what
        # we know of the followers, or the HW would stall until each fetched again
        known = self.followers if self.is_leader and leader_epoch == self.leader_epoch else {}
        self.role = Role.LEADER
        self.leader_id = self.local_broker_id
        self._set_state(leader_epoch, isr, replicas, zk_version)
        # Kafka's leader records its epoch's start at once, so OffsetForLeaderEpoch for an
        # older epoch ends where this leadership began even before anything is written in it.
        self.log.epochs.assign(leader_epoch, self.log.log_end_offset)
        self.leader_epoch_start_offset = self.log.log_end_offset
        # Every follower starts as caught up now: the lag clock of ISR members starts here.
        self.followers = {
            r: known.get(r) or FollowerState(last_caught_up_ms=now_ms)
            for r in replicas
            if r != self.leader_id
        }
        if not known:
            self.follower_log_starts = {}
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        self.update_high_watermark()
        self.notify_replica_waiters()

    def become_follower(
        self,
        leader_id: int,
        leader_epoch: int,
        isr: list[int],
        replicas: list[int],
        zk_version: int,
    ) -> None:
        self.role = Role.FOLLOWER
        self.leader_id = leader_id
        self._set_state(leader_epoch, isr, replicas, zk_version)
        self.followers.clear()
        self.follower_log_starts.clear()
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        self._stop_leading()

    def resign(self) -> None:
        """ZooKeeper shows a newer leadership: stop acting as leader until told what to be."""
        self.role = Role.FOLLOWER
        self.leader_id = -1
        self.followers.clear()
        self.follower_log_starts.clear()
        self._stop_leading()

    def go_offline(self) -> None:
        """Its log directory failed: stop leading and following for good (until a restart).
        Waiting acks=all produces get KAFKA_STORAGE_ERROR: what they wait for may not be on
        this broker's disk."""
        self.role = Role.OFFLINE
        self.leader_id = -1
        self.storage_failed = True
        self.followers.clear()
        self.follower_log_starts.clear()
        self._stop_leading(LogDirOfflineError.code)

    def _stop_leading(self, error_code: int = NotLeaderForPartitionError.code) -> None:
        self.produce_waiters.fail_all(error_code)
        self.append_ends.clear()  # a later leadership's followers confirm only its appends
        self.notify_waiters()  # parked fetches re-read and get NOT_LEADER_FOR_PARTITION
        self.notify_replica_waiters()
        self.notify_log_start_waiters()  # waiting DeleteRecords get NOT_LEADER_FOR_PARTITION

    def _set_state(
        self, leader_epoch: int, isr: list[int], replicas: list[int], zk_version: int
    ) -> None:
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self.zk_version = zk_version

    # ----- high watermark and ISR (leader) --------------------------------------------------

    def update_high_watermark(self) -> bool:
        """Recompute the HW after an append, a follower's fetch or an ISR change."""
        leos = self.follower_log_end_offsets
        leos[self.local_broker_id] = self.log.log_end_offset
        new_hw = advance_high_watermark(self.high_watermark, self.local_broker_id, self.isr, leos)
        if new_hw == self.high_watermark:
            return False
        self.high_watermark = new_hw
        self.log.update_high_watermark(new_hw)  # completed transactions below it: stable
        self.notify_waiters()
        self.produce_waiters.on_high_watermark(new_hw, len(self.isr), self.min_insync_replicas)
        return True

    @property
    def last_stable_offset(self) -> int:
        """min(first unstable offset, HW): where read_committed consumers stop (KIP-98)."""
        return self.log.last_stable_offset(self.high_watermark)

    def record_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> bool:
        """A follower fetched from `fetch_offset` (<= our LEO). True: it may join the ISR now."""
        if replica_id not in self.replicas or replica_id == self.local_broker_id:
            return False
        state = self.followers.get(replica_id)
        if state is None:
            state = self.followers[replica_id] = FollowerState()
        moved = state.log_end_offset != fetch_offset
        record_fetch(state, fetch_offset, self.log.log_end_offset, now_ms)
        if moved:  # the HW depends on the followers' LEOs only through this fetch
            self.update_high_watermark()
        return replica_id not in self.isr and may_join_isr(
            fetch_offset, self.high_watermark, self.leader_epoch_start_offset
        )

    def record_follower_log_start(self, replica_id: int, log_start_offset: int) -> None:
        """A follower's fetch said where its log starts (it follows ours: DeleteRecords)."""
        if replica_id not in self.replicas or replica_id == self.local_broker_id:
            return
        if log_start_offset < 0 or self.follower_log_starts.get(replica_id) == log_start_offset:
            return
        self.follower_log_starts[replica_id] = log_start_offset
        self.notify_log_start_waiters()

    def low_watermark(self, alive: Container[int]) -> int:
        return low_watermark(
            self.log.log_start_offset, self.local_broker_id, self.replicas,
            self.follower_log_starts, alive,
        )  # fmt: skip

    def record_follower_offset(self, replica_id: int, log_end_offset: int) -> None:
        """A follower's offset without a time (tests; kept for issue 3's callers)."""
        self.record_follower_fetch(replica_id, log_end_offset, 0)

    def out_of_sync(self, now_ms: int, lag_time_max_ms: int) -> list[int]:
        return out_of_sync_replicas(
            self.local_broker_id, self.isr, self.followers, now_ms, lag_time_max_ms
        )

    def apply_isr(self, isr: list[int], zk_version: int) -> None:
        """The ISR as now written in ZooKeeper (at `zk_version`)."""
        self.isr = list(isr)
        self.zk_version = zk_version
        if not self.update_high_watermark():
            # the HW did not move, but waiting produces may now be answerable (or refused)
            self.produce_waiters.on_high_watermark(
                self.high_watermark, len(self.isr), self.min_insync_replicas
            )

    # ----- waiters --------------------------------------------------------------------------

    def add_waiter(self, waiter: Waiter, replica: bool = False) -> None:
        waiters = self.replica_waiters if replica else self.waiters
        _add(waiters, waiter)

    def add_log_start_waiter(self, waiter: asyncio.Future[None]) -> None:
        """A DeleteRecords waiting for the followers' log starts (woken as they report them)."""
        _add(self.log_start_waiters, waiter)

    def notify_log_start_waiters(self) -> None:
        if self.log_start_waiters:
            waiters, self.log_start_waiters = self.log_start_waiters, []
            _wake(waiters)

    def notify_waiters(self) -> None:
        waiters, self.waiters = self.waiters, []
        _wake(waiters)

    def notify_replica_waiters(self) -> None:
        if self.replica_waiters:
            waiters, self.replica_waiters = self.replica_waiters, []
            _wake(waiters)


def _add(waiters: list[Waiter], waiter: Waiter) -> None:
    """Append, pruning the done waiters whenever the list reaches a power of two (from 8): a
    list holds at most about twice its live waiters, for O(1) amortised work per add. (An idle
    partition's parked fetches time out without a wake-up: pruning only at 1,024 kept up to
    1,024 finished fetches, and what they hold, per partition; 3,000 partitions' brokers grew
    by ~70 MB a minute to ~450 MB.)"""
    n = len(waiters)
    if n >= MIN_WAITERS_BEFORE_PRUNE and n & (n - 1) == 0:
        waiters[:] = [w for w in waiters if not w.done()]
    waiters.append(waiter)


def _wake(waiters: list[Waiter]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)
