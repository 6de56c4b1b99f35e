"""ListOffsets' Kafka 4.0 targets through the ReplicaManager: MAX_TIMESTAMP (-3) answers the first
record holding the largest timestamp, but only below the high watermark for a consumer (a
replica sees up to the log end); EARLIEST_LOCAL (-4) is the log start (nothing is tiered);
LATEST_TIERED (-5) is Kafka's answer without tiered storage, offset -1."""

from __future__ import annotations

from pathlib import Path

from broker.log.config import LogConfig
from broker.log.flusher import GroupCommitFlusher
from broker.log.manager import LogManager
from broker.replica_manager import ReplicaManager
from protocol.api.controller import PartitionState
from protocol.api.list_offsets import (
    EARLIEST_LOCAL_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    MAX_TIMESTAMP,
)
from protocol.batch import build_batch
from protocol.clock import ManualClock

T0 = 1_700_000_000_000
CONSUMER, FOLLOWER = -1, 2


async def _no_overrides(_topic: str) -> dict[str, str]:
    return {}


def _batch(stamps: list[int]) -> bytes:
    return build_batch([(None, b"v", None, T0 + ts) for ts in stamps])


async def test_kafka_4_list_offsets_targets(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    manager = LogManager(tmp_path, LogConfig(), clock)
    manager.load_all()
    replicas = ReplicaManager(1, manager, GroupCommitFlusher(), LogConfig(), 100, 1 << 20,
                              clock=clock)  # fmt: skip
    try:
        alone = [PartitionState("t", 0, 1, 1, 3, [1], 0, [1], [])]  # leads alone: HW follows
        await replicas.roles.apply_leader_and_isr(alone, _no_overrides)
        assert replicas.list_offset(CONSUMER, "t", 0, MAX_TIMESTAMP, -1) == (0, -1, -1, -1)
        for stamps in ([100, 300, 200], [250, 50]):
            assert replicas.append("t", 0, _batch(stamps), acks=1).error_code == 0
        assert replicas.list_offset(CONSUMER, "t", 0, MAX_TIMESTAMP, -1) == (0, T0 + 300, 1, 3)
        assert replicas.list_offset(CONSUMER, "t", 0, EARLIEST_LOCAL_TIMESTAMP, -1) == (0, -1, 0, 3)
        assert replicas.list_offset(CONSUMER, "t", 0, LATEST_TIERED_TIMESTAMP, -1) == (
            0, -1, -1, -1
        )  # fmt: skip
        # a follower joins the ISR: the next batch stays above the HW until it fetches it
        with_follower = [PartitionState("t", 0, 1, 1, 4, [1, 2], 1, [1, 2], [])]
        await replicas.roles.apply_leader_and_isr(with_follower, _no_overrides)
        assert replicas.append("t", 0, _batch([900]), acks=1).error_code == 0
        p = replicas.partitions[("t", 0)]
        assert p.high_watermark < 6
        consumer = replicas.list_offset(CONSUMER, "t", 0, MAX_TIMESTAMP, -1)
        assert consumer == (0, -1, -1, -1)  # its record is not committed yet: none, as Kafka
        assert replicas.list_offset(FOLLOWER, "t", 0, MAX_TIMESTAMP, -1) == (0, T0 + 900, 5, 4)
    finally:
        await replicas.shutdown()
        manager.shutdown()
