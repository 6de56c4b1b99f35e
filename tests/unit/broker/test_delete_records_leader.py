"""DeleteRecords on a real leader (ReplicaManager over a real log, no sockets): its bound is the
high watermark, as Kafka's, even while a transaction is open below it; the last stable offset
bounds retention only (tests/unit/log/test_transactions_log.py keeps that)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.delete_records import delete_on_leader
from broker.log.config import LogConfig
from broker.log.flusher import GroupCommitFlusher
from broker.log.manager import LogManager
from broker.replica_manager import ReplicaManager
from protocol.api.controller import PartitionState
from protocol.batch import TRANSACTIONAL_BIT, build_batch, build_batch_from_values, with_producer
from protocol.clock import ManualClock
from protocol.errors import OffsetOutOfRangeError

T0 = 1_700_000_000_000


def _txn(values: list[bytes], pid: int) -> bytes:
    raw = bytearray(build_batch([(None, v, None, T0) for v in values]))
    raw[22] |= TRANSACTIONAL_BIT  # the attributes' low byte; with_producer recomputes the CRC
    return with_producer(raw, pid, 0, 0)


async def _no_overrides(_topic: str) -> dict[str, str]:
    return {}


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[ReplicaManager]:
    """Leads t-0 alone (so each append moves the HW at once), holding one plain record (0) and
    a transaction's two (1-2) whose marker is not written: HW 3, last stable offset 1."""
    clock = ManualClock(T0)
    manager = LogManager(tmp_path, LogConfig(), clock)
    manager.load_all()
    rm = ReplicaManager(1, manager, GroupCommitFlusher(), LogConfig(), 100, 1 << 20, clock=clock)
    alone = [PartitionState("t", 0, 1, 1, 1, [1], 0, [1], [])]
    await rm.roles.apply_leader_and_isr(alone, _no_overrides)
    assert rm.append("t", 0, build_batch_from_values([b"plain"], T0)).error_code == 0
    assert rm.append("t", 0, _txn([b"a", b"b"], pid=7)).error_code == 0
    p = rm.partitions[("t", 0)]
    assert (p.high_watermark, p.last_stable_offset) == (3, 1)
    yield rm
    await rm.shutdown()
    manager.shutdown()


@pytest.mark.parametrize("offset", [-1, 3, 2])
async def test_delete_records_past_the_last_stable_offset_up_to_the_hw(
    replicas: ReplicaManager, offset: int
) -> None:
    """Right after a commit the marker may not be written yet: Kafka deletes up to the HW."""
    target = delete_on_leader(replicas, "t", 0, offset)
    p = replicas.partitions[("t", 0)]
    assert target == (3 if offset == -1 else offset)
    assert p.log.log_start_offset == target
    # the open transaction's first unstable offset follows the log start up (Kafka's too)
    assert p.last_stable_offset == target


async def test_delete_records_above_the_hw_is_out_of_range(replicas: ReplicaManager) -> None:
    with pytest.raises(OffsetOutOfRangeError, match="above the high watermark 3"):
        delete_on_leader(replicas, "t", 0, 4)
    assert replicas.partitions[("t", 0)].log.log_start_offset == 0
