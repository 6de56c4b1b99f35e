"""Property: for any sequence of keyed writes and tombstones, a read after cleaning returns the
latest value of every key that is not deleted, each key once below the cleaned point and in
offset order; tombstones past their delete horizon are gone; and the records at or past the
first uncleanable offset (the dirty section not yet cleaned) are unchanged, byte for byte."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.log.cleaner import plan
from broker.log.cleaner.manager import CleanerSettings, LogCleaner
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from protocol.batch import build_batch
from protocol.clock import ManualClock
from tests.unit.log.test_cleaner import T0, read_all

KEYS = [b"a", b"b", b"c", b"d", b"e", b"f"]
write = st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.binary(min_size=1, max_size=40)))
batches = st.lists(st.lists(write, min_size=1, max_size=4), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=batches, hw_cut=st.integers(0, 3), passes=st.integers(1, 3))
def test_cleaning_keeps_the_latest_live_value_of_every_key(
    batches: list[list[tuple[bytes, bytes | None]]], hw_cut: int, passes: int
) -> None:
    where = Path(tempfile.mkdtemp())
    try:
        _check(where, batches, hw_cut, passes)
    finally:
        shutil.rmtree(where)


def _check(
    where: Path, batches: list[list[tuple[bytes, bytes | None]]], hw_cut: int, passes: int
) -> None:
    clock = ManualClock(time_ms=T0)
    config = LogConfig.from_properties({
        "cleanup.policy": "compact", "segment.bytes": "300",
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000",
    })  # fmt: skip
    logs = LogManager(where, config, clock)
    log = logs.get_or_create("t", 0)
    for pairs in batches:
        log.append_as_leader(build_batch([(k, v, None, T0) for k, v in pairs]), 1)
    closed = log.segments.closed()
    hw = closed[-hw_cut].base_offset if 0 < hw_cut <= len(closed) else log.log_end_offset
    before = read_all(log)
    cleaner = LogCleaner(logs, clock, CleanerSettings(), lambda t, p: hw)
    for _ in range(passes):
        asyncio.run(cleaner.clean_once())
        clock.advance(600)  # the second or third pass is past the delete horizon
    after = read_all(log)
    log.close_unclean()

    latest: dict[bytes, bytes | None] = {}
    for _, key, value in before:
        assert key is not None
        latest[key] = value
    got: dict[bytes, bytes | None] = {}
    for _, key, value in after:
        assert key is not None
        got[key] = value
    for key, value in latest.items():
        if value is None:
            assert got.get(key) is None  # deleted: a tombstone at most
        else:
            assert got[key] == value
    offsets = [o for o, _, _ in after]
    assert offsets == sorted(set(offsets))
    first_uncleanable = min(hw, log.segments.active.base_offset)
    assert [r for r in after if r[0] >= first_uncleanable] == [
        r for r in before if r[0] >= first_uncleanable
    ]  # the uncleanable section is untouched
    cleaned = [k for o, k, _ in after if o < first_uncleanable]
    assert len(cleaned) == len(set(cleaned))  # each key at most once below it
    tombstones = [o for o, _, v in after if v is None and o < first_uncleanable]
    if passes == 3 and cleaner.checkpointed("t", 0) is not None:
        assert not tombstones  # the third pass came after every delete horizon: gone
    end = cleaner.checkpointed("t", 0)
    if passes == 1 and end is not None:  # the real pass is the specification's
        spec = plan.one_pass([plan.Rec(*r) for r in before], 0, end, T0, 1000)
        assert [(r.offset, r.key, r.value) for r in spec] == after
    if passes == 1:  # the first pass keeps every key's latest tombstone (delete.retention.ms)
        below = {k for o, k, _ in before if o < first_uncleanable}
        kept = {k for o, k, v in after if o < first_uncleanable}
        assert below <= kept or not cleaner.checkpointed("t", 0)
    assert not [p for p in os.listdir(where / "t-0") if p.endswith((".cleaned", ".swap"))]
