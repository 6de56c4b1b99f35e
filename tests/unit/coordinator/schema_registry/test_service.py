"""The registry service over an in-memory `_schemas` partition: what it reads (only below the
high watermark), who may write, and the writer's replay to the log end before an id."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from coordinator.schema_registry import writes
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import TOPIC, Record, SchemaRecord, encode
from coordinator.schema_registry.service import RegistryService, RegistrySettings
from protocol.batch import build_batch, iter_batches
from protocol.clock import ManualClock

USER = json.dumps({"type": "record", "name": "U", "fields": [{"name": "a", "type": "int"}]})


class MemoryPartition:
    """`_schemas` partition 0 as a replica holds it: batches, a log end and a HW."""

    def __init__(self, leader: bool = True) -> None:
        self.batches: list[tuple[int, bytes]] = []  # (base offset, batch)
        self.end = self.hw = 0
        self.leader = leader
        self.replicate = True  # an append moves the HW to the log end

    def add(self, *records: Record) -> None:
        pairs = [(*encode(r), None, 0) for r in records]
        self.batches.append((self.end, build_batch(pairs, base_offset=self.end)))
        self.end += len(records)

    def led_partitions(self, topic: str) -> dict[int, int]:
        return {0: 1} if self.leader else {}

    def log_range(self, topic: str, partition: int) -> tuple[int, int] | None:
        return (0, self.end)

    def high_watermark(self, topic: str, partition: int) -> int | None:
        return self.hw

    def read_records(
        self, topic: str, partition: int, offset: int, max_bytes: int, max_offset: int
    ) -> tuple[bytes, int] | None:
        out, next_offset = b"", offset
        for base, batch in self.batches:
            last = next(h for _, h in iter_batches(batch, check_crc=False)).last_offset
            if last >= offset and base < max_offset:
                out, next_offset = out + batch, last + 1
        return (out, next_offset) if out else None

    async def append_replicated(
        self, topic: str, partition: int, records: bytes, timeout_ms: int
    ) -> int:
        if not self.leader:
            return 6  # NOT_LEADER_OR_FOLLOWER
        header = next(h for _, h in iter_batches(records, check_crc=False))
        batch = bytearray(records)
        batch[:8] = self.end.to_bytes(8, "big")  # the leader assigns the base offset
        self.batches.append((self.end, bytes(batch)))
        self.end += header.last_offset - header.base_offset + 1
        if self.replicate:
            self.hw = self.end
        return 0


class Leader:
    leader = 1


class Cluster:
    topics: Mapping[str, Mapping[int, Any]] = {TOPIC: {0: Leader()}}
    brokers: Mapping[int, Any] = {}

    def live_broker_ids(self) -> list[int]:
        return [1]

    def has_topic(self, name: str) -> bool:
        return True

    def topic_id(self, name: str) -> None:
        return None

    def topic_by_id(self, topic_id: Any) -> None:
        return None

    def all_partitions_led(self, name: str) -> bool:
        return True

    async def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        return predicate()


class NoTopics:
    async def create_topic(
        self, name: str, num_partitions: int, replication_factor: int,
        configs: Mapping[str, str], live_broker_ids: list[int],
        assignment: Mapping[int, Sequence[int]] | None = None,
    ) -> None:  # fmt: skip
        raise AssertionError("the topic exists")


def service(partition: MemoryPartition, clock: ManualClock) -> RegistryService:
    async def sleep(seconds: float) -> None:
        clock.advance(int(seconds * 1000))
        await asyncio.sleep(0)

    settings = RegistrySettings(catch_up_timeout_ms=1000)
    return RegistryService(partition, Cluster(), NoTopics(), clock, settings, sleep)


def register(text: str, subject: str = "s") -> Callable[[Any], tuple[list[Record], int]]:
    new = writes.NewSchema(subject, "AVRO", text)
    return lambda state: writes.register(state, new, "BACKWARD")


def test_reads_only_below_the_high_watermark() -> None:
    partition = MemoryPartition(leader=False)
    partition.add(SchemaRecord("s", 1, 1, USER))
    partition.add(SchemaRecord("t", 1, 2, '"int"'))
    partition.hw = 1
    svc = service(partition, ManualClock())
    assert svc.catch_up() == 1 and svc.state.subject_names() == ["s"]
    partition.hw = 2
    assert svc.catch_up() == 1 and svc.state.subject_names() == ["s", "t"]
    assert svc.position == 2


async def test_the_writer_replays_to_the_end_before_handing_out_an_id() -> None:
    partition = MemoryPartition()
    partition.add(SchemaRecord("old", 1, 41, '"string"'))  # a predecessor's, replicated
    partition.hw = partition.end
    svc = service(partition, ManualClock())
    assert await svc.write(register(USER)) == 42
    assert svc.state.versions("s") == [1]  # applied before the answer
    assert svc.position == partition.end == 2


async def test_a_writer_that_cannot_replay_to_the_end_answers_50002() -> None:
    partition = MemoryPartition()
    partition.add(SchemaRecord("old", 1, 1, '"string"'))  # above the HW: not yet readable
    clock = ManualClock()
    with pytest.raises(RegistryError) as timed_out:
        await service(partition, clock).write(register(USER))
    assert timed_out.value.error_code == 50002
    assert clock.monotonic_ms() >= 1000


async def test_only_the_leader_writes() -> None:
    svc = service(MemoryPartition(leader=False), ManualClock())
    with pytest.raises(RegistryError) as refused:
        await svc.write(register(USER))
    assert refused.value.error_code == 50004


async def test_a_failed_append_is_50001_and_applies_nothing() -> None:
    partition = MemoryPartition()
    svc = service(partition, ManualClock())
    svc.is_writer = lambda: True  # type: ignore[method-assign]  # it was, when it checked
    partition.leader = False  # and lost the leadership before appending
    with pytest.raises(RegistryError) as failed:
        await svc.write(register(USER))
    assert failed.value.error_code == 50001 and svc.state.subject_names() == []


def test_a_batch_that_does_not_decode_is_skipped() -> None:
    partition = MemoryPartition(leader=False)
    partition.add(SchemaRecord("a", 1, 1, USER))
    partition.add(SchemaRecord("b", 1, 2, USER))
    base, batch = partition.batches[1]
    partition.batches[1] = (base, batch[:-1] + bytes([batch[-1] ^ 0xFF]))  # its CRC fails
    partition.add(SchemaRecord("c", 1, 3, USER))
    partition.hw = partition.end
    svc = service(partition, ManualClock())
    assert svc.catch_up() == 2
    assert svc.state.subject_names() == ["a", "c"] and svc.position == 3


def test_a_topic_made_again_is_replayed_from_the_start() -> None:
    partition = MemoryPartition(leader=False)
    partition.add(SchemaRecord("s", 1, 1, USER), SchemaRecord("s", 2, 2, '"int"'))
    partition.hw = 2
    svc = service(partition, ManualClock())
    svc.catch_up()
    fresh = MemoryPartition(leader=False)
    fresh.add(SchemaRecord("t", 1, 1, USER))
    fresh.hw = 1
    svc.log = fresh
    svc.catch_up()
    assert svc.state.subject_names() == ["t"] and svc.state.max_id == 1


def test_a_forwarded_writes_records_stay_on_top_until_the_replay_passes_them() -> None:
    """`apply_ahead`: the writer's records are seen at once; a replay step that brings in an
    earlier record of the same key does not hide them; once past them, they are dropped."""
    partition = MemoryPartition(leader=False)
    partition.add(SchemaRecord("s", 1, 1, USER))  # registered: offset 0
    partition.add(SchemaRecord("s", 1, 1, USER, deleted=True))  # the forwarded soft delete
    svc = service(partition, ManualClock())
    svc.apply_ahead([SchemaRecord("s", 1, 1, USER, deleted=True)], 2)
    assert svc.state.subject_names() == []  # deleted at once, nothing replayed yet
    partition.hw = 1  # the replica learns of the registration only
    assert svc.catch_up() == 1 and svc.state.subject_names() == []  # still deleted
    partition.hw = 2
    assert svc.catch_up() == 1 and svc.state.subject_names() == [] and svc.position == 2
    assert svc._ahead == []
    svc.apply_ahead([SchemaRecord("t", 1, 2, USER)], 1)  # behind the replay: not applied
    assert svc.state.subject_names(deleted=True) == ["s"]
