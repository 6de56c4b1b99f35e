"""Partition roles, the high watermark on a real log, and fetch waiters."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.partition import Partition, Role
from protocol.clock import ManualClock
from tests.unit.broker.helpers import batch


def _partition(tmp_path: Path) -> Partition:
    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock())
    return Partition("t", 0, log, local_broker_id=1)


async def test_leader_hw_follows_appends_and_wakes_waiters(tmp_path: Path) -> None:
    p = _partition(tmp_path)
    try:
        p.become_leader(leader_epoch=3, isr=[1], replicas=[1], zk_version=0)
        assert (p.role, p.leader_id, p.leader_epoch, p.high_watermark) == (Role.LEADER, 1, 3, 0)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        p.add_waiter(waiter)
        p.log.append_as_leader(batch(4), p.leader_epoch)
        assert not waiter.done()  # appended, HW not moved yet
        assert p.update_high_watermark()
        assert waiter.done() and p.high_watermark == 4
        assert not p.update_high_watermark()  # nothing new: no move, no wake
    finally:
        p.log.close()


async def test_hw_is_min_leo_over_isr_and_never_backwards(tmp_path: Path) -> None:
    p = _partition(tmp_path)
    try:
        # replication factor 2: the HW waits for the follower in the ISR to prove its offset
        p.become_leader(leader_epoch=0, isr=[1, 2], replicas=[1, 2], zk_version=0)
        p.log.append_as_leader(batch(5), 0)
        p.update_high_watermark()
        assert p.high_watermark == 0
        p.record_follower_offset(2, 3)
        assert p.high_watermark == 3
        p.record_follower_offset(2, 5)
        assert p.high_watermark == 5
        p.record_follower_offset(2, 0)
        assert p.high_watermark == 5  # never backwards
        p.record_follower_offset(9, 3)  # not a replica: ignored
        assert 9 not in p.follower_log_end_offsets
    finally:
        p.log.close()


async def test_becoming_follower_wakes_parked_fetches(tmp_path: Path) -> None:
    p = _partition(tmp_path)
    try:
        p.become_leader(leader_epoch=0, isr=[1], replicas=[1, 2], zk_version=0)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        p.add_waiter(waiter)
        p.become_follower(leader_id=2, leader_epoch=1, isr=[2], replicas=[1, 2], zk_version=1)
        assert waiter.done()
        assert (p.is_leader, p.leader_id, p.leader_epoch) == (False, 2, 1)
    finally:
        p.log.close()


async def test_same_leadership_sent_again_keeps_follower_offsets(tmp_path: Path) -> None:
    p = _partition(tmp_path)
    try:
        p.become_leader(leader_epoch=2, isr=[1, 2], replicas=[1, 2], zk_version=0)
        p.log.append_as_leader(batch(5), 2)
        p.record_follower_offset(2, 5)
        assert p.high_watermark == 5
        p.become_leader(leader_epoch=2, isr=[1, 2], replicas=[1, 2], zk_version=1)
        assert p.follower_log_end_offsets == {2: 5}
        p.become_leader(leader_epoch=3, isr=[1, 2], replicas=[1, 2], zk_version=2)
        assert p.follower_log_end_offsets == {}  # a new leadership: followers prove it again
        assert p.log.epochs.entries()[-1] == (3, 5)  # the epoch starts at the log end
    finally:
        p.log.close()
