"""odradek chaos compares a compacted topic's replicas by the latest value of each key they
serve, not by their files: two copies of one log, one cleaned and one not, differ byte for byte
but serve the same latest values."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.log.cleaner.manager import CleanerSettings, LogCleaner
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from deploy.chaos.runner import replica_digest
from protocol.batch import build_batch
from protocol.clock import ManualClock

T0 = 1_700_000_000_000
CONFIG = {"cleanup.policy": "compact", "segment.bytes": "400", "min.cleanable.dirty.ratio": "0.01"}


def _replica(where: Path, clean: bool) -> tuple[Path, int]:
    clock = ManualClock(time_ms=T0)
    logs = LogManager(where, LogConfig.from_properties(CONFIG), clock)
    log = logs.get_or_create("t", 0)
    for i in range(40):
        log.append_as_leader(build_batch([(b"k%d" % (i % 5), b"v%d" % i, None, T0)]), 1)
    hw = log.log_end_offset
    if clean:
        cleaner = LogCleaner(logs, clock, CleanerSettings(), lambda t, p: hw)
        assert asyncio.run(cleaner.clean_once())
    log.close()
    return where / "t-0", hw


def test_a_cleaned_and_an_uncleaned_replica_serve_the_same(tmp_path: Path) -> None:
    raw, hw = _replica(tmp_path / "a", clean=False)
    cleaned, _ = _replica(tmp_path / "b", clean=True)
    assert replica_digest(raw, hw) != replica_digest(cleaned, hw)  # the files differ
    assert replica_digest(raw, hw, compacted=True) == replica_digest(cleaned, hw, compacted=True)
    other, _ = _replica(tmp_path / "c", clean=False)
    sorted(other.glob("*.log"))[-1].write_bytes(b"")  # lost its newest records
    assert replica_digest(other, hw, compacted=True) != replica_digest(raw, hw, compacted=True)
