"""One partition as this broker sees it: its Log plus the leadership state the controller sent.

Replica roles (a table, as STYLE.md asks; transitions happen only on LeaderAndIsr/StopReplica):

    role      what it does                                            next
    LEADER    accepts produce, serves fetch below the high watermark  FOLLOWER, (removed)
    FOLLOWER  holds a log; issue 4 makes it fetch from the leader     LEADER, (removed)

The high watermark (HW) is a field of its own, advanced only by `advance_high_watermark`, a pure
function of the ISR members' log end offsets: the smallest of them, never going backwards.
Issue 3 has no follower fetching, so the leader passes only itself as the ISR that counts
(`_hw_isr`); issue 4 passes `self.isr` once followers report their offsets via
`record_follower_offset`.

Waiters: a long-polling fetch parks one future on every partition it reads; `notify_waiters`
completes them all when the HW moves (consumers see data only below it), so a delayed fetch
wakes as soon as data it may return arrives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.log.log import Log

MAX_WAITERS_BEFORE_PRUNE = 1024


class Role(Enum):
    LEADER = "leader"
    FOLLOWER = "follower"


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
    follower_log_end_offsets: dict[int, int] = field(default_factory=dict)
    waiters: list[asyncio.Future[None]] = field(default_factory=list)

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    def become_leader(
        self, leader_epoch: int, isr: list[int], replicas: list[int], zk_version: int
    ) -> None:
        self.role = Role.LEADER
        self.leader_id = self.local_broker_id
        self._set_state(leader_epoch, isr, replicas, zk_version)
        self.follower_log_end_offsets.clear()
        # A new leader starts from what it holds (Kafka starts from its checkpointed HW and
        # lets followers catch it up; with no followers fetching, that is its log end offset).
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        self.update_high_watermark()

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
        self.follower_log_end_offsets.clear()
        self.notify_waiters()  # parked fetches re-read and get NOT_LEADER_FOR_PARTITION

    def _set_state(
        self, leader_epoch: int, isr: list[int], replicas: list[int], zk_version: int
    ) -> None:
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self.zk_version = zk_version

    def _hw_isr(self) -> list[int]:
        # Issue 3: followers hold no data and do not fetch, so the ISR that bounds the HW is
        # the leader alone. Issue 4 returns self.isr here.
        return [self.local_broker_id]

    def update_high_watermark(self) -> bool:
        """Recompute the HW after an append or a follower's fetch; wake waiters if it moved."""
        leos = dict(self.follower_log_end_offsets)
        leos[self.local_broker_id] = self.log.log_end_offset
        new_hw = advance_high_watermark(
            self.high_watermark, self.local_broker_id, self._hw_isr(), leos
        )
        if new_hw == self.high_watermark:
            return False
        self.high_watermark = new_hw
        self.notify_waiters()
        return True

    def record_follower_offset(self, replica_id: int, log_end_offset: int) -> None:
        """A follower fetched from `log_end_offset` (issue 4 adds ISR expand/shrink here)."""
        if replica_id in self.replicas and replica_id != self.local_broker_id:
            self.follower_log_end_offsets[replica_id] = log_end_offset
            self.update_high_watermark()

    def add_waiter(self, waiter: asyncio.Future[None]) -> None:
        if len(self.waiters) >= MAX_WAITERS_BEFORE_PRUNE:
            self.waiters = [w for w in self.waiters if not w.done()]
        self.waiters.append(waiter)

    def notify_waiters(self) -> None:
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
