"""ISR changes on the leader side: expansion on a follower's fetch, shrinking by a periodic check.

Expansion is decided on a follower's fetch (`follower_fetched`, called by ReplicaManager's
read), shrinking by `check_isr` (run every replica_lag_time_max_ms / 2 by `run_isr_checks`, on
the injected clock). Either is written first to the partition's state znode, conditionally on
its version, through the injected `IsrWriter` (coordinator/cluster/isr.py; it also notifies
the controller), and applied to the partition only once written. A write refused because
ZooKeeper shows another leader or a newer leader epoch makes this broker stop acting as leader
(`Partition.resign`) until the controller says what it is. One write per partition at a time.
The decisions themselves are pure functions (broker/replication_decisions.py); this class holds
the hosted partitions' map (shared with ReplicaManager, not owned) and does the writing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from broker.metrics_counters import TopicTraffic
from broker.partition import Partition
from broker.replication_decisions import expanded_isr, isr_write_verdict, shrunk_isr
from coordinator.cluster.isr import IsrWriteResult
from protocol.clock import Clock

log = logging.getLogger("odradek.broker.replicas")


class IsrWriter(Protocol):
    """The leader's conditional write of a partition's state znode (coordinator/cluster/isr.py)."""

    async def write_isr(
        self,
        topic: str,
        partition: int,
        leader_epoch: int,
        controller_epoch: int,
        isr: list[int],
        zk_version: int,
    ) -> IsrWriteResult: ...


class IsrChanges:
    def __init__(
        self,
        broker_id: int,
        partitions: dict[tuple[str, int], Partition],
        clock: Clock,
        replica_lag_time_max_ms: int,
        isr_writer: IsrWriter | None,
        traffic: TopicTraffic,
        spawn: Callable[[Awaitable[None]], None],
    ) -> None:
        self.broker_id = broker_id
        self.partitions = partitions  # ReplicaManager's: the partitions hosted here
        self.clock = clock
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.isr_writer = isr_writer
        self.traffic = traffic  # ISR changes are counted (metrics)
        self._spawn = spawn  # ReplicaManager's: its tasks end at its shutdown

    def follower_fetched(self, p: Partition, replica_id: int, offset: int) -> None:
        if p.record_follower_fetch(replica_id, offset, self.clock.monotonic_ms()):
            self._change_isr(p, expanded_isr(p.isr, replica_id))

    def check_isr(self) -> None:
        """Shrink the ISR of every led partition whose followers lag (replica.lag.time.max.ms)."""
        now = self.clock.monotonic_ms()
        lag = self.replica_lag_time_max_ms
        for p in list(self.partitions.values()):
            if p.is_leader:
                out = p.out_of_sync(now, lag)
                if out:
                    self._change_isr(p, shrunk_isr(p.isr, out))

    async def run_isr_checks(self) -> None:
        interval_s = max(1, self.replica_lag_time_max_ms // 2) / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                self.check_isr()
            except Exception:  # one bad partition must not end the checks
                log.exception("ISR check failed")

    def _change_isr(self, p: Partition, isr: list[int]) -> None:
        if p.isr_update_in_flight or isr == p.isr:
            return
        p.isr_update_in_flight = True
        self._spawn(self._write_isr(p, isr))

    async def _write_isr(self, p: Partition, isr: list[int]) -> None:
        epoch = p.leader_epoch
        try:
            if self.isr_writer is None:  # no ZooKeeper (in-process tests): apply directly
                result = IsrWriteResult(True, p.zk_version + 1, self.broker_id, epoch, isr)
            else:
                result = await self.isr_writer.write_isr(
                    p.topic, p.index, epoch, p.controller_epoch, isr, p.zk_version
                )
        except Exception as exc:  # ZooKeeper unreachable: the next check retries
            log.warning("%s-%d: ISR change to %s not written: %s", p.topic, p.index, isr, exc)
            return
        finally:
            p.isr_update_in_flight = False
        if not p.is_leader or p.leader_epoch != epoch:
            return  # a LeaderAndIsr changed this partition meanwhile
        verdict = isr_write_verdict(result, self.broker_id, epoch)
        if verdict == "apply":
            log.info("%s-%d: ISR %s -> %s", p.topic, p.index, p.isr, isr)
            self.traffic.isr_changed(len(p.isr), len(isr))
            p.apply_isr(isr, result.zk_version)
        elif verdict == "resign":
            log.warning(
                "%s-%d: ZooKeeper shows leader %d epoch %d (ours: %d): no longer leading",
                p.topic, p.index, result.leader, result.leader_epoch, epoch,
            )  # fmt: skip
            p.resign()
        else:
            p.apply_isr(result.isr, result.zk_version)
