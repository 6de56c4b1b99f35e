"""LogConfig from/to Kafka properties, and the LogManager's loading, deletes and background."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.log.config import LONG_MAX, LogConfig
from broker.log.manager import DELETE_DIR_SUFFIX, LogManager
from protocol.clock import ManualClock
from protocol.errors import InvalidConfigError, KafkaStorageError

from .conftest import batch, read_values, slice_bytes


def test_config_from_kafka_properties() -> None:
    cfg = LogConfig.from_properties(
        {"segment.bytes": "1000", "retention.ms": "-1", "retention.bytes": "5000",
         "flush.ms": "250", "max.message.bytes": "2048", "index.interval.bytes": "0"}
    )  # fmt: skip
    assert (cfg.segment_bytes, cfg.retention_ms, cfg.retention_bytes) == (1000, None, 5000)
    assert (cfg.flush_ms, cfg.max_message_bytes, cfg.index_interval_bytes) == (250, 2048, 0)
    assert cfg.segment_ms == LogConfig().segment_ms  # untouched fields keep the defaults
    assert LogConfig.from_properties({"fsync": "always"}).flush_messages == 1
    assert LogConfig.from_properties({"fsync": "never"}, base=cfg).flush_messages is None
    assert LogConfig.from_properties({"flush.messages": str(LONG_MAX)}).flush_messages is None
    assert LogConfig.from_properties({"segment.ms": "5"}, base=cfg).segment_bytes == 1000


def test_config_round_trips_through_properties() -> None:
    cfg = LogConfig(segment_bytes=4096, flush_messages=1, retention_ms=None, retention_bytes=10)
    props = cfg.to_properties()
    assert props["retention.ms"] == "-1" and props["flush.messages"] == "1"
    assert props["flush.ms"] == str(LONG_MAX)
    assert LogConfig.from_properties(props) == cfg
    assert LogConfig.from_properties(LogConfig().to_properties()) == LogConfig()


@pytest.mark.parametrize(
    "props, key",
    [
        ({"segment.byte": "1"}, "segment.byte"),
        ({"segment.bytes": "big"}, "segment.bytes"),
        ({"segment.bytes": "0"}, "segment.bytes"),
        ({"segment.bytes": str(1 << 31)}, "segment.bytes"),
        ({"retention.ms": "-2"}, "retention.ms"),
        ({"fsync": "sometimes"}, "fsync"),
        ({"max.message.bytes": "10"}, "max.message.bytes"),
    ],
)
def test_bad_config_names_the_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        LogConfig.from_properties(props)
    assert key in str(info.value) and "\n" not in str(info.value)


def test_config_checks_direct_construction() -> None:
    with pytest.raises(InvalidConfigError):
        LogConfig(segment_bytes=-5)


def _manager(tmp_path: Path, clock: ManualClock, **fields: object) -> LogManager:
    fields.setdefault("retention_ms", None)
    return LogManager(tmp_path / "logs", LogConfig(**fields), clock)  # type: ignore[arg-type]


def test_manager_creates_reloads_and_deletes(tmp_path: Path, clock: ManualClock) -> None:
    manager = _manager(tmp_path, clock, file_delete_delay_ms=1000)
    log = manager.get_or_create("orders", 0)
    assert manager.get_or_create("orders", 0) is log
    manager.get_or_create("my-topic", 3).append_as_leader(batch([b"x"]), 0)
    log.append_as_leader(batch([b"a"]), 0)
    manager.shutdown()
    again = _manager(tmp_path, clock, file_delete_delay_ms=1000)
    again.load_all()
    assert sorted((g.topic, g.partition) for g in again.logs()) == [("my-topic", 3), ("orders", 0)]
    orders = again.get("orders", 0)
    assert orders is not None and read_values(orders) == [(0, b"a")]
    in_flight = orders.read(0, 100)
    again.delete("orders", 0)
    assert again.get("orders", 0) is None
    with pytest.raises(KafkaStorageError):
        orders.append_as_leader(batch([b"late"]), 0)  # whoever still holds it is refused
    assert not (tmp_path / "logs" / "orders-0").exists()
    assert slice_bytes(in_flight)  # still readable during file.delete.delay.ms
    assert again.purge_deleted(clock.monotonic_ms()) == 0
    clock.advance(1000)
    assert again.purge_deleted(clock.monotonic_ms()) == 1
    assert [p.name for p in (tmp_path / "logs").iterdir()] == ["my-topic-3"]
    again.shutdown()


def test_manager_removes_leftover_deleted_dirs(tmp_path: Path, clock: ManualClock) -> None:
    leftover = tmp_path / "logs" / f"gone-0.abc{DELETE_DIR_SUFFIX}"
    leftover.mkdir(parents=True)
    manager = _manager(tmp_path, clock)
    manager.load_all()
    assert not leftover.exists() and manager.logs() == []


async def test_background_applies_retention_flush_and_purges(
    tmp_path: Path, clock: ManualClock
) -> None:
    manager = _manager(tmp_path, clock)
    config = LogConfig(
        segment_bytes=300, flush_ms=1000, retention_ms=3_600_000, file_delete_delay_ms=0
    )
    log = manager.get_or_create("t", 0, config)
    for _ in range(10):
        log.append_as_leader(batch([b"v" * 50], timestamp_ms=clock.time_ms()), 0)
    clock.advance(2 * 3_600_000)
    log.append_as_leader(batch([b"new"], timestamp_ms=clock.time_ms()), 0)
    ticks = 0

    async def fake_sleep(seconds: float) -> None:
        nonlocal ticks
        ticks += 1
        clock.advance(int(seconds * 1000))
        if ticks >= 3:
            raise asyncio.CancelledError
        await asyncio.sleep(0)

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(manager.run_background(fake_sleep, check_interval_ms=1000), 30)
    assert log.log_start_offset == 10  # every old closed segment is gone
    assert log.recovery_point == log.log_end_offset == 11  # flush.ms passed
    assert not list(log.directory.glob("*.deleted"))
    manager.shutdown()
