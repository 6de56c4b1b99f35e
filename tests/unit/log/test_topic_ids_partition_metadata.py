"""partition.metadata through the ReplicaManager: written when a LeaderAndIsr with the topic id
first names a partition, kept across a restart, and a directory of another topic id refused with
INCONSISTENT_TOPIC_ID (one error log line), never silently reused."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest

from broker.log import partition_metadata as pm
from broker.log.config import LogConfig
from broker.log.flusher import GroupCommitFlusher
from broker.log.manager import LogManager
from broker.replica_manager import ReplicaManager
from protocol.api.controller import PartitionState
from protocol.clock import ManualClock
from protocol.errors import for_name
from protocol.topic_ids import encode_topic_id, new_topic_id

T0 = 1_700_000_000_000
INCONSISTENT = for_name("INCONSISTENT_TOPIC_ID").code


async def _no_overrides(_topic: str) -> dict[str, str]:
    return {}


def _state(p: int, topic_id: uuid.UUID | None, epoch: int = 0) -> PartitionState:
    tid = None if topic_id is None else encode_topic_id(topic_id)
    return PartitionState("t", p, 1, 1, epoch, [1], epoch, [1], [], topic_id=tid)


async def _apply(where: Path, states: list[PartitionState]) -> list[int]:
    clock = ManualClock(T0)
    manager = LogManager(where, LogConfig(), clock)
    manager.load_all()
    replicas = ReplicaManager(1, manager, GroupCommitFlusher(), LogConfig(), 100, 1 << 20,
                              clock=clock)  # fmt: skip
    try:
        return [
            code for _, _, code in await replicas.roles.apply_leader_and_isr(states, _no_overrides)
        ]
    finally:
        await replicas.shutdown()
        manager.shutdown()


async def test_written_on_creation_and_checked_after_a_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = new_topic_id()
    # three partitions: the new logs are opened (and their files written) in threads
    assert await _apply(tmp_path, [_state(p, first) for p in range(3)]) == [0, 0, 0]
    for p in range(3):
        assert pm.read(tmp_path / f"t-{p}") == first
    assert await _apply(tmp_path, [_state(0, first, 1)]) == [0]  # same id: accepted
    # the topic was deleted and re-created under the same name while this broker was away
    second = new_topic_id()
    with caplog.at_level(logging.ERROR, logger="broker.replica_manager"):
        codes = await _apply(tmp_path, [_state(0, second, 1), _state(1, first, 1)])
    assert codes == [INCONSISTENT, 0]
    lines = [r.getMessage() for r in caplog.records if "INCONSISTENT_TOPIC_ID" in r.getMessage()]
    assert len(lines) == 1 and "t-0" in lines[0] and encode_topic_id(second) in lines[0]
    assert pm.read(tmp_path / "t-0") == first  # never overwritten


async def test_a_topic_without_an_id_gets_its_file_when_the_id_arrives(tmp_path: Path) -> None:
    assert await _apply(tmp_path, [_state(0, None)]) == [0]
    assert pm.read(tmp_path / "t-0") is None
    backfilled = new_topic_id()
    assert await _apply(tmp_path, [_state(0, backfilled, 1)]) == [0]
    assert pm.read(tmp_path / "t-0") == backfilled


async def test_an_unreadable_file_is_inconsistent_not_overwritten(tmp_path: Path) -> None:
    tid = new_topic_id()
    assert await _apply(tmp_path, [_state(0, tid)]) == [0]
    (tmp_path / "t-0" / pm.FILE_NAME).write_bytes(b"garbage")
    assert await _apply(tmp_path, [_state(0, tid, 1)]) == [INCONSISTENT]
    assert (tmp_path / "t-0" / pm.FILE_NAME).read_bytes() == b"garbage"
