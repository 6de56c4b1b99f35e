"""Helpers for the partition-log tests: batches, opening logs on a manual clock, reading back."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.reads import ReadResult
from protocol.batch import build_batch, decode_all, iter_batches
from protocol.clock import ManualClock

T0 = 1_700_000_000_000


def batch(
    values: list[bytes], timestamp_ms: int = T0, timestamps: list[int] | None = None
) -> bytes:
    """An unstamped batch of key-less records."""
    stamps = timestamps or [timestamp_ms] * len(values)
    return build_batch([(None, v, None, ts) for v, ts in zip(values, stamps, strict=True)])


def slice_bytes(result: ReadResult) -> bytes:
    assert result.slice is not None
    data = os.pread(result.slice.fd, result.slice.length, result.slice.position)
    assert len(data) == result.slice.length
    return data


def read_values(log: Log, offset: int | None = None) -> list[tuple[int, bytes | None]]:
    """Every (offset, value) from `offset` (default: log start) to the end, via read()."""
    out: list[tuple[int, bytes | None]] = []
    pos = log.log_start_offset if offset is None else offset
    for _ in range(100_000):
        if pos >= log.log_end_offset:
            break
        result = log.read(pos, 1 << 20)
        data = slice_bytes(result)
        assert sum(h.size for _, h in iter_batches(data)) == len(data)  # whole, CRC-valid
        out.extend((r.offset, r.value) for r in decode_all(data) if r.offset >= pos)
        assert result.next_offset > pos
        pos = result.next_offset
    return out


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(time_ms=T0)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


OpenLog = Callable[..., Log]


@pytest.fixture
def open_log(log_dir: Path, clock: ManualClock) -> Iterator[OpenLog]:
    """open_log(**config fields) -> Log in log_dir; every log opened is closed at the end."""
    opened: list[Log] = []

    def _open(directory: Path | None = None, **fields: object) -> Log:
        fields.setdefault("retention_ms", None)
        log = Log.open(directory or log_dir, LogConfig(**fields), clock)  # type: ignore[arg-type]
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.close_unclean()
